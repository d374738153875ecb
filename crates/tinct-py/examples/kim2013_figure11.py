"""kim2013 Figure 11 from tinct's experiments API: the share of the N_P = 32
cache partitions that BFD, WFD and CATA need to schedule Table I duplicated
to n = 8, 12 and 16 tasks on N_C = 4 cores, at M_total = 1 GiB and 2 GiB.

    python crates/tinct-py/examples/kim2013_figure11.py [--out DIR] [--svg]

Writes DIR/figure11.png (matplotlib, if installed; grouped bars as in the
paper) or DIR/figure11.svg (tinct's own SVG chart, with --svg or without
matplotlib), and DIR/figure11.json with the numbers. Every search is
exhaustive (exact) unless --node-budget is given.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import tinct

ALGORITHMS = ("bfd", "wfd", "cata")
MEMORY_MIB = (1024, 2048)


def figure11(report: dict) -> Dict[Tuple[int, str], List[Tuple[int, Optional[float]]]]:
    """(memory MiB, algorithm) → [(n, % of N_P needed or None when it fails)]."""
    data: Dict[Tuple[int, str], List[Tuple[int, Optional[float]]]] = {}
    for row in report["rows"]:
        data.setdefault((row["memory_mib"], row["algorithm"]), []).append(
            (row["tasks"], row["partitions_percent"])
        )
    return data


def plot_png(data, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for ax, memory in zip(axes, MEMORY_MIB):
        for k, algorithm in enumerate(ALGORITHMS):
            points = data[(memory, algorithm)]
            xs = [i + (k - 1) * 0.27 for i in range(len(points))]
            ys = [p if p is not None else 0 for _, p in points]
            bars = ax.bar(xs, ys, width=0.27, label=algorithm.upper())
            for bar, (_, p) in zip(bars, points):
                if p is None:
                    ax.annotate("fails", (bar.get_x() + bar.get_width() / 2, 2), ha="center",
                                rotation=90, fontsize=7)
        ax.set_xticks(range(3), [f"n = {n}" for n, _ in data[(memory, "cata")]])
        ax.set_title(f"M_total = {memory // 1024} GiB")
        ax.set_ylim(0, 100)
    axes[0].set_ylabel("cache partitions needed (% of N_P)")
    axes[1].legend()
    fig.suptitle("kim2013 Figure 11 (tinct, exact)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_svg(data, path: Path) -> None:
    series = [
        (f"{algorithm.upper()} {memory // 1024} GiB",
         [(float(n), p) for n, p in data[(memory, algorithm)] if p is not None])
        for memory in MEMORY_MIB
        for algorithm in ALGORITHMS
    ]
    path.write_text(tinct.line_chart_svg(
        "kim2013 Figure 11: cache partitions needed (tinct, exact)",
        "tasks n (Table I duplicated)",
        "partitions needed (% of N_P = 32)",
        series,
        x_range=(8.0, 16.0),
        y_range=(0.0, 100.0),
    ))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("kim2013-figure11"))
    parser.add_argument("--svg", action="store_true", help="tinct's SVG even if matplotlib is installed")
    parser.add_argument("--node-budget", type=int, default=None)
    args = parser.parse_args(argv)
    report = tinct.experiment.kim2013(node_budget=args.node_budget)
    data = figure11(report)
    print(f"{'M_total':>8} {'n':>3} " + " ".join(f"{a.upper():>6}" for a in ALGORITHMS) + "   (% of N_P)")
    for memory in MEMORY_MIB:
        for i, (n, _) in enumerate(data[(memory, "cata")]):
            cells = [data[(memory, a)][i][1] for a in ALGORITHMS]
            print(f"{memory // 1024:>5} GiB {n:>3} "
                  + " ".join(f"{c:>6.1f}" if c is not None else f"{'fails':>6}" for c in cells))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "figure11.json").write_text(json.dumps(
        {f"{m}MiB/{a}": points for (m, a), points in data.items()}, indent=2) + "\n")
    try:
        if args.svg:
            raise ImportError("--svg")
        plot_png(data, args.out / "figure11.png")
        print(f"written {args.out / 'figure11.png'}")
    except ImportError:
        plot_svg(data, args.out / "figure11.svg")
        print(f"written {args.out / 'figure11.svg'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
