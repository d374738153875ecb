"""The examples in the docstrings run."""

import doctest

import pytest

import tinct
import tinct.batch


@pytest.mark.parametrize("module", [tinct, tinct.batch], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
