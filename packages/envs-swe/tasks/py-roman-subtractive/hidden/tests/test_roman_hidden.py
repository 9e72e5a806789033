# Hidden test: put in place only at grading time, never in the agent's sandbox.
from roman import to_int


def test_subtractive_hidden():
    assert to_int("XLIX") == 49
    assert to_int("cdxliv") == 444
