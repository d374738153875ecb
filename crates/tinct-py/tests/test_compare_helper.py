"""The field-by-field comparison the CLI tests rely on can fail."""

from conftest import differences


def test_differences_finds_values_types_and_missing_keys():
    assert differences({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == []
    assert differences({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == [".a[1].b: 2 vs 3"]
    assert differences({"a": 1}, {"a": 1.0}) != []
    assert differences({"a": 1}, {"a": True}) != []
    assert differences({"a": 1}, {"a": 1, "b": None}) == [".b: only in the CLI"]
    assert differences([1, 2], [1]) == [": 2 items vs 1"]
