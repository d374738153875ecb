"""The examples in the docstrings run."""

import doctest

import pytest

import tinct
import tinct.batch


@pytest.mark.parametrize("module", [tinct, tinct.batch], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_readme_examples(monkeypatch):
    """The `>>>` examples of the package's README run, from the
    repository's root as the README's paths are written."""
    from conftest import CRATE, REPO

    monkeypatch.chdir(REPO)
    result = doctest.testfile(str(CRATE / "README.md"), module_relative=False)
    assert result.attempted > 0 and result.failed == 0
