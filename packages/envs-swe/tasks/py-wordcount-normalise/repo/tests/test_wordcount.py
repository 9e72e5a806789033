from wordcount import count_words, most_common


def test_simple():
    assert count_words("a b a") == {"a": 2, "b": 1}


def test_case_and_punctuation():
    assert count_words("The cat. the CAT!") == {"the": 2, "cat": 2}


def test_most_common():
    assert most_common("x y y", 1) == [("y", 2)]
