# Hidden test: put in place only at grading time, never in the agent's sandbox.
from wordcount import count_words


def test_case_and_punctuation_hidden():
    assert count_words("Dog, dog; DOG? bird.") == {"dog": 3, "bird": 1}
