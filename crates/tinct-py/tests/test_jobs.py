"""`tinct.jobs()` (issue 26): a Python program as a tinct task on the
`futex` protocol. Under `tinct run` every job it is released is counted,
each ended by the loop coming round, and it exits when the run ends (no
kill). Outside tinct it raises OSError naming TINCT_JOB_FD."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

import tinct
from conftest import run_cli


def test_jobs_outside_tinct_names_the_variable(monkeypatch):
    monkeypatch.delenv("TINCT_JOB_FD", raising=False)
    with pytest.raises(OSError, match="TINCT_JOB_FD"):
        tinct.jobs()


def test_a_python_program_runs_its_jobs_over_the_futex_protocol(tmp_path):
    program = tmp_path / "smooth.py"
    program.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "import tinct\n"
        "values = [float(i % 17) for i in range(4096)]\n"
        "count = 0\n"
        "for job in tinct.jobs():\n"
        "    values = [v * 0.5 + 1.0 for v in values]\n"
        "    count += 1\n"
        "print(f'smooth: {count} jobs', file=sys.stderr)\n"
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    taskset = tmp_path / "set.toml"
    taskset.write_text(
        '[platform]\ncores = 1\npartitions = 4\nmemory = "16MiB"\nrefill = "10us"\n\n'
        '[[task]]\nname = "smooth"\nperiod = "20ms"\nmemory = "1MiB"\nwcet = "10ms"\n'
        'core = 0\nbody = { command = ["./smooth.py"], protocol = "futex" }\n'
    )
    out = tmp_path / "run"
    realtime = os.geteuid() == 0
    if not realtime and os.environ.get("TINCT_REQUIRE_PRIVILEGED") == "1":
        pytest.fail("SCHED_FIFO needs root where privileged tests are required")
    flags = [] if realtime else ["--no-rt"]
    done = run_cli(
        "run", *flags, "--duration", "1s", "-o", str(out), str(taskset), check=False, timeout=120
    )
    assert done.returncode in (0, 3), done.stderr
    summary = json.loads((out / "summary.json").read_text())
    task = summary["tasks"][0]
    jobs = task["jobs"]
    assert jobs["released"] == jobs["completed"] + jobs["missed"] + jobs["aborted"], jobs
    assert jobs["completed"] >= 45, jobs
    assert task["program"]["ended"] == "exit status 0", task["program"]
    assert not task["program"]["killed"], task["program"]
    stderr = (out / "programs" / "smooth.stderr").read_text()
    assert f"smooth: {jobs['completed']} jobs" in stderr, stderr
