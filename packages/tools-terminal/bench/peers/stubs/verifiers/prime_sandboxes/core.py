"""Stub of prime-sandboxes for the shears env-rollouts bench (not in the offline index).
Off the measured path: verifiers.legacy.envs imports its hosted-sandbox mixins at package import;
the bench's ToolEnv never touches a hosted sandbox. Every name is a placeholder class."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (Exception,), {"__module__": __name__})
