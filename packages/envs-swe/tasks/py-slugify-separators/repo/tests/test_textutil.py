from textutil import slugify


def test_slugify_simple():
    assert slugify("hello") == "hello"


def test_slugify_collapses_separators():
    assert slugify("Hello,  World!") == "hello-world"


def test_slugify_trims_hyphens():
    assert slugify("  --Tea & Cake--  ") == "tea-cake"
