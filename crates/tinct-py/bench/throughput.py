"""Throughput of tinct's batch RTA from Python against a pure-Python RTA
that follows SchedCAT's algorithm (bench/schedcat_rta.py), on identical
random task sets at 10, 25, 50 and 100 tasks, side by side in one run.

    python crates/tinct-py/bench/throughput.py [--sets 200] [--repeats 5] [--json OUT]

Task sets: per set a total utilization U ~ uniform(0.6, 0.95) split by
UUniFast (Bini and Buttazzo), periods log-uniform in [10 ms, 1 s] rounded to
whole microseconds, C_i = max(1, floor(u_i · T_i)) ns, D = T; priorities
rate-monotonic (ties by position), and the tasks are handed to both sides in
that order (SchedCAT expects a sorted task system). Both sides must agree on
every verdict and every response time, or the benchmark fails.

Timed per round, interleaved: the Python RTA over every set (SchedCAT's
``is_schedulable``: stops at a set's first miss), and one ``analyze_batch``
call (computes every task) on one thread and on every core, over the same
sets repeated ``--batch-copies`` times (default 10: a batch of 2000 sets,
the API's use, so that the call's fixed cost is not what is measured).
Reported: median µs per set over the rounds, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import schedcat_rta  # noqa: E402

import tinct  # noqa: E402


def random_sets(rng: np.random.Generator, sets: int, tasks: int):
    """(C, T) uint64 arrays of shape (sets, tasks), sorted rate-monotonic."""
    total = rng.uniform(0.6, 0.95, size=sets)
    # UUniFast, vectorized over sets.
    utils = np.empty((sets, tasks))
    remaining = total.copy()
    for i in range(1, tasks):
        nxt = remaining * rng.random(sets) ** (1.0 / (tasks - i))
        utils[:, i - 1] = remaining - nxt
        remaining = nxt
    utils[:, tasks - 1] = remaining
    period_us = np.exp(rng.uniform(np.log(10_000), np.log(1_000_000), size=(sets, tasks)))
    period = np.maximum(np.round(period_us), 1).astype(np.uint64) * np.uint64(1000)
    wcet = np.maximum(np.floor(utils * period), 1).astype(np.uint64)
    order = np.argsort(period, axis=1, kind="stable")
    return np.take_along_axis(wcet, order, 1), np.take_along_axis(period, order, 1)


def python_tasks(wcet: np.ndarray, period: np.ndarray) -> List[List[schedcat_rta.Task]]:
    return [
        [schedcat_rta.Task(int(c), int(t), int(t)) for c, t in zip(cs, ts)]
        for cs, ts in zip(wcet, period)
    ]


def check_identical(sets, result) -> int:
    """Fails unless both sides give the same verdicts and response times;
    returns the number of schedulable sets."""
    for s, tasks in enumerate(sets):
        reference = schedcat_rta.response_times(tasks)
        ours = [int(r) or None for r in result.response_time[s]]
        if reference != ours:
            raise SystemExit(f"set {s}: response times differ: python {reference}, tinct {ours}")
        if schedcat_rta.is_schedulable(tasks) != bool(result.schedulable[s]):
            raise SystemExit(f"set {s}: verdicts differ")
    return int(result.schedulable.sum())


def measure(tasks: int, sets: int, repeats: int, seed: int, copies: int) -> Dict[str, object]:
    rng = np.random.default_rng(seed + tasks)
    wcet, period = random_sets(rng, sets, tasks)
    py_sets = python_tasks(wcet, period)
    result = tinct.analyze_batch(wcet, period, threads=1)
    schedulable = check_identical(py_sets, result)
    batch_wcet, batch_period = np.tile(wcet, (copies, 1)), np.tile(period, (copies, 1))
    times: Dict[str, List[float]] = {"python": [], "tinct_1_thread": [], "tinct_all_threads": []}
    for _ in range(repeats):
        start = time.perf_counter()
        for ts in py_sets:
            schedcat_rta.is_schedulable(ts)
        times["python"].append(time.perf_counter() - start)
        for name, threads in (("tinct_1_thread", 1), ("tinct_all_threads", None)):
            start = time.perf_counter()
            tinct.analyze_batch(batch_wcet, batch_period, threads=threads)
            times[name].append((time.perf_counter() - start) / copies)
    us = {k: 1e6 * statistics.median(v) / sets for k, v in times.items()}
    return {
        "tasks": tasks,
        "sets": sets,
        "batch_sets": sets * copies,
        "schedulable_sets": schedulable,
        "identical": True,
        "python_us_per_set": us["python"],
        "tinct_1_thread_us_per_set": us["tinct_1_thread"],
        "tinct_all_threads_us_per_set": us["tinct_all_threads"],
        "ratio_1_thread": us["python"] / us["tinct_1_thread"],
        "ratio_all_threads": us["python"] / us["tinct_all_threads"],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,25,50,100", help="tasks per set, comma-separated")
    parser.add_argument("--sets", type=int, default=200, help="task sets per size")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (medians reported)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch-copies", type=int, default=10,
                        help="tinct analyzes the sets this many times over in one call")
    parser.add_argument("--quick", action="store_true", help="20 sets, 1 round (a smoke test)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.sets, args.repeats = 20, 1
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [measure(n, args.sets, args.repeats, args.seed, args.batch_copies) for n in sizes]
    print(f"tinct {tinct.__version__}, {os.cpu_count()} CPUs, {args.sets} sets per size "
          f"(batches of {args.sets * args.batch_copies}), medians of {args.repeats} rounds")
    print(f"{'tasks':>5} {'python µs/set':>14} {'tinct 1 thr':>12} {'tinct all':>10} "
          f"{'ratio 1 thr':>12} {'ratio all':>10} {'sched.':>7}")
    for r in rows:
        print(f"{r['tasks']:>5} {r['python_us_per_set']:>14.1f} {r['tinct_1_thread_us_per_set']:>12.2f} "
              f"{r['tinct_all_threads_us_per_set']:>10.2f} {r['ratio_1_thread']:>11.0f}x "
              f"{r['ratio_all_threads']:>9.0f}x {r['schedulable_sets']:>4}/{r['sets']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(
            {"sizes": rows, "repeats": args.repeats, "seed": args.seed,
             "batch_copies": args.batch_copies}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
