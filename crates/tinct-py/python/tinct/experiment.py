"""Allocation studies, as ``tinct experiment`` runs them.

* The random study: for every utilization point, ``sets`` random task sets
  are allocated by BFD, WFD and CATA; the result counts the sets each
  schedules. Set k of point p is drawn from ChaCha8 with the seed on stream
  p·sets + k, so any shard of the study can be computed anywhere and
  :func:`merge` sums the shards into exactly what one run computes
  (:mod:`tinct.dask` runs one shard per Dask task).
* :func:`kim2013`: the setting of kim2013 Figures 11-13.

Results are dicts with the fields of the CLI's files (``params.json``,
``shard-I-of-N.json``, ``tinct experiment kim2013 --json``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _tinct
from ._tinct import TaskSet, random_params
from .reports import Kim2013Report, Params, ShardFile, StudyResult

__all__ = [
    "random_params",
    "random_shard",
    "random_study",
    "merge",
    "write_results",
    "write_shard",
    "kim2013",
    "random_task_set",
]

def random_shard(
    params: Params,
    shard: Tuple[int, int] = (1, 1),
    *,
    threads: Optional[int] = None,
    timeout: Optional[float] = None,
) -> ShardFile:
    """Computes shard ``I/N`` of the random study (its work items I−1 modulo N).

    Returns the shard file ``tinct experiment random --shard I/N`` writes,
    as a dict: ``params``, ``shard``, ``shards``, ``points``. The sets run on
    ``threads`` threads (default: every core) with the GIL released.

    Raises:
        Stopped: ``timeout`` (seconds) passed; ``partial`` holds the sets done.
        BadInput: a shard outside 1 ≤ I ≤ N or params tinct cannot read.
    """
    index, count = shard
    return _tinct.random_shard(params, index, count, threads, timeout)


def random_study(
    params: Params,
    *,
    threads: Optional[int] = None,
    timeout: Optional[float] = None,
) -> StudyResult:
    """The whole random study in this process: ``{"params", "points"}``."""
    whole = random_shard(params, (1, 1), threads=threads, timeout=timeout)
    return {"params": whole["params"], "points": whole["points"]}


def merge(shards: Sequence[ShardFile]) -> StudyResult:
    """Sums shard dicts (from :func:`random_shard` or shard files) into
    ``{"params", "points"}``: exactly what one unsharded run computes.

    Raises:
        BadInput: shards of different studies, a shard twice or missing
            (named by position, ``shards[i]``).
    """
    return _tinct.merge_shards(list(shards))


def write_results(out: Union[str, "os.PathLike[str]"], result: StudyResult) -> None:
    """Writes ``params.json``, ``results.csv`` and ``schedulability.svg`` of a
    study result (``{"params", "points"}``) into ``out`` (created): the bytes
    ``tinct experiment random`` writes."""
    _tinct.write_results(os.fspath(out), result["params"], result["points"])


def write_shard(out: Union[str, "os.PathLike[str]"], shard: ShardFile) -> Path:
    """Writes ``shard-I-of-N.json`` into ``out`` (created) and returns its path."""
    return Path(_tinct.write_shard(os.fspath(out), shard))


def kim2013(
    base: Optional[TaskSet] = None,
    *,
    node_budget: Optional[int] = None,
    timeout: Optional[float] = None,
) -> Kim2013Report:
    """kim2013 Section IV-E, Figures 11-13.

    Table I (``base``, default the shipped examples/kim2013.toml) duplicated
    to n = 8, 12, 16 tasks at M_total = 1 and 2 GiB; BFD, WFD and CATA side
    by side. Returns what ``tinct experiment kim2013 --json`` prints:
    ``rows`` (per setting and algorithm: ``partitions_needed`` and
    ``partitions_percent`` for Figure 11, ``memory_efficiency_percent`` for
    Figure 12, ``utilization_percent`` for Figure 13), ``comparisons``
    against the paper, ``facts``. Exhaustive unless ``node_budget`` is given.

    Raises:
        Stopped: ``timeout`` passed; ``partial`` holds the rows done.
    """
    return _tinct.kim2013_study(base, node_budget, timeout)


def random_task_set(
    utilization: float,
    *,
    seed: int = 1,
    stream: int = 0,
    generator: Optional[Dict[str, Any]] = None,
) -> Optional[TaskSet]:
    """Random task set number ``stream`` of a study seeded with ``seed``.

    Total utilization ``utilization`` by UUniFast-Discard, log-uniform
    periods, random C^p curves (tinct-core's ``generate``); ``generator`` is
    the ``generator`` dict of :func:`random_params` (default: its defaults).
    Returns ``None`` when UUniFast-Discard gives up (e.g. utilization > n).
    Set k of point p of a study is ``stream = p * sets + k``.
    """
    return _tinct.random_task_set_for(utilization, seed, stream, generator)
