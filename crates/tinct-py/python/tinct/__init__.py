"""tinct for Python: cache-aware real-time schedulability analysis.

The task model of kim2013 (cores, cache partitions, C^p tables), its
analyses (Eq. 1-3 with per-task breakdowns, classic RTA beside it),
allocation (CATA, BFD, WFD), the task-set generators and the studies
(random, kim2013; sharded, on Dask), over the Rust core the ``tinct``
command uses: the same numbers, the same messages.

>>> import tinct
>>> s = tinct.TaskSet.from_dict({
...     "platform": {"cores": 1, "partitions": 8, "memory": "64MiB", "refill": "45.3us"},
...     "task": [{"name": "a", "period": "10ms", "memory": "1MiB", "wcet": "2ms"}],
... })
>>> s.analyze()["schedulable"]
True
"""

from __future__ import annotations

from . import _tinct, errors, experiment, reports
from ._tinct import Jobs, Plan, TaskSet, __version__, jobs, line_chart_svg
from ._tinct import parse_duration_ns as parse_duration
from ._tinct import parse_size_bytes as parse_size
from .batch import BatchResult, analyze_batch
from .errors import BadInput, Failed, Stopped, TinctError
from .reports import DoctorReport


def doctor(
    root: str | None = None, probe_colors: bool = False, color_bits: str | None = None
) -> DoctorReport:
    """What this machine offers for cache-aware real-time work: ``tinct
    doctor --json`` as a dict (findings with their fixes, the caches with
    their page colours, the partitioning backend, every fact read).

    ``root`` reads a captured sysfs/procfs tree instead of this machine
    (live probes are then "not probed"); ``probe_colors`` also measures
    whether page colouring partitions the caches here (a few seconds, needs
    root; not with ``root``). ``color_bits`` (e.g. ``"12-16"``) are
    candidate colour bits of the last-level cache, as ``--color-bits``: the
    probe tests them. A ``root`` that is not a directory, or malformed bits,
    raise ``BadInput``.
    """
    return _tinct.doctor_report(root, probe_colors, color_bits)


def doctor_text(
    root: str | None = None, probe_colors: bool = False, color_bits: str | None = None
) -> str:
    """``tinct doctor``'s tables, byte for byte (see :func:`doctor`)."""
    return _tinct.doctor_report_text(root, probe_colors, color_bits)


def color_bits(given: str | None = None) -> dict:
    """The page-colour bits every colouring command uses on this machine,
    and where they come from: ``given`` (as ``--color-bits``), else
    ``TINCT_COLOR_BITS``, the machine file (``tinct doctor --save``), the
    rule derived from the cache topology. A dict with ``bits``, ``colors``,
    ``source``, ``rule`` and ``description``; unknown or malformed bits
    raise ``BadInput`` naming the ways to give them.
    """
    return _tinct.resolve_color_bits(given)

__all__ = [
    "TaskSet",
    "Plan",
    "analyze_batch",
    "BatchResult",
    "parse_duration",
    "parse_size",
    "line_chart_svg",
    "jobs",
    "Jobs",
    "doctor",
    "doctor_text",
    "color_bits",
    "experiment",
    "errors",
    "reports",
    "TinctError",
    "BadInput",
    "Failed",
    "Stopped",
    "__version__",
]
