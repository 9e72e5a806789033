"""Stub of wandb for the shears env-rollouts bench (wandb does not install offline here).
Off the measured path: the bench runs Atropos with use_wandb=False, so nothing here is called."""
def _off(*args, **kwargs):
    raise RuntimeError("wandb is a stub in this venv (shears bench); run with use_wandb=False")
init = log = finish = Table = _off
run = None
