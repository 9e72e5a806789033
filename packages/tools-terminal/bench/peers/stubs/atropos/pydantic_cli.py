"""Stub of pydantic_cli for the shears env-rollouts bench (not in the offline index).
Off the measured path: only Atropos's command-line entry points use it; the bench builds envs in code."""
from pydantic import BaseModel
class Cmd(BaseModel):
    pass
class FailedExecutionException(Exception):
    def __init__(self, message="", exit_code=1):
        super().__init__(message)
        self.exit_code = exit_code
def run_and_exit(*args, **kwargs):
    raise RuntimeError("pydantic_cli is a stub in this venv (shears bench)")
