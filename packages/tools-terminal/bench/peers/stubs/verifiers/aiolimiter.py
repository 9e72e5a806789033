"""Stub of aiolimiter for the shears env-rollouts bench (not in the offline index).
Off the measured path: only verifiers' hosted-sandbox mixin uses AsyncLimiter."""


class AsyncLimiter:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("aiolimiter is a stub in this venv (shears bench)")
