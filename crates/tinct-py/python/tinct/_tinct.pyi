"""Type stubs of the extension module ``tinct._tinct`` (the engine under the
``tinct`` package; use the package's names).

Ints are read through ``__index__`` and floats as ``float()`` reads them
(numpy's numbers and bools included); an argument of another type, text
holding a lone surrogate or a number out of range raises ``BadInput``
naming the argument, never TypeError, OverflowError or
UnicodeEncodeError."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from .reports import (
    Analysis,
    Kim2013Report,
    Params,
    PlanReport,
    ShardFile,
    StudyResult,
    TaskSetAnalysis,
)

__version__: str

_Path = Union[str, PathLike[str]]

class TaskSet:
    """A validated task set: the platform {N_C, N_P, M_total, Δ} and its tasks
    {C^p, T, D, M, priority, core, S(i)} in file order. Equal when platforms
    and tasks are equal."""

    @staticmethod
    def load(path: _Path) -> TaskSet:
        """Reads, parses and validates a task-set file (TOML, or JSON by
        extension). Raises BadInput naming file, line and field."""
    @staticmethod
    def parse(text: str, syntax: str = "toml", file: str = "<string>") -> TaskSet:
        """Parses and validates task-set text ("toml" or "json")."""
    @staticmethod
    def from_dict(value: Dict[str, Any]) -> TaskSet:
        """A task set from a dict in the file schema (docs/FORMAT.md)."""
    def to_toml(self, header: Optional[Sequence[str]] = None) -> str:
        """The set as a TOML task-set file; ``header`` lines become comments."""
    def to_json(self) -> str:
        """The set as a JSON task-set file."""
    def to_dict(self) -> Dict[str, Any]:
        """The set as a dict in the file schema (``from_dict`` reads it back)."""
    def save(self, path: _Path, header: Optional[Sequence[str]] = None) -> None:
        """Writes the set (JSON if the name ends in .json, else TOML)."""
    @property
    def file(self) -> str:
        """Where the set was read from ("<string>", "<dict>" or a path)."""
    @property
    def platform(self) -> Dict[str, int]:
        """cores, partitions, memory (bytes), refill (Δ, ns)."""
    @property
    def tasks(self) -> List[Dict[str, Any]]:
        """The tasks as the model holds them (ns, bytes, wcet as {p: C^p})."""
    @property
    def names(self) -> List[str]:
        """Task names in file order."""
    def ranks(self) -> List[int]:
        """Unique priority ranks 1..=n (1 the highest) in file order."""
    def replicate(self, copies: int) -> TaskSet:
        """``copies`` copies of every task, cores and partitions dropped."""
    def analyze(
        self,
        overheads: Optional[_Path] = None,
        calibration: Optional[_Path] = None,
    ) -> TaskSetAnalysis:
        """kim2013 Eq. (1)-(3) and classic RTA: ``tinct analyze --json``;
        ``overheads`` and ``calibration`` are its ``--overheads
        none|measured|FILE`` and ``--calibration FILE``."""
    def analysis_text(
        self,
        overheads: Optional[_Path] = None,
        calibration: Optional[_Path] = None,
    ) -> str:
        """The same analysis as the text ``tinct analyze`` prints (tables,
        Eq. (1) and (3), notes, the verdict)."""
    def plan(
        self,
        algorithm: str = "cata",
        partitions: Optional[int] = None,
        node_budget: Optional[int] = None,
        exact: bool = False,
        keep_free: bool = False,
        timeout: Optional[float] = None,
        policy: Optional[str] = None,
    ) -> Plan:
        """Cores, priorities and partitions by CATA, BFD or WFD, analyzed.
        ``node_budget``: search nodes per MinCacheAlloc call (default
        2 000 000; 0 searches exhaustively, as ``exact=True``).
        ``policy="deadline"``: every task a SCHED_DEADLINE reservation,
        planned under EDF (``tinct plan --policy deadline``)."""
    def __len__(self) -> int: ...

class Plan:
    """A plan: the allocation, the planned task set and its analysis."""

    @property
    def report(self) -> PlanReport:
        """What ``tinct plan --json`` prints about the plan."""
    @property
    def schedulable(self) -> bool:
        """Every task placed and the planned set analyzes as schedulable."""
    @property
    def planned(self) -> Optional[TaskSet]:
        """The task set with core, priority and partitions filled in."""
    @property
    def analysis(self) -> Optional[Analysis]:
        """The analysis of the planned set when every task was placed."""

def analyze_batch_arrays(
    wcet: npt.NDArray[np.uint64],
    period: npt.NDArray[np.uint64],
    deadline: npt.NDArray[np.uint64],
    priority: Optional[npt.NDArray[np.uint64]] = None,
    threads: Optional[int] = None,
) -> Tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint64]]:
    """Low-level batch RTA; use ``tinct.analyze_batch``."""

def random_params(
    *,
    tasks: Optional[int] = None,
    cores: Optional[int] = None,
    partitions: Optional[int] = None,
    memory: Union[str, int, None] = None,
    refill: Union[str, int, None] = None,
    period_min: Union[str, int, None] = None,
    period_max: Union[str, int, None] = None,
    task_memory_min: Union[str, int, None] = None,
    task_memory_max: Union[str, int, None] = None,
    sensitivity_max: Optional[float] = None,
    util_min: float = 2.0,
    util_max: float = 5.0,
    util_step: float = 0.25,
    sets: int = 100,
    seed: int = 1,
    node_budget: Optional[int] = None,
) -> Params:
    """The parameters of a random study, checked: the options and defaults
    of ``tinct experiment random``."""
def random_shard(
    params: Params,
    index: int = 1,
    count: int = 1,
    threads: Optional[int] = None,
    timeout: Optional[float] = None,
) -> ShardFile: ...
def merge_shards(shards: Sequence[ShardFile]) -> StudyResult: ...
def write_results(out: _Path, params: Params, points: Sequence[Any]) -> None: ...
def write_shard(out: _Path, shard: ShardFile) -> str: ...
def kim2013_study(
    base: Optional[TaskSet] = None,
    node_budget: Optional[int] = None,
    timeout: Optional[float] = None,
) -> Kim2013Report: ...
def random_task_set_for(
    utilization: float,
    seed: int = 1,
    stream: int = 0,
    generator: Optional[Dict[str, Any]] = None,
) -> Optional[TaskSet]: ...
def parse_duration_ns(value: Union[str, int]) -> int: ...
def parse_size_bytes(value: Union[str, int]) -> int: ...
def line_chart_svg(
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[Tuple[str, Sequence[Tuple[float, float]]]],
    x_range: Optional[Tuple[float, float]] = None,
    y_range: Optional[Tuple[float, float]] = None,
) -> str:
    """tinct's own SVG line chart (the renderer of every tinct plot)."""
def doctor_report(
    root: Optional[str] = None, probe_colors: bool = False, color_bits: Optional[str] = None
) -> Dict[str, Any]:
    """``tinct doctor --json`` as Python objects."""
def doctor_report_text(
    root: Optional[str] = None, probe_colors: bool = False, color_bits: Optional[str] = None
) -> str:
    """``tinct doctor``'s text."""
def resolve_color_bits(color_bits: Optional[str] = None) -> Dict[str, Any]:
    """The colour bits in force and their source."""

class Jobs:
    """The jobs tinct releases to this program (the ``futex`` protocol):
    each turn of ``for job in jobs:`` ends the previous job and waits for
    the next release; the loop ends when tinct asks the program to exit."""

    def __iter__(self) -> "Jobs": ...
    def __next__(self) -> int: ...
    def done(self) -> bool:
        """Ends the current job now; False if none was open."""

def jobs() -> Jobs:
    """This program's jobs, from the page tinct named in ``TINCT_JOB_FD``
    (a task body with ``protocol = "futex"``); OSError otherwise."""
