"""Stub of openai-agents for the shears env-rollouts bench (not in the offline index): only
agents.function_schema.function_schema, which verifiers calls once per tool when the env is built
(never per rollout). It derives the JSON schema from the signature and docstring with pydantic."""
