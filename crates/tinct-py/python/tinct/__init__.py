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

from . import errors, experiment, reports
from ._tinct import Plan, TaskSet, __version__, line_chart_svg
from ._tinct import parse_duration_ns as parse_duration
from ._tinct import parse_size_bytes as parse_size
from .batch import BatchResult, analyze_batch
from .errors import BadInput, Failed, Stopped, TinctError

__all__ = [
    "TaskSet",
    "Plan",
    "analyze_batch",
    "BatchResult",
    "parse_duration",
    "parse_size",
    "line_chart_svg",
    "experiment",
    "errors",
    "reports",
    "TinctError",
    "BadInput",
    "Failed",
    "Stopped",
    "__version__",
]
