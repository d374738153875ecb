"""Plain arguments (text, paths, numbers, flags, counts) that tinct cannot
read raise BadInput naming the argument, what was expected and what was
found: never Python's UnicodeEncodeError, TypeError or OverflowError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tinct
from tinct import experiment

REPO = Path(__file__).resolve().parents[3]
KIM2013 = REPO / "examples" / "kim2013.toml"
SURROGATE = "\ud800"

SMALL = {
    "platform": {"cores": 1, "partitions": 8, "memory": "64MiB", "refill": "45.3us"},
    "task": [{"name": "a", "period": "10ms", "memory": "1MiB", "wcet": "2ms"}],
}


def small() -> tinct.TaskSet:
    return tinct.TaskSet.from_dict(SMALL)


def refused(call, field: str, expected: str, found: str) -> tinct.BadInput:
    with pytest.raises(tinct.BadInput) as caught:
        call()
    error = caught.value
    assert error.field == field, str(error)
    message = str(error)
    assert message.startswith(f"{field}: expected "), message
    assert expected in message, message
    assert found in message, message
    return error


# (call, field, what the message expects)
LONE_SURROGATES = [
    (lambda: tinct.TaskSet.load(SURROGATE), "path", "a path"),
    (lambda: tinct.TaskSet.parse(SURROGATE), "text", "task-set text"),
    (lambda: tinct.TaskSet.parse("", syntax=SURROGATE), "syntax", '"toml" or "json"'),
    (lambda: small().plan(algorithm=SURROGATE), "algorithm", '"cata", "bfd" or "wfd"'),
    (lambda: small().to_toml(header=[SURROGATE]), "header[0]", "a line"),
    (lambda: small().analyze(overheads=SURROGATE), "overheads", "a path"),
    (lambda: small().analysis_text(calibration=SURROGATE), "calibration", "a path"),
    (lambda: tinct.parse_duration(SURROGATE), "duration", "a duration"),
    (lambda: tinct.parse_size(SURROGATE), "size", "a size"),
    (lambda: tinct.doctor(root=SURROGATE), "root", "a path"),
    (lambda: experiment.write_shard(SURROGATE, {}), "out", "a path"),
    (lambda: tinct.doctor_text(color_bits=SURROGATE), "color_bits", "colour bits"),
    (lambda: tinct.color_bits(SURROGATE), "color_bits", "colour bits"),
]


@pytest.mark.parametrize("call, field, expected", LONE_SURROGATES)
def test_a_lone_surrogate_is_bad_input_naming_the_argument(call, field, expected):
    error = refused(call, field, expected, "a lone surrogate")
    assert "'\\ud800'" in str(error)
    assert error.expected is not None and error.found is not None


# (call, field, expected, found)
WRONG_TYPES = [
    (lambda: tinct.TaskSet.load(b"examples/kim2013.toml"), "path", "a path", "(bytes)"),
    (lambda: tinct.TaskSet.load(3), "path", "a path", "3 (int)"),
    (lambda: tinct.TaskSet.parse(b"[platform]"), "text", "(a str)", "(bytes)"),
    (lambda: tinct.TaskSet.parse(3), "text", "(a str)", "3 (int)"),
    (lambda: small().plan(exact="yes"), "exact", "True or False", "'yes' (str)"),
    (lambda: small().plan(keep_free=1), "keep_free", "True or False", "1 (int)"),
    (lambda: small().plan(algorithm=1), "algorithm", '"cata"', "1 (int)"),
    (lambda: small().to_toml(header="one line"), "header", "a list of lines", "(str)"),
    (lambda: small().to_toml(header=[1]), "header[0]", "a line", "1 (int)"),
    (lambda: small().analyze(overheads=1.5), "overheads", "a path", "1.5 (float)"),
    (
        lambda: experiment.write_results(b"out", {"params": {}, "points": []}),
        "out",
        "a path",
        "(bytes)",
    ),
    (
        lambda: tinct.doctor(probe_colors="no"),
        "probe_colors",
        "True or False",
        "'no' (str)",
    ),
    (
        lambda: experiment.random_params(util_min="a"),
        "util_min",
        "a number",
        "'a' (str)",
    ),
    (
        lambda: experiment.random_params(util_step=True),
        "util_step",
        "a number",
        "True (bool)",
    ),
    (
        lambda: experiment.random_params(sensitivity_max=[0.5]),
        "sensitivity_max",
        "a number",
        "[0.5] (list)",
    ),
    (lambda: experiment.random_task_set("x"), "utilization", "a number", "'x' (str)"),
    (
        lambda: experiment.random_params(tasks="8"),
        "tasks",
        "a whole number",
        "'8'",
    ),
    (lambda: experiment.random_params(seed=1.0), "seed", "a whole number", "1.0"),
    (lambda: experiment.random_task_set(3.0, seed="1"), "seed", "a whole number", "'1'"),
]


@pytest.mark.parametrize("call, field, expected, found", WRONG_TYPES)
def test_a_wrong_type_is_bad_input_naming_the_argument(call, field, expected, found):
    refused(call, field, expected, found)


# (call, field, found)
OUT_OF_RANGE = [
    (lambda: experiment.random_params(tasks=-1), "tasks", "-1"),
    (lambda: experiment.random_params(seed=2**64), "seed", "18446744073709551616"),
    (lambda: experiment.random_params(sets=-5), "sets", "-5"),
    (lambda: experiment.random_params(cores=2**32), "cores", "4294967296"),
    (lambda: experiment.random_params(partitions=-1), "partitions", "-1"),
    (lambda: experiment.random_params(util_max=2**2000), "util_max", "an int beyond any float"),
    (
        lambda: experiment.random_shard(experiment.random_params(), (-1, 2)),
        "shard",
        "-1",
    ),
    (
        lambda: experiment.random_shard(experiment.random_params(), (1, 2**64)),
        "shard",
        "18446744073709551616",
    ),
    (lambda: experiment.random_task_set(3.0, seed=-1), "seed", "-1"),
    (lambda: experiment.random_task_set(3.0, stream=2**70), "stream", str(2**70)),
]


@pytest.mark.parametrize("call, field, found", OUT_OF_RANGE)
def test_an_out_of_range_number_is_bad_input_naming_the_argument(call, field, found):
    refused(call, field, "", found)


def test_good_arguments_still_work(tmp_path):
    """What the readers accept: paths as str or PathLike, numpy numbers and
    bools, ints for floats, tuples of lines; defaults unchanged."""
    assert tinct.TaskSet.load(str(KIM2013)) == tinct.TaskSet.load(KIM2013)
    text = KIM2013.read_text()
    assert tinct.TaskSet.parse(text, "toml", "x.toml").file == "x.toml"
    assert tinct.TaskSet.parse(text).file == "<string>"
    s = small()
    assert s.to_toml(header=("a", "b")) == s.to_toml(header=["a", "b"])
    assert "# a" in s.to_toml(header=("a", "b"))
    assert s.plan().report["algorithm"] == "cata"
    assert s.plan("bfd", exact=np.bool_(True), keep_free=False).report["algorithm"] == "bfd"
    s.save(tmp_path / "s.toml", header=["h"])
    assert tinct.TaskSet.load(tmp_path / "s.toml") == s
    params = experiment.random_params(
        tasks=np.int64(4), util_min=np.float64(1.0), util_max=2, util_step=1, seed=np.uint64(7)
    )
    assert params["generator"]["tasks"] == 4 and params["seed"] == 7
    assert params["utilizations"] == [1.0, 2.0]
    defaults = experiment.random_params()
    assert (defaults["sets_per_point"], defaults["seed"]) == (100, 1)
    a = experiment.random_task_set(np.float64(2.0), seed=np.int64(3), stream=1)
    assert a == experiment.random_task_set(2, seed=3, stream=1)
    assert tinct.parse_duration("45.3us") == 45_300
    assert tinct.doctor_text(root=None, probe_colors=False)


def test_a_file_name_with_undecodable_bytes_is_still_a_path(tmp_path):
    """A lone surrogate from os.fsdecode (surrogateescape) names real bytes:
    it is a path, not refused text."""
    name = tmp_path / b"set-\xff.toml".decode("utf-8", "surrogateescape")
    name.write_bytes(KIM2013.read_bytes())
    assert tinct.TaskSet.load(name) == tinct.TaskSet.load(KIM2013)
