"""Shared fixtures: the repository, the `tinct` binary the results are
compared with, and comparison helpers.

The CLI comparisons need the binary (`cargo build -p tinct-cli`, done by
scripts/test.sh). It is found at $TINCT_BIN or target/debug/tinct; a missing
binary fails the tests that need it (never a silent skip).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

REPO = Path(__file__).resolve().parents[3]
CRATE = REPO / "crates" / "tinct-py"
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))

sys.path.insert(0, str(CRATE / "bench"))


def tinct_binary() -> Path:
    explicit = os.environ.get("TINCT_BIN")
    path = Path(explicit) if explicit else REPO / "target" / "debug" / "tinct"
    if not path.is_file():
        pytest.fail(
            f"the tinct binary is needed for the CLI comparisons and is not at {path}: "
            "run `cargo build -p tinct-cli` (or set TINCT_BIN)"
        )
    return path


@pytest.fixture(scope="session")
def tinct_bin() -> Path:
    return tinct_binary()


def run_cli(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    """Runs `tinct ARGS` from the repository root with no saved calibration
    in the way (so Δ comes from the files, as it does for Python); a hang
    fails after `timeout` seconds."""
    env = dict(os.environ)
    env["TINCT_CALIBRATION"] = "/nonexistent/tinct-test-calibration.json"
    done = subprocess.run(
        [str(tinct_binary()), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"tinct {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


def cli_json(*args: str) -> Any:
    return json.loads(run_cli(*args).stdout)


def differences(ours: Any, theirs: Any, path: str = "") -> List[str]:
    """Every place where two JSON values differ, field by field (an empty
    list when they are identical, types included: 1 is not 1.0 or True)."""
    if type(ours) is not type(theirs):
        return [f"{path or '.'}: {ours!r} ({type(ours).__name__}) vs {theirs!r} ({type(theirs).__name__})"]
    if isinstance(ours, dict):
        found = []
        for key in sorted(set(ours) | set(theirs)):
            if key not in ours or key not in theirs:
                found.append(f"{path}.{key}: only in {'python' if key in ours else 'the CLI'}")
            else:
                found += differences(ours[key], theirs[key], f"{path}.{key}")
        return found
    if isinstance(ours, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items vs {len(theirs)}"]
        found = []
        for i, (a, b) in enumerate(zip(ours, theirs)):
            found += differences(a, b, f"{path}[{i}]")
        return found
    return [] if ours == theirs else [f"{path}: {ours!r} vs {theirs!r}"]


def assert_identical(ours: Any, theirs: Any) -> None:
    found = differences(ours, theirs)
    assert not found, "python and the CLI differ:\n" + "\n".join(found[:20])
