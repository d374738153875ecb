"""The batch API: fixed-priority response-time analysis of many one-core
task sets in one call, numpy arrays in and out.

The sets are analyzed in Rust by the code ``TaskSet.analyze`` runs
(tinct-core's ``rta::response_times`` with no cache terms: Joseph and
Pandya's exact test), with the GIL released and the sets spread over a
rayon thread pool, so Python overhead does not dominate a study of
millions of sets.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from . import _tinct
from .errors import BadInput

__all__ = ["BatchResult", "analyze_batch"]


class BatchResult(NamedTuple):
    """What :func:`analyze_batch` returns.

    Attributes:
        schedulable: ``bool[sets]``, every task of the set meets its deadline.
        response_time: ``uint64[sets, tasks]``, each task's worst-case
            response time in ns, **0 where the task misses its deadline**
            (the iteration passed D; no valid bound exists).
    """

    schedulable: np.ndarray
    response_time: np.ndarray


def _nanoseconds(name: str, values: object, shape: Optional[tuple] = None) -> np.ndarray:
    """``values`` as a C-contiguous uint64 array of shape (sets, tasks),
    refusing what would not be exact: floats, negative numbers, booleans."""
    array = np.asarray(values)
    if array.ndim != 2:
        raise BadInput(
            f"{name}: expected an array of shape (sets, tasks), found {array.ndim} dimension(s)",
            field=name,
        )
    if shape is not None and array.shape != shape:
        raise BadInput(
            f"{name}: expected the shape of wcet {shape}, found {array.shape}", field=name
        )
    if array.dtype.kind not in "iu":
        raise BadInput(
            f"{name}: expected whole nanoseconds (an integer array), found dtype {array.dtype}",
            field=name,
        )
    if array.dtype.kind == "i" and array.size and array.min() < 0:
        raise BadInput(
            f"{name}: expected values of at least 0, found {int(array.min())}", field=name
        )
    return np.ascontiguousarray(array, dtype=np.uint64)


def analyze_batch(
    wcet: object,
    period: object,
    deadline: Optional[object] = None,
    priority: Optional[object] = None,
    *,
    threads: Optional[int] = None,
) -> BatchResult:
    """Analyzes ``sets`` independent one-core task sets at once.

    Args:
        wcet: C, integer ns, shape ``(sets, tasks)``; above zero.
        period: T, integer ns, same shape; above zero.
        deadline: D, integer ns, same shape, ``0 < D <= T`` (constrained
            deadlines); default: the periods. ``C > D`` is allowed (the task
            misses its deadline).
        priority: optional, same shape, smaller is higher (1 the highest);
            ties are broken by column order. Default: deadline-monotonic
            with ties by column order (``TaskSet.ranks``).
        threads: worker threads (default: every core).

    Returns:
        :class:`BatchResult` with ``schedulable`` (``bool[sets]``) and
        ``response_time`` (``uint64[sets, tasks]``, 0 for a missed deadline).

    Raises:
        BadInput: an array of another shape or dtype, a float or negative
            value, or a value the analysis refuses, named by set and task.

    >>> import numpy as np, tinct
    >>> r = tinct.analyze_batch(np.array([[1, 2]]), np.array([[4, 6]]))
    >>> r.schedulable.tolist(), r.response_time.tolist()
    ([True], [[1, 3]])
    """
    c = _nanoseconds("wcet", wcet)
    t = _nanoseconds("period", period, c.shape)
    d = t if deadline is None else _nanoseconds("deadline", deadline, c.shape)
    p = None if priority is None else _nanoseconds("priority", priority, c.shape)
    schedulable, response_time = _tinct.analyze_batch_arrays(c, t, d, p, threads)
    return BatchResult(schedulable, response_time)
