from ranges import parse_range, parse_ranges


def test_parse_single():
    assert parse_range("5") == [5]


def test_parse_range_inclusive():
    assert parse_range("1-3") == [1, 2, 3]


def test_parse_ranges_list():
    assert parse_ranges("1-2, 7") == [1, 2, 7]
