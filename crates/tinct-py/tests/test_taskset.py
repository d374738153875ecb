"""The task model from Python: reading, writing, building from dicts, and
errors that name file, line and field as the CLI does."""

from __future__ import annotations

import numpy as np
import pytest

import tinct
from conftest import EXAMPLES, REPO, run_cli

TABLE2 = REPO / "examples" / "kim2013-table2.toml"

SMALL = {
    "platform": {"cores": 1, "partitions": 8, "memory": "64MiB", "refill": "45.3us"},
    "task": [
        {"name": "a", "period": "10ms", "memory": "1MiB", "wcet": "2ms"},
        {"name": "b", "period": "20ms", "deadline": "15ms", "memory": "2MiB",
         "wcet": {"1": "5ms", "4": "4ms"}},
    ],
}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_files_round_trip(tmp_path, example, suffix):
    original = tinct.TaskSet.load(example)
    path = tmp_path / ("copy" + suffix)
    original.save(path, header=["written by a test"])
    again = tinct.TaskSet.load(path)
    assert again == original
    assert tinct.TaskSet.from_dict(original.to_dict()) == original
    assert tinct.TaskSet.parse(original.to_json(), syntax="json") == original
    assert tinct.TaskSet.parse(original.to_toml()) == original


def test_a_set_built_from_a_dict():
    s = tinct.TaskSet.from_dict(SMALL)
    assert len(s) == 2 and s.names == ["a", "b"]
    assert s.file == "<dict>"
    assert s.platform == {
        "cores": 1,
        "partitions": 8,
        "memory": 64 << 20,
        "refill": 45_300,
        "overheads": {"context_switch": 0, "release_latency": 0, "tick": 0, "tick_period": None},
        "cache_domains": None,
        "color_bits": None,
        "dram_map": None,
    }
    assert s.tasks[1]["deadline"] == 15_000_000
    assert s.tasks[1]["wcet"] == {"listed": {"1": 5_000_000, "4": 4_000_000}}
    # Deadline-monotonic without priorities: a (D = 10 ms) before b (D = 15 ms).
    assert s.ranks() == [1, 2]
    a = s.analyze()
    assert a["schedulable"] is True
    # No partitions with Δ > 0: each is charged all 8 (issue 27), so
    # R_a = 2 + 8Δ and R_b = 5 + 8Δ + (2 + 8Δ + 8Δ) ms, Δ = 45.3 us.
    assert [t["wcrt_ns"] for t in a["tasks"]] == [2_362_400, 8_087_200]
    assert s != tinct.TaskSet.load(TABLE2)


def test_replicate_copies_every_task():
    s = tinct.TaskSet.from_dict(SMALL).replicate(3)
    assert len(s) == 6
    assert len(set(s.names)) == 6
    with pytest.raises(tinct.BadInput):
        tinct.TaskSet.from_dict(SMALL).replicate(0)


def test_replicate_refuses_what_the_format_would_not_take_back():
    small = tinct.TaskSet.from_dict(SMALL)  # 2 tasks: at most 5 000 copies
    assert len(small.replicate(np.int64(2))) == 4
    for copies in [-1, 5_001, 2**40, 2**200, 2.0, True, "3", None]:
        with pytest.raises(tinct.BadInput) as refused:
            small.replicate(copies)
        assert "copies: expected a whole number from 1 to 5000" in str(refused.value)
    assert "a task set holds at most 10000 tasks" in str(refused.value)
    assert len(small.replicate(5_000)) == 10_000


def test_bad_files_raise_bad_input_with_the_clis_message(tmp_path):
    text = TABLE2.read_text().replace('period = "40ms"', 'period = "-40ms"', 1)
    assert text != TABLE2.read_text()
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.load(path)
    error = caught.value
    done = run_cli("analyze", str(path), check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == f"tinct: error: {error}"
    assert error.file == str(path)
    assert error.line is not None and text.splitlines()[error.line - 1].startswith("period")
    assert "period" in error.field and error.expected and error.found
    assert isinstance(error, tinct.TinctError) and isinstance(error, ValueError)


def test_bad_dicts_name_the_field():
    broken = {"platform": dict(SMALL["platform"]), "task": [dict(SMALL["task"][0], deadline="20ms")]}
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.from_dict(broken)
    assert caught.value.file == "<dict>"
    assert caught.value.field == "task 'a' field `deadline`"
    assert "at most the period" in caught.value.expected
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.from_dict({"platform": SMALL["platform"], "task": [dict(SMALL["task"][0], colour=3)]})
    assert "colour" in str(caught.value)
    with pytest.raises(tinct.BadInput):
        tinct.TaskSet.parse("not toml [", syntax="toml")
    with pytest.raises(tinct.BadInput):
        tinct.TaskSet.parse("{}", syntax="yaml")


def test_a_missing_file_is_bad_input():
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.load("/nonexistent/set.toml")
    assert caught.value.file == "/nonexistent/set.toml"


def test_saving_elsewhere_keeps_naming_the_same_dram_map(tmp_path):
    # A set beside its DRAM map, saved into another directory and below
    # its own: the reference follows, as `tinct plan -o` writes it.
    (tmp_path / "maps").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "maps" / "dram-map.toml").write_text(
        'bank_functions = ["0x44000"]\ncontroller_functions = []\nphysical = "host"\nmachine = "test"\n'
    )
    source = tmp_path / "maps" / "set.toml"
    text = tinct.TaskSet.from_dict(SMALL).to_toml().replace(
        "[platform]\n", '[platform]\ndram_map = "dram-map.toml"\n', 1
    )
    source.write_text(text)
    original = tinct.TaskSet.load(source)
    assert original.platform["dram_map"]["path"] == "dram-map.toml"
    original.save(tmp_path / "out" / "plan.toml")
    moved = tinct.TaskSet.load(tmp_path / "out" / "plan.toml")
    assert moved.platform["dram_map"]["path"] == str(tmp_path / "maps" / "dram-map.toml")
    original.save(tmp_path / "maps" / "plan.json")
    beside = tinct.TaskSet.load(tmp_path / "maps" / "plan.json")
    assert beside.platform["dram_map"]["path"] == "dram-map.toml"
    assert beside == original
    # A plan of the set, and copies of it, keep its references.
    for derived, name in [(original.plan(algorithm="cata").planned, "planned.toml"),
                          (original.replicate(2), "copies.toml")]:
        derived.save(tmp_path / "out" / name)
        again = tinct.TaskSet.load(tmp_path / "out" / name)
        assert again.platform["dram_map"]["path"] == str(tmp_path / "maps" / "dram-map.toml")


def test_writing_where_nothing_can_be_written_fails():
    with pytest.raises(tinct.Failed):
        tinct.TaskSet.from_dict(SMALL).save("/nonexistent/dir/set.toml")


def test_units():
    assert tinct.parse_duration("45.3us") == 45_300
    assert tinct.parse_duration(7) == 7
    assert tinct.parse_size("18MiB") == 18 << 20
    for bad in ("1 parsec", -1, 1.5, True, 2**64):
        with pytest.raises(tinct.BadInput):
            tinct.parse_duration(bad)


def test_analysis_refusals_are_bad_input_naming_the_task():
    d = tinct.TaskSet.from_dict(SMALL).to_dict()
    d["platform"]["cores"] = 2
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.from_dict(d).analyze()
    assert caught.value.field == "task 'a' field `core`"
    assert caught.value.line is not None
