"""Off-policy lag per record: how many optimiser steps the trainer's weights are ahead of the
weights that sampled a sequence, when it consumes it.

shears' managed server reads the `policy_version` the colocated policy server sends and puts the
oldest version that sampled into each sequence in `overrides[i]["policy_version"]` (a server that
sends no version, such as vLLM, leaves it out). lag = the trainer's policy version at consumption
(optimiser steps taken so far) − that version; 0 is on-policy.
"""

from __future__ import annotations


def policy_lags(groups: list[dict], version_at_consumption: int) -> list[int | None]:
    """One lag per sequence of the batch, in order; None where the record carries no version."""
    lags: list[int | None] = []
    for group in groups:
        count = len(group.get("tokens") or [])
        overrides = group.get("overrides")
        for index in range(count):
            override = overrides[index] if isinstance(overrides, list) and index < len(overrides) else None
            version = override.get("policy_version") if isinstance(override, dict) else None
            if isinstance(version, float) and version.is_integer():
                version = int(version)
            lags.append(
                version_at_consumption - version
                if isinstance(version, int) and not isinstance(version, bool)
                else None
            )
    return lags


def lag_metrics(groups: list[dict], version_at_consumption: int) -> dict:
    """The metrics record's lag fields: every sequence's lag, and their mean and max."""
    lags = policy_lags(groups, version_at_consumption)
    known = [lag for lag in lags if lag is not None]
    return {
        "policy_lags": lags,
        "policy_lag_mean": round(sum(known) / len(known), 4) if known else None,
        "policy_lag_max": max(known) if known else None,
    }
