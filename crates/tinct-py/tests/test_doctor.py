"""tinct.doctor() and tinct.doctor_text() give what `tinct doctor` prints,
on the captured fixture trees (deterministic) and on this machine; a root
that is not a directory is BadInput naming `root`."""

from __future__ import annotations

import json

import pytest

import tinct
from conftest import REPO, run_cli

FIXTURES = REPO / "crates" / "tinct-sys" / "tests" / "fixtures"
TREES = ["kvm-epyc", "intel-2node"]


@pytest.mark.parametrize("tree", TREES)
def test_doctor_matches_the_cli_on_a_captured_tree(tree):
    root = str(FIXTURES / tree)
    assert tinct.doctor_text(root) == run_cli("doctor", "--root", root).stdout
    expected = json.loads(run_cli("doctor", "--json", "--root", root).stdout)
    report = tinct.doctor(root)
    assert report == expected
    assert report["live"] is False
    assert set(report) == set(tinct.reports.DoctorReport.__annotations__) - {"color_probe"}


def test_doctor_of_this_machine_has_findings_and_the_count_line():
    report = tinct.doctor()
    assert report["live"] is True
    assert report["findings"], report
    assert "ok," in tinct.doctor_text().splitlines()[-1]


def test_a_root_that_is_not_a_directory_is_bad_input(tmp_path):
    with pytest.raises(tinct.BadInput) as error:
        tinct.doctor(str(tmp_path / "absent"))
    assert "root" in str(error.value) and "found nothing" in str(error.value)
    with pytest.raises(tinct.BadInput):
        tinct.doctor(str(FIXTURES / "kvm-epyc"), probe_colors=True)


XEON_VM = FIXTURES / "machines" / "kvm-xeon-emr"


@pytest.fixture
def no_machine_file(monkeypatch, tmp_path):
    """No machine file and no TINCT_COLOR_BITS of the caller's."""
    monkeypatch.setenv("TINCT_MACHINE_FILE", str(tmp_path / "absent.toml"))
    monkeypatch.delenv("TINCT_COLOR_BITS", raising=False)
    return tmp_path


def test_color_bits_come_from_the_same_sources_as_the_commands(monkeypatch, no_machine_file):
    monkeypatch.setenv("TINCT_COLOR_BITS", "12-15")
    from_env = tinct.color_bits()
    assert (from_env["bits"], from_env["colors"]) == ([12, 13, 14, 15], 16)
    assert from_env["source"] == {"kind": "environment"}
    assert "(from TINCT_COLOR_BITS)" in from_env["description"]
    given = tinct.color_bits("12-13")
    assert (given["colors"], given["source"]["kind"]) == (4, "flag")
    (no_machine_file / "machine.toml").write_text('[colors]\nbits = "12-14"\n')
    monkeypatch.setenv("TINCT_MACHINE_FILE", str(no_machine_file / "machine.toml"))
    monkeypatch.delenv("TINCT_COLOR_BITS")
    saved = tinct.color_bits()
    assert (saved["colors"], saved["source"]["kind"]) == (8, "machine_file")


def test_unknown_or_bad_color_bits_are_bad_input_naming_the_ways(monkeypatch, no_machine_file):
    monkeypatch.setenv("TINCT_TOPOLOGY_ROOT", str(XEON_VM))
    with pytest.raises(tinct.BadInput) as error:
        tinct.color_bits()
    message = str(error.value)
    for way in ("--color-bits", "TINCT_COLOR_BITS", "tinct doctor --save"):
        assert way in message, message
    with pytest.raises(tinct.BadInput) as error:
        tinct.color_bits("13-15")
    assert "page offset bit 12" in str(error.value)
    with pytest.raises(tinct.BadInput) as error:
        tinct.doctor(color_bits="12-x")
    assert "color_bits" in str(error.value)
