# Hidden test: put in place only at grading time, never in the agent's sandbox.
from ranges import parse_range


def test_parse_range_inclusive_hidden():
    assert parse_range("7-9") == [7, 8, 9]
    assert parse_range(" 4-4 ") == [4]
