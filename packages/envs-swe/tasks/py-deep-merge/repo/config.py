def deep_merge(base, override):
    """Return a new dict: base updated with override, recursively for nested dicts."""
    result = dict(base)
    for key, value in override.items():
        result[key] = value
    return result
