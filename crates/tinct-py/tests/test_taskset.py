"""The task model from Python: reading, writing, building from dicts, and
errors that name file, line and field as the CLI does."""

from __future__ import annotations

import json
import os

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


def programs(s):
    """Each task's program (its body's `command[0]`), None for a kernel body."""
    return [(t.get("body") or {}).get("command", [None])[0] for t in s.to_dict()["task"]]


def without_programs(s):
    """The set's dict without its programs' paths (the references `save`
    rewrites for the file's new place)."""
    d = s.to_dict()
    for t in d["task"]:
        body = t.get("body") or {}
        if "command" in body:
            body["command"] = body["command"][1:]
    return d


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_files_round_trip(tmp_path, example, suffix):
    original = tinct.TaskSet.load(example)
    path = tmp_path / ("copy" + suffix)
    original.save(path, header=["written by a test"])
    again = tinct.TaskSet.load(path)
    relative = [p for p in programs(original) if p and "/" in p and not p.startswith("/")]
    if relative:
        # Saved elsewhere, a relative program is rewritten to name the same
        # file (issue 26): equal, that reference aside.
        assert without_programs(again) == without_programs(original)
        for was, now in zip(programs(original), programs(again)):
            if was in relative:
                assert now == os.path.normpath(example.parent / was), (was, now)
    else:
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


def _small_with(**changes):
    """SMALL with task a's fields changed (a deep copy)."""
    d = {"platform": dict(SMALL["platform"]), "task": [dict(t) for t in SMALL["task"]]}
    d["task"][0].update(changes)
    return d


@pytest.mark.parametrize(
    "value, expected, found",
    [
        ({1, 2}, "a list (a set has no order", "set {1, 2}"),
        (frozenset([3]), "a list (a set has no order", "frozenset"),
        (b"a", "text (str; decode bytes first", "bytes b'a'"),
        (bytearray(b"a"), "text (str; decode bytes first", "bytearray"),
        ("\ud800", "text (str) that UTF-8 can hold", "a lone surrogate"),
        (float("nan"), "a finite number (JSON has no NaN or infinity)", "nan"),
        (float("inf"), "a finite number (JSON has no NaN or infinity)", "inf"),
        (np.float32("nan"), "a finite number (JSON has no NaN or infinity)", "nan"),
        (object(), "a dict, list, tuple, str, int, float, bool or None", "object <object"),
    ],
    ids=["set", "frozenset", "bytes", "bytearray", "surrogate", "nan", "inf", "np-nan", "object"],
)
def test_values_json_cannot_hold_are_bad_input_naming_the_field(value, expected, found):
    # Issue 27: these raised TypeError or UnicodeEncodeError from json.dumps.
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.from_dict(_small_with(name=value))
    error = caught.value
    assert error.file == "<dict>"
    assert error.field == '<dict>["task"][0]["name"]'
    assert error.expected.startswith(expected), error
    assert found in error.found, error
    assert str(error).startswith('<dict>["task"][0]["name"]: expected '), error


def test_bad_keys_are_bad_input():
    for key in [b"k", (1, 2), True, "\udcff"]:
        d = _small_with()
        d["platform"][key] = 1
        with pytest.raises(tinct.BadInput) as caught:
            tinct.TaskSet.from_dict(d)
        assert caught.value.field == '<dict>["platform"]', caught.value
        assert "text keys" in caught.value.expected


def test_deep_and_self_containing_values_are_bad_input_not_recursion_errors():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    looped: list = []
    looped.append(looped)
    for value in [deep, looped]:
        with pytest.raises(tinct.BadInput) as caught:
            tinct.TaskSet.from_dict(_small_with(partitions=value))
        assert "at most 32 levels" in caught.value.expected
        assert caught.value.field.startswith('<dict>["task"][0]["partitions"]')
    # The same in every dict argument.
    with pytest.raises(tinct.BadInput, match="at most 32 levels"):
        tinct.experiment.merge([deep])


def test_numpy_numbers_in_dicts_are_numbers():
    # Issue 27: numpy ints raised TypeError ("not JSON serializable").
    d = _small_with(partitions=np.arange(1, 3), core=np.int64(0), priority=np.uint8(1))
    d["task"][1]["priority"] = np.int32(2)
    d["platform"]["cores"] = np.int16(1)
    d["platform"]["memory"] = np.uint64(64 << 20)
    d["task"][1]["wcet"] = {np.int64(1): "5ms", 4: "4ms"}
    s = tinct.TaskSet.from_dict(d)
    assert s.platform["cores"] == 1 and s.platform["memory"] == 64 << 20
    assert s.tasks[0]["partitions"] == [1, 2] and s.tasks[0]["priority"] == 1
    # A float where a whole number belongs is refused by the file's rule.
    d = _small_with()
    d["platform"]["cores"] = np.float64(1.5)
    with pytest.raises(tinct.BadInput, match="found 1.5"):
        tinct.TaskSet.from_dict(d)
    # Study parameters and generators take numpy numbers too.
    params = tinct.experiment.random_params(tasks=4, sets=1, util_min=1.0, util_max=1.0)
    params["seed"] = np.uint64(params["seed"])
    assert tinct.experiment.merge([tinct.experiment.random_shard(params)])["params"]["seed"] == 1
    generator = dict(params["generator"], tasks=np.int32(3))
    assert len(tinct.experiment.random_task_set(1.0, generator=generator)) == 3


def test_integers_beyond_64_bits_are_shown_as_written():
    # Issue 27: 2**64 was reported as "found 18446744073709552000".
    d = _small_with()
    d["platform"]["memory"] = 2**64
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.from_dict(d)
    assert caught.value.field == "platform field `memory`"
    assert caught.value.found == "18446744073709551616"
    text = '{"platform": {"cores": 1, "partitions": 8, "memory": 18446744073709551616, "refill": "1us"}, "task": []}'
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.parse(text, syntax="json")
    assert caught.value.found == "18446744073709551616"


def test_nan_and_a_byte_order_mark_in_json_text_are_named():
    # Issue 27: both said "found expected value" (serde's words).
    text = json.dumps(SMALL, indent=2).replace('"64MiB"', "NaN")
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.parse(text, syntax="json")
    assert caught.value.line == 5 and caught.value.found == "NaN"
    assert "JSON has no NaN" in caught.value.expected
    with pytest.raises(tinct.BadInput) as caught:
        tinct.TaskSet.parse("\ufeff" + json.dumps(SMALL), syntax="json")
    assert caught.value.line == 1 and "byte-order mark" in caught.value.found
    assert "expected value" not in str(caught.value)


def test_reservations_are_analysed_as_the_cli_does():
    """SCHED_DEADLINE tasks (issue 30): the EDF verdict per core and each
    task's policy, runtime and bound, as `tinct analyze --json` gives them."""
    s = tinct.TaskSet.load(REPO / "examples" / "deadline.toml")
    a = s.analyze()
    cli = json.loads(run_cli("analyze", str(REPO / "examples" / "deadline.toml"), "--json").stdout)
    assert cli.pop("refill_source") == "from the file"
    assert a == cli
    edf = a["cores"][0]["edf"]
    assert edf["schedulable"] is True and edf["overload"] is None
    assert edf["tasks"] == ["streamcluster", "ferret", "canneal", "fluidanimate"]
    control = next(t for t in a["tasks"] if t["name"] == "control")
    assert control["policy"] == "deadline"
    # Alone on its core among reservations: Spuri's bound is its C.
    assert control["wcrt_ns"] == 1_000_000
    assert control["kernel_deadline_ns"] == control["deadline_ns"] == 5_000_000
    logger = next(t for t in a["tasks"] if t["name"] == "logger")
    assert logger["policy"] == "fifo"
    # The logger's 20 ms under control's 1 ms jobs, anywhere within
    # their 5 ms deadline: w = 20 + ⌈(w + 4)/10⌉ · 1 = 23 ms.
    assert logger["wcrt_ns"] == 23_000_000
    # Too short a deadline for both: the interval is named.
    d = s.to_dict()
    for t in d["task"][:2]:
        t["deadline"] = "20ms"
    over = tinct.TaskSet.from_dict(d).analyze()
    assert over["schedulable"] is False
    # streamcluster's and ferret's jobs (12.66 + 13.42 ms) both due within 20 ms.
    assert over["cores"][0]["edf"]["overload"] == {"interval_ns": 20_000_000, "demand_ns": 26_086_600}
