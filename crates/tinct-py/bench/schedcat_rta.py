"""A pure-Python fixed-priority response-time analysis that follows the
algorithm of SchedCAT's ``schedcat/sched/fp/rta.py`` (Brandenburg et al.;
Python 2 only, not on PyPI). Written for tinct's throughput benchmark and
cross-checks from a reading of that file: it is not SchedCAT's code.

The algorithm (Joseph and Pandya 1986, with Audsley et al.'s jitter and
blocking terms), tasks in decreasing priority order:

* own demand of task i: B_i + J_i + C_i (blocking, release jitter, WCET);
* start from t = own demand + Σ_{j<i} C_j (every higher-priority task
  released once);
* iterate t ← own demand + Σ_{j<i} ⌈(t + J_j) / T_j⌉ · C_j until t repeats
  (the response time) or passes D_i (unschedulable);
* the set is schedulable when every task is; like SchedCAT's
  ``bound_response_times``, :func:`is_schedulable` stops at the first task
  that is not.

The code has the shape of SchedCAT's, so that its cost per step is
comparable: tasks are plain objects read through attributes, and each step
sums a list of per-task demand terms, one function call per
higher-priority task. One deliberate difference: the ceiling is integer
arithmetic (``-(-a // b)``), where SchedCAT divides floats (``from
__future__ import division`` and ``math.ceil``), which is inexact above
2^53 ns (and slower).
"""

from __future__ import annotations

from typing import List, Optional, Sequence


class Task:
    """A sporadic task: integer nanoseconds; ``blocked`` and ``jitter`` as in
    SchedCAT (default 0)."""

    def __init__(self, cost: int, period: int, deadline: int, blocked: int = 0, jitter: int = 0) -> None:
        self.cost = cost
        self.period = period
        self.deadline = deadline
        self.blocked = blocked
        self.jitter = jitter
        self.response_time: Optional[int] = None


def demand(task: Task, t: int) -> int:
    """Work of a higher-priority ``task`` released in a window of length ``t``
    (its jitter lets one more job fall in): ⌈(t + J) / T⌉ · C."""
    return task.cost * -(-(t + task.jitter) // task.period)


def response_time(tasks: Sequence[Task], i: int) -> Optional[int]:
    """The response time of ``tasks[i]`` (``tasks`` in decreasing priority
    order), or ``None`` once the iteration passes its deadline."""
    task = tasks[i]
    higher = tasks[:i]
    own = task.blocked + task.jitter + task.cost
    t = own + sum(h.cost for h in higher)
    while t <= task.deadline:
        total = own + sum([demand(h, t) for h in higher])
        if total == t:
            task.response_time = t
            return t
        t = total
    return None


def response_times(tasks: Sequence[Task]) -> List[Optional[int]]:
    """Every task's response time (``None`` past the deadline)."""
    return [response_time(tasks, i) for i in range(len(tasks))]


def is_schedulable(tasks: Sequence[Task]) -> bool:
    """Whether every task meets its deadline, stopping at the first that
    does not (SchedCAT's ``bound_response_times`` on one processor)."""
    return all(response_time(tasks, i) is not None for i in range(len(tasks)))
