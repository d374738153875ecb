"""The shapes of the dicts tinct returns, for type checkers.

They are the JSON the ``tinct`` command prints (``analyze --json``,
``plan --json``, ``experiment``), parsed by Python's ``json`` module: times
in integer nanoseconds (``*_ns``), sizes in bytes. Fields the Rust core adds
later appear in the dicts at once; these declarations list the fields known
to this version.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, TypedDict

__all__ = [
    "ResponseTime",
    "TaskReport",
    "Overload",
    "EdfReport",
    "PartitionUse",
    "CoreReport",
    "CrossCoreShare",
    "ExplicitBelowDerived",
    "InputWarning",
    "Overheads",
    "ChainBound",
    "Analysis",
    "PlatformOverheads",
    "MissingOverhead",
    "OverheadsSource",
    "TaskSetAnalysis",
    "PlanReport",
    "Point",
    "Params",
    "ShardFile",
    "StudyResult",
    "Kim2013Row",
    "Kim2013Report",
    "RunSummary",
]


class ResponseTime(TypedDict):
    """Eq. (2) of one task at its last iterate, term by term."""

    wcrt_ns: Optional[int]
    iterations: int
    wcet_ns: int
    warmup_ns: int
    interference_ns: int
    hp_warmup_ns: int
    crpd_ns: int
    blocking_ns: int
    jitter_ns: int
    overhead_ns: int
    interrupts_ns: int


class TaskReport(TypedDict):
    """The analysis of one task (``analysis["tasks"][i]`` is task i of the file)."""

    name: str
    core: int
    priority: int
    partitions: List[int]
    partition_count: int
    period_ns: int
    deadline_ns: int
    wcet_ns: int
    warmup_ns: int
    crpd_caused_ns: int
    wcrt_ns: Optional[int]
    wcrt_nocint_ns: Optional[int]
    breakdown: ResponseTime
    iterations_nocint: int
    schedulable: bool
    schedulable_nocint: bool
    notes: List[str]
    trigger: str
    jitter_ns: int
    jitter_inherited_ns: int
    blocking_ns: int
    blocking_source: str
    overhead_ns: int
    policy: str
    """``"fifo"`` or ``"deadline"`` (SCHED_DEADLINE)."""
    runtime_ns: Optional[int]
    """A SCHED_DEADLINE task's runtime Q (the file's or the derived one)."""
    kernel_deadline_ns: Optional[int]
    """A SCHED_DEADLINE task's kernel deadline D − J."""


class Overload(TypedDict):
    """The shortest interval whose demand exceeds its length (EDF)."""

    interval_ns: int
    demand_ns: int


class EdfReport(TypedDict):
    """The EDF analysis of one core's SCHED_DEADLINE tasks."""

    tasks: List[str]
    task_indices: List[int]
    utilization: float
    schedulable: bool
    horizon_ns: Optional[int]
    overload: Optional[Overload]
    utilization_above_one: bool
    reasons: List[str]


class PartitionUse(TypedDict):
    """Eq. (3) for one partition."""

    partition: int
    used_bytes: float
    capacity_bytes: float
    tasks: List[str]
    feasible: bool


class CoreReport(TypedDict):
    """The analysis of one core: Eq. (1), Eq. (3), the verdict."""

    core: int
    tasks: List[str]
    task_indices: List[int]
    partitions: List[int]
    utilization: float
    utilization_nocint: float
    utilization_bound: float
    utilization_test: bool
    memory_feasible: bool
    memory: List[PartitionUse]
    schedulable: bool
    reasons: List[str]
    edf: Optional[EdfReport]
    """The core's SCHED_DEADLINE tasks under EDF, if it has any."""


class CrossCoreShare(TypedDict):
    """A partition used on several cores."""

    partition: int
    cores: List[int]


class ExplicitBelowDerived(TypedDict):
    """An explicit ``blocking`` below the B_i derived from the resources."""

    explicit_ns: int
    derived_ns: Optional[int]


class InputWarning(TypedDict):
    """An input the analysis did not use as written, and why."""

    task_index: int
    line: Optional[int]
    field: str
    message: str
    blocking: Optional[ExplicitBelowDerived]


class Overheads(TypedDict):
    """The platform overheads the analysis charged (none: all zero)."""

    context_switch_ns: int
    release_latency_ns: int
    tick_ns: int
    tick_period_ns: Optional[int]


class ChainBound(TypedDict):
    """The end-to-end latency bound of one producer-consumer chain."""

    tasks: List[str]
    task_indices: List[int]
    bound_ns: Optional[int]
    bound_nocint_ns: Optional[int]
    sampling_hops: int


class Analysis(TypedDict):
    """``Plan.analysis``: what ``tinct analyze --json`` prints (without the
    CLI's ``refill_source`` and ``overheads_source``; ``TaskSet.analyze()``
    adds the latter: ``TaskSetAnalysis``)."""

    schedulable: bool
    refill_ns: int
    tasks: List[TaskReport]
    cores: List[CoreReport]
    shared_across_cores: List[CrossCoreShare]
    reasons: List[str]
    warnings: List[InputWarning]
    overheads: Overheads
    chains: List[ChainBound]
    holistic_rounds: int


class PlatformOverheads(TypedDict):
    """The overheads of an ``OverheadsSource``, as the task-set format
    names them (``[platform] overheads``), in nanoseconds."""

    context_switch: int
    release_latency: int
    tick: int
    tick_period: Optional[int]


class MissingOverhead(TypedDict):
    """An overhead the source does not give: not charged."""

    name: str
    why: str


# The overheads ``TaskSet.analyze`` charged and where they came from
# (``overheads_source`` of ``tinct analyze --json``). Functional syntax:
# ``from`` is a Python keyword.
OverheadsSource = TypedDict(
    "OverheadsSource",
    {"overheads": PlatformOverheads, "from": str, "missing": List[MissingOverhead]},
)


class TaskSetAnalysis(Analysis):
    """``TaskSet.analyze(overheads, calibration)``: the analysis and where
    its overheads came from, as ``tinct analyze --json`` prints them
    (without the CLI's ``refill_source``)."""

    overheads_source: OverheadsSource


class PlanReport(TypedDict):
    """``Plan.report``: what ``tinct plan --json`` prints about the plan
    (without the CLI's ``file``, ``output`` and ``refill_source``)."""

    algorithm: str
    schedulable: bool
    budget: int
    partitions_used: int
    partitions_needed: int
    memory_efficiency: float
    total_utilization: float
    exact: bool
    nodes: int
    stopped: bool
    cores: List[Dict[str, object]]
    unplaced: List[Dict[str, object]]
    analysis_error: Optional[str]


class Point(TypedDict):
    """Counts at one utilization point of a random study."""

    utilization: float
    sets: int
    not_generated: int
    schedulable: Dict[str, int]
    budget_hit: int


class Params(TypedDict):
    """A random study's parameters (``params.json``)."""

    generator: Dict[str, object]
    utilizations: List[float]
    sets_per_point: int
    seed: int
    node_budget: Optional[int]
    algorithms: List[str]
    tinct_version: str


class ShardFile(TypedDict):
    """One shard's counts (``shard-I-of-N.json``)."""

    params: Params
    shard: int
    shards: int
    points: List[Point]


class StudyResult(TypedDict):
    """A whole random study: merged shards or one run."""

    params: Params
    points: List[Point]


class Kim2013Row(TypedDict):
    """One algorithm in one setting of kim2013 Figures 11-13."""

    tasks: int
    memory_mib: int
    algorithm: str
    partitions_needed: Optional[int]
    partitions_percent: Optional[float]
    memory_efficiency_percent: Optional[float]
    utilization_percent: Optional[float]
    exact: bool


class Kim2013Report(TypedDict):
    """``tinct.experiment.kim2013()``: ``tinct experiment kim2013 --json``."""

    cores: int
    partitions: int
    refill_ns: int
    rows: List[Kim2013Row]
    #: Figure 10's utilizations and verdict, or ``{"unavailable": reason}``.
    figure10: Dict[str, object]
    comparisons: List[Dict[str, object]]
    facts: List[Tuple[str, str]]
    complete: bool


class RunSummary(TypedDict):
    """``summary.json`` of a ``tinct run`` output directory (top-level keys;
    the nested records as the JSON has them)."""

    source: str
    scheduling: str
    realtime: bool
    duration_ns: int
    observed_ns: int
    stop: object
    stop_description: str
    memory_locked: bool
    rt_throttling: str
    watchdog_factor: float
    watchdog: str
    notes: List[str]
    # Coloured pages on another frame after the run than when placed, and
    # pages no longer present (swapped out or unmapped); None: no coloured
    # working set was checked.
    colored_pages_moved: Optional[int]
    colored_pages_absent: Optional[int]
    tasks: List[Dict[str, object]]
    bound_exceeded: List[str]
    misses: int
    balanced: bool
    causes: Dict[str, int]
    unexplained: int
    colouring: object
    sentinel: Optional[Dict[str, object]]
    isolation: Dict[str, object]


class DoctorReport(TypedDict, total=False):
    """``tinct doctor --json`` (top-level keys; ``color_probe`` only when
    the probe ran: its report, or ``{"error": ...}``)."""

    root: str
    live: bool
    findings: List[Dict[str, object]]
    caches: List[Dict[str, object]]
    llc_colors: Optional[Dict[str, object]]
    backend: object
    facts: Dict[str, object]
    color_probe: Dict[str, object]
