"""Stub of `renderers` for the shears env-rollouts bench (not in the offline index).
Off the measured path: verifiers names RendererConfig in a type and uses the package only in its
renderer client (token-level rendering); the bench uses the OpenAI chat client."""
from pydantic import BaseModel


class RendererConfig(BaseModel):  # only a field type in verifiers.legacy.types.ClientConfig
    pass
