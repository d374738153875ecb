"""The example and the benchmark run, and say what they compute."""

from __future__ import annotations

import json
import subprocess
import sys

import tinct
from conftest import CRATE


def run(script, *args):
    done = subprocess.run([sys.executable, str(script), *map(str, args)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_figure11_example_draws_the_experiment(tmp_path):
    out = run(CRATE / "examples" / "kim2013_figure11.py", "--svg", "--out", tmp_path)
    svg = (tmp_path / "figure11.svg").read_text()
    assert svg.startswith("<svg") or svg.startswith("<?xml")
    for name in ("BFD 1 GiB", "WFD 2 GiB", "CATA 1 GiB", "CATA 2 GiB"):
        assert name in svg
    written = json.loads((tmp_path / "figure11.json").read_text())
    report = tinct.experiment.kim2013()
    for row in report["rows"]:
        points = dict(map(tuple, written[f"{row['memory_mib']}MiB/{row['algorithm']}"]))
        assert points[row["tasks"]] == row["partitions_percent"]
    # Figure 11's direction: CATA never needs more partitions than BFD or WFD.
    for key, points in written.items():
        if key.endswith("/cata"):
            for other in ("bfd", "wfd"):
                for (n, ours), (_, theirs) in zip(points, written[key.replace("cata", other)]):
                    assert ours is not None and (theirs is None or ours <= theirs), (key, n)
    assert "n" in out and "CATA" in out


def test_the_throughput_benchmark_checks_and_reports(tmp_path):
    run(CRATE / "bench" / "throughput.py", "--quick", "--json", tmp_path / "t.json")
    result = json.loads((tmp_path / "t.json").read_text())
    assert [r["tasks"] for r in result["sizes"]] == [10, 25, 50, 100]
    for r in result["sizes"]:
        assert r["identical"] is True
        assert 0 < r["schedulable_sets"] <= r["sets"] == 20
        for key in ("python_us_per_set", "tinct_1_thread_us_per_set", "ratio_all_threads"):
            assert r[key] > 0
