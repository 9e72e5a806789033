# Hidden test: put in place only at grading time, never in the agent's sandbox.
from config import deep_merge


def test_nested_merge_hidden():
    base = {"a": {"b": {"c": 1, "d": 2}}, "e": 5}
    override = {"a": {"b": {"d": 3}, "f": 4}}
    assert deep_merge(base, override) == {"a": {"b": {"c": 1, "d": 3}, "f": 4}, "e": 5}
    assert base == {"a": {"b": {"c": 1, "d": 2}}, "e": 5}
