from config import deep_merge


def test_flat_merge():
    assert deep_merge({"a": 1, "b": 2}, {"b": 3}) == {"a": 1, "b": 3}


def test_nested_merge():
    base = {"db": {"host": "a", "port": 1}}
    assert deep_merge(base, {"db": {"port": 2}}) == {"db": {"host": "a", "port": 2}}
    assert base == {"db": {"host": "a", "port": 1}}


def test_override_non_dict():
    assert deep_merge({"a": {"x": 1}}, {"a": 5}) == {"a": 5}
