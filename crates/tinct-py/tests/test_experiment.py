"""The studies from Python write what `tinct experiment` writes, byte for
byte; shards merge into the whole study; kim2013 is the CLI's."""

from __future__ import annotations

import json

import pytest

import tinct
from conftest import assert_identical, cli_json, run_cli

STUDY = dict(tasks=4, cores=2, partitions=8, util_min=1.0, util_max=2.0, util_step=0.5,
             sets=3, seed=3, node_budget=2000)
CLI_STUDY = ["--tasks", "4", "--cores", "2", "--partitions", "8", "--util-min", "1",
             "--util-max", "2", "--util-step", "0.5", "--sets", "3", "--seed", "3",
             "--node-budget", "2000", "--threads", "1"]
FILES = ("params.json", "results.csv", "schedulability.svg")


def test_default_params_are_the_clis(tmp_path):
    run_cli("experiment", "random", "--sets", "0", "--out", str(tmp_path))
    theirs = json.loads((tmp_path / "params.json").read_text())
    ours = tinct.experiment.random_params(sets=0)
    assert_identical(ours, theirs)


def test_the_study_writes_the_clis_files(tmp_path):
    run_cli("experiment", "random", *CLI_STUDY, "--out", str(tmp_path / "cli"))
    result = tinct.experiment.random_study(tinct.experiment.random_params(**STUDY))
    tinct.experiment.write_results(tmp_path / "py", result)
    for name in FILES:
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert sum(p["sets"] for p in result["points"]) == 9


def test_shards_are_the_clis_and_merge_into_the_study(tmp_path):
    params = tinct.experiment.random_params(**STUDY)
    shards = [tinct.experiment.random_shard(params, (i, 4), threads=1) for i in (3, 1, 4, 2)]
    for shard in shards:
        i = shard["shard"]
        run_cli("experiment", "random", *CLI_STUDY, "--shard", f"{i}/4", "--out", str(tmp_path / "cli"))
        path = tinct.experiment.write_shard(tmp_path / "py", shard)
        assert path.name == f"shard-{i}-of-4.json"
        assert path.read_bytes() == (tmp_path / "cli" / path.name).read_bytes()
    merged = tinct.experiment.merge(shards)
    assert merged == tinct.experiment.random_study(params, threads=2)
    # The CLI merges the Python shards into the same files as one run.
    run_cli("experiment", "merge", *map(str, sorted((tmp_path / "py").glob("shard-*"))),
            "--out", str(tmp_path / "merged"))
    tinct.experiment.write_results(tmp_path / "py-merged", merged)
    for name in FILES:
        assert (tmp_path / "merged" / name).read_bytes() == (tmp_path / "py-merged" / name).read_bytes()


def test_merge_refuses_what_does_not_cover_the_study_once():
    params = tinct.experiment.random_params(**STUDY)
    one, two = (tinct.experiment.random_shard(params, (i, 2)) for i in (1, 2))
    other = tinct.experiment.random_shard(tinct.experiment.random_params(**dict(STUDY, seed=4)), (2, 2))
    for shards, words in [
        ([], "at least one"),
        ([one], "missing 2"),
        ([one, one], "shards[1]"),
        ([one, other], "shards[1]"),
    ]:
        with pytest.raises(tinct.BadInput) as caught:
            tinct.experiment.merge(shards)
        assert words in str(caught.value)
    with pytest.raises(tinct.BadInput):
        tinct.experiment.merge([{"shard": 1}])


@pytest.mark.parametrize(
    "kwargs",
    [dict(tasks=0), dict(util_step=0.0), dict(util_min=3.0, util_max=2.0),
     dict(sensitivity_max=2.0), dict(period_min="2s", period_max="1s"), dict(refill="soon"),
     dict(util_min=float("nan"))],
)
def test_bad_studies_are_refused(kwargs):
    with pytest.raises(tinct.BadInput):
        tinct.experiment.random_params(**kwargs)


def test_bad_shards_are_refused():
    params = tinct.experiment.random_params(**STUDY)
    for shard in [(0, 2), (3, 2)]:
        with pytest.raises(tinct.BadInput):
            tinct.experiment.random_shard(params, shard)


def test_a_stopped_study_keeps_what_it_did():
    # 25 000 sets take minutes; the timeout stops after a fraction of a second.
    params = tinct.experiment.random_params(sets=5000, util_min=2.0, util_max=3.0)
    with pytest.raises(tinct.Stopped) as caught:
        tinct.experiment.random_shard(params, threads=1, timeout=0.2)
    partial = caught.value.partial
    assert partial["params"] == params
    assert sum(p["sets"] for p in partial["points"]) < 25_000


def test_kim2013_is_the_clis():
    theirs = cli_json("experiment", "kim2013", "--json", "--node-budget", "20000")
    ours = tinct.experiment.kim2013(node_budget=20_000)
    assert_identical(ours, theirs)
    assert ours["complete"] and len(ours["rows"]) == 18


def test_random_task_sets_are_reproducible():
    a = tinct.experiment.random_task_set(2.0, seed=5, stream=7)
    b = tinct.experiment.random_task_set(2.0, seed=5, stream=7)
    c = tinct.experiment.random_task_set(2.0, seed=5, stream=8)
    assert a == b and a != c
    assert len(a) == 8
    assert tinct.experiment.random_task_set(9.0) is None  # utilization above n


def test_a_stopped_kim2013_keeps_its_rows():
    with pytest.raises(tinct.Stopped) as caught:
        tinct.experiment.kim2013(timeout=0.001)
    partial = caught.value.partial
    assert partial["complete"] is False
    assert len(partial["rows"]) < 18


def test_a_study_without_memory_is_refused_naming_the_argument():
    # Issue 27: `--memory 0B` was accepted and gave 0 % everywhere; the
    # CLI refuses it with exit 2 naming --memory, Python naming `memory`.
    for memory in [0, "0B", "31B"]:
        with pytest.raises(tinct.BadInput) as caught:
            tinct.experiment.random_params(memory=memory)
        assert str(caught.value).startswith(
            "memory: expected at least one byte per partition (32 partitions, so at least 32B), found "
        ), caught.value
    assert tinct.experiment.random_params(memory="32B")["generator"]["total_memory"] == 32
