"""Stub of setproctitle for the shears env-rollouts bench (not in the offline index).
Off the measured path: verifiers names its server worker processes with it; the bench runs no workers."""


def setproctitle(title):
    pass


def getproctitle():
    return ""
