def parse_range(spec):
    """Parse "a-b" (inclusive) or a single number into a list of ints."""
    spec = spec.strip()
    if "-" not in spec:
        return [int(spec)]
    start, end = spec.split("-", 1)
    return list(range(int(start), int(end)))


def parse_ranges(spec):
    result = []
    for part in spec.split(","):
        if part.strip():
            result.extend(parse_range(part))
    return result
