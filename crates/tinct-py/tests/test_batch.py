"""The batch API gives what TaskSet.analyze and the SchedCAT-style
reference give, set by set, and refuses what is not exact."""

from __future__ import annotations

import numpy as np
import pytest

import schedcat_rta
import throughput
import tinct


def one_core_set(wcet, period, deadline, priority=None) -> tinct.TaskSet:
    tasks = []
    for i, (c, t, d) in enumerate(zip(wcet, period, deadline)):
        task = {"name": f"t{i}", "period": f"{int(t)}ns", "deadline": f"{int(d)}ns",
                "memory": "1KiB", "wcet": f"{int(c)}ns", "core": 0}
        if priority is not None:
            task["priority"] = int(priority[i])
        tasks.append(task)
    return tinct.TaskSet.from_dict({
        "platform": {"cores": 1, "partitions": 1, "memory": "1GiB", "refill": "0ns"},
        "task": tasks,
    })


def random_arrays(seed: int, sets: int, tasks: int):
    rng = np.random.default_rng(seed)
    wcet, period = throughput.random_sets(rng, sets, tasks)
    # Shuffle the columns so the batch has to order them itself, and draw
    # constrained deadlines between C and T.
    perm = rng.permutation(tasks)
    wcet, period = wcet[:, perm], period[:, perm]
    deadline = np.maximum(wcet, (period * rng.uniform(0.5, 1.0, period.shape)).astype(np.uint64))
    deadline = np.minimum(deadline, period)
    return wcet, period, deadline


@pytest.mark.parametrize("with_priorities", [False, True])
def test_batch_equals_taskset_analyze(with_priorities):
    wcet, period, deadline = random_arrays(3, 40, 7)
    rng = np.random.default_rng(9)
    priority = None
    if with_priorities:
        # Random priorities miss more often: lighten the sets so that both
        # verdicts occur.
        priority = np.array([rng.permutation(7) + 1 for _ in range(40)])
        wcet = np.maximum(wcet // 3, 1)
    result = tinct.analyze_batch(wcet, period, deadline, priority)
    assert result.schedulable.dtype == np.bool_ and result.schedulable.shape == (40,)
    assert result.response_time.dtype == np.uint64 and result.response_time.shape == (40, 7)
    verdicts = set()
    for s in range(40):
        p = None if priority is None else priority[s]
        analysis = one_core_set(wcet[s], period[s], deadline[s], p).analyze()
        expected = [t["wcrt_ns"] or 0 for t in analysis["tasks"]]
        assert result.response_time[s].tolist() == expected, f"set {s}"
        assert bool(result.schedulable[s]) == analysis["schedulable"]
        verdicts.add(analysis["schedulable"])
    assert verdicts == {True, False}, "both verdicts must be exercised"


@pytest.mark.parametrize("tasks", [1, 5, 30])
def test_batch_equals_the_schedcat_style_reference(tasks):
    wcet, period = throughput.random_sets(np.random.default_rng(tasks), 60, tasks)
    result = tinct.analyze_batch(wcet, period)
    for s in range(60):
        ts = [schedcat_rta.Task(int(c), int(t), int(t)) for c, t in zip(wcet[s], period[s])]
        assert [int(r) or None for r in result.response_time[s]] == schedcat_rta.response_times(ts)
        assert bool(result.schedulable[s]) == schedcat_rta.is_schedulable(ts)


def test_the_reference_on_a_hand_derived_set():
    # C = (1, 2, 3), T = D = (4, 6, 12), by hand: R1 = 1; R2: 3 → 2 + ⌈3/4⌉ = 3;
    # R3: 6 → 3 + ⌈6/4⌉ + 2⌈6/6⌉ = 7 → 3 + 2 + 4 = 9 → 3 + 3 + 4 = 10 → 10.
    ts = [schedcat_rta.Task(1, 4, 4), schedcat_rta.Task(2, 6, 6), schedcat_rta.Task(3, 12, 12)]
    assert schedcat_rta.response_times(ts) == [1, 3, 10]
    r = tinct.analyze_batch([[1, 2, 3]], [[4, 6, 12]])
    assert r.response_time.tolist() == [[1, 3, 10]] and r.schedulable.tolist() == [True]
    # Jitter and blocking, as SchedCAT models them: J1 = 1 adds a job of τ1 in R3's window.
    ts = [schedcat_rta.Task(1, 4, 4, jitter=1), schedcat_rta.Task(2, 6, 6),
          schedcat_rta.Task(3, 12, 12, blocked=1)]
    # R3: own B + J + C = 4; 4 + 1 + 2 = 7 → 4 + ⌈8/4⌉ + 2⌈7/6⌉ = 10
    #     → 4 + ⌈11/4⌉ + 2⌈10/6⌉ = 11 → 4 + ⌈12/4⌉ + 2⌈11/6⌉ = 11.
    assert schedcat_rta.response_times(ts)[2] == 11


def test_thread_counts_give_identical_results():
    wcet, period, deadline = random_arrays(5, 300, 12)
    one = tinct.analyze_batch(wcet, period, deadline, threads=1)
    many = tinct.analyze_batch(wcet, period, deadline, threads=4)
    for threads in [0, -1, 1025, 2**70, 1.5]:
        with pytest.raises(tinct.BadInput, match="threads: expected a whole number from 1 to 1024"):
            tinct.analyze_batch(wcet, period, deadline, threads=threads)
    same = tinct.analyze_batch(wcet, period, deadline, threads=np.int32(2))
    assert np.array_equal(one.response_time, same.response_time)
    assert np.array_equal(one.schedulable, many.schedulable)
    assert np.array_equal(one.response_time, many.response_time)


def test_python_lists_and_signed_ints_are_accepted():
    r = tinct.analyze_batch([[3, 3]], [[5, 5]])
    assert r.schedulable.tolist() == [False] and r.response_time.tolist() == [[3, 0]]
    r = tinct.analyze_batch(np.array([[1]], dtype=np.int32), np.array([[2]], dtype=np.int64))
    assert r.response_time.tolist() == [[1]]


def test_zero_tasks_and_zero_sets():
    r = tinct.analyze_batch(np.zeros((3, 0), np.uint64), np.zeros((3, 0), np.uint64))
    assert r.schedulable.tolist() == [True, True, True] and r.response_time.shape == (3, 0)
    r = tinct.analyze_batch(np.zeros((0, 4), np.uint64), np.zeros((0, 4), np.uint64))
    assert r.schedulable.shape == (0,)


@pytest.mark.parametrize(
    "wcet, period, deadline, field",
    [
        ([[1.5]], [[4]], None, "wcet"),
        ([[1]], [[-4]], None, "period"),
        ([[True]], [[4]], None, "wcet"),
        ([1], [4], None, "wcet"),
        ([[1]], [[4, 4]], None, "period"),
        ([[0]], [[4]], None, "wcet"),
        ([[1]], [[0]], None, "period"),
        ([[1]], [[4]], [[5]], "deadline"),
        ([[1]], [[4]], [[0]], "deadline"),
    ],
)
def test_inexact_or_invalid_arrays_are_refused(wcet, period, deadline, field):
    with pytest.raises(tinct.BadInput) as caught:
        tinct.analyze_batch(wcet, period, deadline)
    assert caught.value.field == field
    assert field in str(caught.value)


def test_a_refusal_names_set_and_task():
    wcet = np.ones((4, 3), np.uint64)
    period = np.full((4, 3), 10, np.uint64)
    deadline = period.copy()
    deadline[2, 1] = 11
    with pytest.raises(tinct.BadInput) as caught:
        tinct.analyze_batch(wcet, period, deadline)
    assert "deadline[2, 1]" in str(caught.value) and "found 11" in str(caught.value)


def test_huge_values_stay_exact():
    big = 2**64 - 1
    r = tinct.analyze_batch(np.array([[big // 2, big // 2]], np.uint64), np.array([[big, big]], np.uint64))
    # R2 = C1 + C2 = 2^64 − 2 ≤ D: exact, no wrap.
    assert r.response_time.tolist() == [[big // 2, 2 * (big // 2)]]
    r = tinct.analyze_batch(np.array([[big - 1, 2]], np.uint64), np.array([[big, big]], np.uint64))
    assert r.schedulable.tolist() == [False] and r.response_time.tolist() == [[big - 1, 0]]


def test_the_gil_is_released_during_a_batch():
    # One long batch in a thread; meanwhile this thread keeps running Python.
    # Holding the GIL would stall it for the whole call: the longest gap
    # between two of its steps would be about the call's duration.
    import threading
    import time

    wcet, period = throughput.random_sets(np.random.default_rng(2), 300, 100)
    wcet, period = np.tile(wcet, (30, 1)), np.tile(period, (30, 1))
    call = {}

    def analyze():
        start = time.perf_counter()
        tinct.analyze_batch(wcet, period, threads=1)
        call["seconds"] = time.perf_counter() - start

    worker = threading.Thread(target=analyze)
    steps = [time.perf_counter()]
    worker.start()
    while worker.is_alive():
        steps.append(time.perf_counter())
    worker.join()
    longest_gap = max(b - a for a, b in zip(steps, steps[1:]))
    assert longest_gap < 0.5 * call["seconds"], (longest_gap, call["seconds"], len(steps))
