"""Tensors from a `/batch` of the trajectory API.

A batch is a list of groups (Atropos `ScoredData`, all 14 keys). Each sequence becomes one row:
the model reads tokens[:-1] and is trained to predict tokens[1:] wherever the mask holds the
token id (-100 = prompt or tool output, not trained). JSON spells the same number many ways
(`7`, `7.0`, `7e0`, `70E-1`); Python's json module turns some of them into floats, so every
field gets its dtype here, checked, never by accident of spelling: token ids and masks must be
whole numbers (`long`), scores, advantages and logprobs finite reals (`float32`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

IGNORE = -100


class BatchError(ValueError):
    """A served group that cannot be trained on; the message names the group, sequence and field."""


def _where(group: int, sequence: int | None, field: str, position: int | None = None) -> str:
    at = f"group {group}"
    if sequence is not None:
        at += f", sequence {sequence}"
    at += f", {field}"
    if position is not None:
        at += f"[{position}]"
    return at


def as_int(value: object, where: str) -> int:
    """A whole number however JSON spelled it (7, 7.0, 7e0); anything else is an error."""
    if isinstance(value, bool):
        raise BatchError(f"{where}: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        raise BatchError(f"{where}: expected an integer, got {value!r}")
    raise BatchError(f"{where}: expected an integer, got {type(value).__name__} {value!r}")


def as_float(value: object, where: str) -> float:
    """A finite real number (an int spelling such as `1` is fine); NaN, inf and strings are errors."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BatchError(f"{where}: expected a number, got {type(value).__name__} {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise BatchError(f"{where}: expected a finite number, got {value!r}")
    return number


def _row(values: object, length: int, where: str, convert) -> list:
    if not isinstance(values, list):
        raise BatchError(f"{where}: expected a list, got {type(values).__name__}")
    if len(values) != length:
        raise BatchError(f"{where}: has {len(values)} entries, tokens have {length}")
    return [convert(value, f"{where}[{index}]") for index, value in enumerate(values)]


@dataclass
class Sequence:
    tokens: list[int]
    masks: list[int]
    advantages: list[float]
    """One per token (0 where not trained)."""
    inference_logprobs: list[float] | None
    ref_logprobs: list[float] | None
    score: float
    group: int


@dataclass
class TrainBatch:
    """Right-padded rows; position t holds what the model predicts after reading tokens[: t + 1]."""

    input_ids: torch.Tensor  # long [B, T]: tokens[:-1]
    labels: torch.Tensor  # long [B, T]: tokens[1:], IGNORE where not trained
    loss_mask: torch.Tensor  # float32 [B, T]: 1 where trained
    attention_mask: torch.Tensor  # long [B, T]
    advantages: torch.Tensor  # float32 [B, T]
    old_logprobs: torch.Tensor | None  # float32 [B, T]: the sampling policy's, None when not served
    ref_logprobs: torch.Tensor | None  # float32 [B, T]
    scores: torch.Tensor  # float32 [B]
    advantage_source: str  # "served" (per-token from the group) or "scores" (normalised here)

    @property
    def trained_tokens(self) -> int:
        return int(self.loss_mask.sum().item())


def advantages_from_scores(scores: list[float], eps: float = 1e-6) -> list[float]:
    """GRPO's group-relative advantage: (score - mean) / (std + eps), std over the group (ddof 0)."""
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((score - mean) ** 2 for score in scores) / len(scores))
    return [(score - mean) / (std + eps) for score in scores]


def optional_rows(group: dict, field: str):
    """An optional per-sequence field; `[]` means absent, as Atropos's BaseEnv sends `advantages`,
    `ref_logprobs` and the like when it has none (the API accepts it the same way)."""
    value = group.get(field)
    return None if isinstance(value, list) and not value else value


def sequences_from_groups(groups: list[dict], use_served_advantages: bool = True) -> list[Sequence]:
    """Checks every group and turns it into sequences; advantages per token when the group carries
    them (shears sends them), else group-normalised scores spread over the trained tokens."""
    if not isinstance(groups, list) or not groups:
        raise BatchError("batch: expected a non-empty list of groups")
    out: list[Sequence] = []
    for g, group in enumerate(groups):
        if not isinstance(group, dict):
            raise BatchError(f"group {g}: expected an object, got {type(group).__name__}")
        tokens = group.get("tokens")
        masks = group.get("masks")
        scores = group.get("scores")
        if not isinstance(tokens, list) or not tokens:
            raise BatchError(f"{_where(g, None, 'tokens')}: expected a non-empty list of sequences")
        for field, value in (("masks", masks), ("scores", scores)):
            if not isinstance(value, list) or len(value) != len(tokens):
                raise BatchError(
                    f"{_where(g, None, field)}: expected {len(tokens)} entries (one per sequence), "
                    f"got {value!r:.80}"
                )
        score_values = [as_float(score, _where(g, s, "scores")) for s, score in enumerate(scores)]
        served_advantages = optional_rows(group, "advantages") if use_served_advantages else None
        overrides = group.get("overrides") or [None] * len(tokens)
        group_advantages = advantages_from_scores(score_values) if served_advantages is None else None
        for s, row in enumerate(tokens):
            ids = _row(row, len(row) if isinstance(row, list) else -1, _where(g, s, "tokens"), as_int)
            if len(ids) < 2:
                raise BatchError(f"{_where(g, s, 'tokens')}: a sequence needs at least 2 tokens")
            mask = _row(masks[s], len(ids), _where(g, s, "masks"), as_int)
            for t, (label, token) in enumerate(zip(mask, ids)):
                if label != IGNORE and label != token:
                    raise BatchError(
                        f"{_where(g, s, 'masks', t)}: is {label}, expected -100 or the token id {token}"
                    )
            if served_advantages is not None:
                row_adv = served_advantages[s] if isinstance(served_advantages, list) else None
                if isinstance(row_adv, (int, float)) and not isinstance(row_adv, bool):
                    # One advantage per sequence (some trainers send that): spread it over the tokens.
                    value = as_float(row_adv, _where(g, s, "advantages"))
                    advantages = [value if m != IGNORE else 0.0 for m in mask]
                else:
                    advantages = _row(row_adv, len(ids), _where(g, s, "advantages"), as_float)
            else:
                value = group_advantages[s]
                advantages = [value if m != IGNORE else 0.0 for m in mask]
            override = overrides[s] if isinstance(overrides, list) and s < len(overrides) else None
            if isinstance(override, dict) and override.get("set_advantage_to_zero"):
                advantages = [0.0] * len(ids)
            inference = optional_rows(group, "inference_logprobs")
            reference = optional_rows(group, "ref_logprobs")
            out.append(
                Sequence(
                    tokens=ids,
                    masks=mask,
                    advantages=advantages,
                    inference_logprobs=None
                    if inference is None
                    else _row(inference[s], len(ids), _where(g, s, "inference_logprobs"), as_float),
                    ref_logprobs=None
                    if reference is None
                    else _row(reference[s], len(ids), _where(g, s, "ref_logprobs"), as_float),
                    score=score_values[s],
                    group=g,
                )
            )
    return out


def collate(sequences: list[Sequence], pad_id: int = 0, advantage_source: str = "served") -> TrainBatch:
    """Right-pads the shifted rows into one batch. Logprobs are kept only if every sequence has them."""
    width = max(len(sequence.tokens) for sequence in sequences) - 1
    rows = len(sequences)
    input_ids = torch.full((rows, width), pad_id, dtype=torch.long)
    labels = torch.full((rows, width), IGNORE, dtype=torch.long)
    attention = torch.zeros((rows, width), dtype=torch.long)
    advantages = torch.zeros((rows, width), dtype=torch.float32)
    has_old = all(sequence.inference_logprobs is not None for sequence in sequences)
    has_ref = all(sequence.ref_logprobs is not None for sequence in sequences)
    old = torch.zeros((rows, width), dtype=torch.float32) if has_old else None
    ref = torch.zeros((rows, width), dtype=torch.float32) if has_ref else None
    for row, sequence in enumerate(sequences):
        n = len(sequence.tokens) - 1
        input_ids[row, :n] = torch.tensor(sequence.tokens[:-1], dtype=torch.long)
        labels[row, :n] = torch.tensor(sequence.masks[1:], dtype=torch.long)
        attention[row, :n] = 1
        advantages[row, :n] = torch.tensor(sequence.advantages[1:], dtype=torch.float32)
        if old is not None:
            old[row, :n] = torch.tensor(sequence.inference_logprobs[1:], dtype=torch.float32)
        if ref is not None:
            ref[row, :n] = torch.tensor(sequence.ref_logprobs[1:], dtype=torch.float32)
    loss_mask = (labels != IGNORE).to(torch.float32)
    return TrainBatch(
        input_ids=input_ids,
        labels=labels,
        loss_mask=loss_mask,
        attention_mask=attention,
        advantages=advantages * loss_mask,
        old_logprobs=old,
        ref_logprobs=ref,
        scores=torch.tensor([sequence.score for sequence in sequences], dtype=torch.float32),
        advantage_source=advantage_source,
    )


def batch_from_groups(groups: list[dict], pad_id: int = 0, use_served_advantages: bool = True) -> TrainBatch:
    sequences = sequences_from_groups(groups, use_served_advantages)
    served = use_served_advantages and all(optional_rows(group, "advantages") is not None for group in groups)
    return collate(sequences, pad_id, "served" if served else "scores")
