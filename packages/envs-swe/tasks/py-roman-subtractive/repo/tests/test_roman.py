import pytest
from roman import to_int


def test_additive():
    assert to_int("XIII") == 13


def test_subtractive():
    assert to_int("IV") == 4
    assert to_int("IX") == 9


def test_long_numeral():
    assert to_int("MCMXCIV") == 1994


def test_invalid():
    with pytest.raises(ValueError):
        to_int("ABC")
