"""`pip install ./crates/tinct-py` works in a fresh venv: maturin from PyPI
builds the abi3 wheel, which carries the type stubs, and the package runs."""

from __future__ import annotations

import subprocess
import sys
import venv

from conftest import CRATE, REPO


def test_pip_install_into_a_fresh_venv(tmp_path):
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(CRATE)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    check = (
        "import pathlib, tinct, tinct._tinct as t\n"
        "assert t.__file__.endswith('.abi3.so'), t.__file__\n"
        "here = pathlib.Path(tinct.__file__).parent\n"
        "assert (here / 'py.typed').exists() and (here / '_tinct.pyi').exists()\n"
        f"s = tinct.TaskSet.load({str(REPO / 'examples' / 'kim2013-table2.toml')!r})\n"
        "print(s.analyze()['schedulable'], tinct.analyze_batch([[1, 2]], [[4, 6]]).response_time.tolist())\n"
    )
    done = subprocess.run([str(python), "-c", check], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "[[1,", "3]]"]
    assert sys.prefix != str(tmp_path / "venv")
