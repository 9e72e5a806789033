# Hidden test: put in place only at grading time, never in the agent's sandbox.
from statsmini import median


def test_median_even_hidden():
    assert median([10, 40, 20, 30]) == 25
    assert median([7, 1]) == 4
