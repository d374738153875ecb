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
