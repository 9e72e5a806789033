"""Stub of jsonlines for the shears env-rollouts bench (not in the offline index).
Off the measured path: Atropos opens it only to save groups to a file, which the bench does not ask for."""
def open(*args, **kwargs):
    raise RuntimeError("jsonlines is a stub in this venv (shears bench)")
Writer = object
