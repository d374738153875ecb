"""Python's analysis is the CLI's `tinct analyze --json`, field by field, on
the shipped examples and on random planned sets; refusals carry the CLI's
message."""

from __future__ import annotations

import json

import pytest

import tinct
from conftest import EXAMPLES, REPO, assert_identical, cli_json, run_cli


def test_every_example_is_covered():
    names = {p.name for p in EXAMPLES}
    assert {"kim2013-table2.toml", "kim2013.toml", "light.toml"} <= names


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_match_the_cli(example):
    done = run_cli("analyze", "--json", str(example), check=False)
    try:
        ours = tinct.TaskSet.load(str(example)).analyze()
    except tinct.BadInput as error:
        # The CLI refused the same file (exit 2) with the same message.
        assert done.returncode == 2, done.stdout
        assert done.stderr.strip() == f"tinct: error: {error}"
        assert error.file == str(example) and error.line is not None and error.field
        return
    assert done.returncode == 0, done.stderr
    theirs = cli_json("analyze", "--json", str(example))
    # The CLI adds where Δ and the overheads came from; the analysis itself
    # must be identical.
    assert theirs.pop("refill_source") == "from the file"
    assert theirs["overheads_source"]["from"].startswith("the task set")
    assert_identical(ours, theirs)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_analysis_text_is_what_the_cli_prints(example):
    done = run_cli("analyze", str(example), check=False)
    try:
        ours = tinct.TaskSet.load(str(example)).analysis_text()
    except tinct.BadInput:
        assert done.returncode == 2, done.stdout
        return
    assert done.returncode == 0, done.stderr
    # Byte for byte: one renderer (tinct_report::text) for both.
    assert ours == done.stdout
    # The verdict line, followed by its reasons when NOT SCHEDULABLE.
    assert any(line.startswith("verdict: ") for line in ours.splitlines()), ours


def test_an_unassigned_example_is_refused_like_the_cli():
    # kim2013.toml has no cores: both refuse it, naming the task's line.
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.load(str(REPO / "examples" / "kim2013.toml")).analyze()
    assert "field `core`" in str(caught.value)
    # The line of the first task's table, as the file has it.
    lines = (REPO / "examples" / "kim2013.toml").read_text().splitlines()
    assert caught.value.line == lines.index("[[task]]") + 1


@pytest.mark.parametrize("algorithm", ["bfd", "wfd", "cata"])
@pytest.mark.parametrize("stream", range(4))
def test_random_planned_sets_match_the_cli(tmp_path, algorithm, stream):
    generator = tinct.experiment.random_params(tasks=6, cores=2, partitions=12)["generator"]
    compared = 0
    for utilization in (0.8, 1.2, 1.6):
        s = tinct.experiment.random_task_set(utilization, seed=11, stream=stream, generator=generator)
        assert s is not None
        plan = s.plan(algorithm=algorithm, node_budget=20_000)
        if plan.planned is None or not plan.report["unplaced"] == []:
            continue
        path = tmp_path / f"{algorithm}-{stream}-{utilization}.toml"
        plan.planned.save(path)
        theirs = cli_json("analyze", "--json", str(path))
        theirs.pop("refill_source")
        assert_identical(tinct.TaskSet.load(path).analyze(), theirs)
        # The set in memory analyzes as the file read back does (its
        # overheads_source names no file: the set gives none).
        assert_identical(plan.planned.analyze(), theirs)
        theirs.pop("overheads_source")
        assert_identical(plan.analysis, theirs)
        compared += 1
    assert compared >= 1, "no random set was placed: the comparison compared nothing"


def test_random_sets_with_misses_match_the_cli(tmp_path):
    # Every task on core 0 of a one-core platform, high utilization: some
    # tasks miss their deadlines (wcrt null), and both must say so alike.
    generator = tinct.experiment.random_params(tasks=8, cores=1, partitions=16)["generator"]
    misses = 0
    for stream in range(6):
        s = tinct.experiment.random_task_set(0.97, seed=5, stream=stream, generator=generator)
        assert s is not None
        d = s.to_dict()
        for i, task in enumerate(d["task"]):
            task["core"] = 0
            first_p = min(int(p) for p in task["wcet"])
            task["partitions"] = list(range(1, first_p + 1))
        path = tmp_path / f"one-core-{stream}.json"
        tinct.TaskSet.from_dict(d).save(path)
        theirs = cli_json("analyze", "--json", str(path))
        theirs.pop("refill_source")
        ours = tinct.TaskSet.load(path).analyze()
        assert_identical(ours, theirs)
        misses += sum(t["wcrt_ns"] is None for t in ours["tasks"])
    assert misses > 0, "no deadline miss: the null case was not compared"


def test_the_declared_shapes_are_the_dicts(tmp_path):
    # tinct.reports declares every key the analysis returns, no more: a
    # field added to the Rust report without its declaration fails here.
    placed = tmp_path / "placed.toml"
    run_cli("plan", "--placement", "static", "-o", str(placed), str(REPO / "examples" / "pipeline.toml"))
    analysis = tinct.TaskSet.load(placed).analyze()
    assert analysis["chains"], "the pipeline has no chain: nothing compared"
    # A plan's analysis has no overheads_source (it is Analysis, not
    # TaskSetAnalysis).
    plan_analysis = tinct.TaskSet.load(REPO / "examples" / "kim2013-table2.toml").plan().analysis
    assert plan_analysis is not None

    def keys(shape):
        return set(shape.__annotations__)

    assert set(analysis) == keys(tinct.reports.TaskSetAnalysis)
    assert set(plan_analysis) == keys(tinct.reports.Analysis)
    assert set(analysis["overheads"]) == keys(tinct.reports.Overheads)
    source = analysis["overheads_source"]
    assert set(source) == keys(tinct.reports.OverheadsSource)
    assert set(source["overheads"]) == keys(tinct.reports.PlatformOverheads)
    for task in analysis["tasks"]:
        assert set(task) == keys(tinct.reports.TaskReport)
        assert set(task["breakdown"]) == keys(tinct.reports.ResponseTime)
    for core in analysis["cores"]:
        assert set(core) == keys(tinct.reports.CoreReport)
    for chain in analysis["chains"]:
        assert set(chain) == keys(tinct.reports.ChainBound)
    # A core with SCHED_DEADLINE tasks, and one that overloads.
    reserved = tinct.TaskSet.load(REPO / "examples" / "deadline.toml")
    edf = reserved.analyze()["cores"][0]["edf"]
    assert set(edf) == keys(tinct.reports.EdfReport)
    d = reserved.to_dict()
    for t in d["task"][:2]:
        t["deadline"] = "20ms"
    overload = tinct.TaskSet.from_dict(d).analyze()["cores"][0]["edf"]["overload"]
    assert set(overload) == keys(tinct.reports.Overload)


def write_calibration(tmp_path, overheads):
    """A calibrate.json as `tinct bench calibrate` writes it (the fields the
    analysis reads)."""
    path = tmp_path / "calibrate.json"
    path.write_text(
        json.dumps({"bench": "calibrate", "refill": {"partitions": 32, "refill_ns": 45300}, "overheads": overheads})
    )
    return path


CALIBRATED = {
    "context_switch_ns": 20000,
    "release_latency_ns": 100000,
    "unmeasured": {"tick": "no periodic interruption found"},
}


@pytest.mark.parametrize("how", ["file", "measured"])
def test_overheads_from_a_calibration_match_the_cli(tmp_path, how):
    calibration = write_calibration(tmp_path, CALIBRATED)
    example = str(REPO / "examples" / "kim2013-table2.toml")
    if how == "file":
        theirs = cli_json("analyze", "--json", "--overheads", str(calibration), example)
        ours = tinct.TaskSet.load(example).analyze(overheads=str(calibration))
    else:
        theirs = cli_json(
            "analyze", "--json", "--overheads", "measured", "--calibration", str(calibration), example
        )
        ours = tinct.TaskSet.load(example).analyze(overheads="measured", calibration=calibration)
    theirs.pop("refill_source")
    assert_identical(ours, theirs)
    # The overheads were charged (not the analysis without them) and the
    # missing one is named, not taken as zero silently.
    source = ours["overheads_source"]
    assert source["from"] == f"calibration {calibration}"
    assert [m["name"] for m in source["missing"]] == ["tick"]
    assert ours["overheads"]["context_switch_ns"] == 20000
    assert all(t["overhead_ns"] == 40000 and t["jitter_ns"] == 100000 for t in ours["tasks"])
    plain = tinct.TaskSet.load(example).analyze()
    assert plain["overheads_source"]["from"] == "the task set gives none; see --overheads"
    assert ours["tasks"][-1]["wcrt_ns"] > plain["tasks"][-1]["wcrt_ns"]


def test_overheads_none_and_the_set_s_own_match_the_cli(tmp_path):
    text = (REPO / "examples" / "kim2013-table2.toml").read_text()
    with_overheads = tmp_path / "with.toml"
    with_overheads.write_text(
        text.replace(
            "[platform]\n",
            '[platform]\noverheads = { context_switch = "50us", release_latency = "1ms" }\n',
            1,
        )
    )
    for choice in (None, "none"):
        args = ["analyze", "--json", str(with_overheads)]
        if choice is not None:
            args[2:2] = ["--overheads", choice]
        theirs = cli_json(*args)
        theirs.pop("refill_source")
        ours = tinct.TaskSet.load(with_overheads).analyze(overheads=choice)
        assert_identical(ours, theirs)
    charged = tinct.TaskSet.load(with_overheads).analyze()
    assert charged["overheads"]["context_switch_ns"] == 50000, "the set's own overheads"
    none = tinct.TaskSet.load(with_overheads).analyze(overheads="none")
    assert none["overheads_source"]["from"] == "--overheads none"
    assert none["overheads"]["context_switch_ns"] == 0


def test_bad_overheads_are_refused_like_the_cli(tmp_path, monkeypatch):
    example = str(REPO / "examples" / "kim2013-table2.toml")
    s = tinct.TaskSet.load(example)
    # No calibration anywhere: `measured` is refused with the CLI's message.
    monkeypatch.setenv("TINCT_CALIBRATION", "/nonexistent/tinct-test-calibration.json")
    done = run_cli("analyze", "--overheads", "measured", example, check=False)
    assert done.returncode == 2
    with pytest.raises(tinct.BadInput) as caught:
        s.analyze(overheads="measured")
    assert done.stderr.strip() == f"tinct: error: {caught.value}"
    assert caught.value.field == "overheads"
    # A calibration that is not one, as --calibration.
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    done = run_cli("analyze", "--calibration", str(broken), example, check=False)
    assert done.returncode == 2
    with pytest.raises(tinct.BadInput) as caught:
        s.analyze(calibration=broken)
    assert done.stderr.strip() == f"tinct: error: {caught.value}"
    with pytest.raises(tinct.BadInput):
        s.analyze(overheads="")
