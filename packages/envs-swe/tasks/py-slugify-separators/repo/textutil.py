import re


def slugify(text):
    """Lower-case ASCII slug: letters and digits joined by hyphens."""
    lowered = text.lower()
    return re.sub(r"[^a-z0-9]", "-", lowered)
