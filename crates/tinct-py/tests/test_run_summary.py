"""tinct.reports.RunSummary declares every key of a run's summary.json, no
more: a field added to the Rust summary without its declaration fails here.
Needs only the `tinct` binary (reports.py is read on its own, without the
compiled package)."""

from __future__ import annotations

import importlib.util
import json

from conftest import CRATE, REPO, run_cli


def reports_module():
    path = CRATE / "python" / "tinct" / "reports.py"
    spec = importlib.util.spec_from_file_location("tinct_reports_alone", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_run_summary_declares_every_key(tmp_path):
    out = tmp_path / "run"
    run_cli(
        "run", "--no-rt", "--uncolored", "--duration", "50ms", "-o", str(out),
        str(REPO / "examples" / "light.toml"),
    )
    summary = json.loads((out / "summary.json").read_text())
    declared = set(reports_module().RunSummary.__annotations__)
    assert set(summary) == declared
    assert "colored_pages_absent" in summary
