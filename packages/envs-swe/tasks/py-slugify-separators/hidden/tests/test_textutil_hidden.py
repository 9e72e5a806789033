# Hidden test: put in place only at grading time, never in the agent's sandbox.
from textutil import slugify


def test_slugify_hidden():
    assert slugify("  Many   spaces & symbols!!  ") == "many-spaces-symbols"
