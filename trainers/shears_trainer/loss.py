"""The GRPO loss, in one function.

Per trained token t of sequence i, with logp the current policy's log-probability of the sampled
token, old the sampling policy's (the inference logprobs the server returned) and A the advantage:

    ratio  = exp(logp - old)
    pg     = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A)        (PPO clipping)
    kl     = exp(ref - logp) - (ref - logp) - 1                                  (k3 estimator, >= 0)
    token  = pg + beta * kl

and the tokens are summed with weights that name the variant:

    "grpo"    mean over each sequence's tokens, then mean over sequences (the GRPO paper);
    "token"   sum over all tokens / number of trained tokens in the batch (DAPO's token-level mean);
    "dr_grpo" sum over all tokens / (sequences * max_tokens), a constant: no length bias (Dr. GRPO).

Weights are computed over the whole batch once, so splitting it into micro-batches for gradient
accumulation gives exactly the same gradient as one pass.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch
from torch.utils.checkpoint import checkpoint

VARIANTS = ("grpo", "token", "dr_grpo")


def token_weights(loss_mask: torch.Tensor, variant: str, max_tokens: int | None = None) -> torch.Tensor:
    """Per-token weights [B, T] summing the per-token loss into the variant's aggregate."""
    if variant not in VARIANTS:
        raise ValueError(f'loss variant "{variant}" is not one of {", ".join(VARIANTS)}')
    rows = loss_mask.shape[0]
    if variant == "grpo":
        per_sequence = loss_mask.sum(dim=1, keepdim=True).clamp(min=1.0)
        return loss_mask / per_sequence / rows
    if variant == "token":
        return loss_mask / loss_mask.sum().clamp(min=1.0)
    constant = max_tokens if max_tokens is not None else loss_mask.shape[1]
    return loss_mask / (rows * constant)


@dataclass
class LossParts:
    loss: torch.Tensor
    """Scalar to backpropagate (already weighted)."""
    policy: torch.Tensor
    kl: torch.Tensor
    clip_fraction: torch.Tensor
    """Share of trained tokens whose gradient the clip removed."""
    ratio_mean: torch.Tensor


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    ref_logprobs: torch.Tensor | None = None,
    beta: float = 0.0,
) -> LossParts:
    """All inputs [B, T]; `weights` from `token_weights` (0 where not trained)."""
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantages
    per_token = -torch.minimum(unclipped, clipped)
    policy = (per_token * weights).sum()
    if ref_logprobs is not None and beta > 0:
        delta = ref_logprobs - logprobs
        kl_token = torch.exp(delta) - delta - 1.0
        kl = (kl_token * weights).sum()
    else:
        kl = torch.zeros((), dtype=logprobs.dtype)
    with torch.no_grad():
        trained = (weights > 0).to(weights.dtype)
        count = trained.sum().clamp(min=1.0)
        clip_fraction = ((clipped < unclipped).to(weights.dtype) * trained).sum() / count
        ratio_mean = (ratio * trained).sum() / count
    return LossParts(
        loss=policy + beta * kl, policy=policy, kl=kl, clip_fraction=clip_fraction, ratio_mean=ratio_mean
    )


# Rows of [*, vocab] per entropy chunk: bounds the metric's transient memory (a Qwen3 vocabulary
# of 151 936 floats is 0.6 MB a row, so 1 024 rows are 0.6 GB).
ENTROPY_ROWS = 1024


def token_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of each label [B, T] (0 where the label is -100) and the entropy per position.

    The log-probability is the label's logit minus the logsumexp of its row: log_softmax's value,
    without a [B, T, vocab] log_softmax kept alive for the backward pass (logsumexp's backward
    recomputes the softmax). The entropy is a metric: computed without gradient, in chunks of rows,
    so no [B, T, vocab] tensor of it outlives the call (with gradient, its exp and product stayed
    alive through the backward pass: two more tensors the size of the logits).
    """
    logits = logits.float()
    safe = labels.clamp(min=0)
    picked = logits.gather(-1, safe.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    with torch.no_grad():
        rows = logits.detach().reshape(-1, logits.shape[-1])
        entropy = torch.empty(rows.shape[0], dtype=rows.dtype, device=rows.device)
        for start in range(0, rows.shape[0], ENTROPY_ROWS):
            chunk = torch.log_softmax(rows[start : start + ENTROPY_ROWS], dim=-1)
            entropy[start : start + ENTROPY_ROWS] = -(chunk.exp() * chunk).sum(-1)
    return picked * (labels >= 0), entropy.view(logits.shape[:-1])


# Trained positions per chunk when the output layer runs apart from the decoder: the logits that
# exist at once are this many rows of the vocabulary (Qwen3: 1 024 x 151 936 floats, 0.6 GB),
# whatever the batch's length.
LOGIT_CHUNK = 1024
_split_checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def splits_at_output_layer(model) -> bool:
    """Whether the model's logits are exactly its output layer applied to its decoder's last hidden
    state (plain causal LMs: Llama, Qwen, Mistral, with or without LoRA), checked once per model on a
    short input. A model that changes them after that layer (logit soft-capping or scaling) fails
    the check, and its full logits are used."""
    known = _split_checked.get(model)
    if known is not None:
        return known
    ok = False
    try:
        decoder, head = model.get_decoder(), model.get_output_embeddings()
        if decoder is not None and isinstance(head, torch.nn.Linear):
            device = head.weight.device
            ids = (torch.arange(8, device=device) % head.weight.shape[0]).unsqueeze(0)
            attention = torch.ones_like(ids)
            training = model.training
            model.eval()
            try:
                with torch.no_grad():
                    full = model(input_ids=ids, attention_mask=attention).logits.float()
                    hidden = decoder(input_ids=ids, attention_mask=attention).last_hidden_state
                    split = head(hidden).float()
            finally:
                model.train(training)
            scale = float(full.abs().max()) or 1.0
            ok = full.shape == split.shape and bool(torch.allclose(full, split, rtol=1e-5, atol=1e-5 * scale))
    except (AttributeError, NotImplementedError, TypeError, ValueError):
        ok = False
    _split_checked[model] = ok
    return ok


def _chunk_logprobs(hidden, labels, weight, bias):
    return token_logprobs(torch.nn.functional.linear(hidden, weight, bias), labels)


def model_label_logprobs(model, input_ids, attention_mask, labels) -> tuple[torch.Tensor, torch.Tensor]:
    """`token_logprobs(model(...).logits, labels)` without the [B, T, vocab] logits when the model
    splits at its output layer: the decoder's hidden states of the trained positions (label not
    -100) go through the output layer LOGIT_CHUNK rows at a time, each chunk's logits recomputed in
    the backward pass instead of kept (activation checkpointing), so memory for logits no longer
    grows with the batch's length. Untrained positions get 0, as token_logprobs gives them 0 (and
    their entropy is never counted: the loss mask is the labels' mask)."""
    if not splits_at_output_layer(model):
        return token_logprobs(model(input_ids=input_ids, attention_mask=attention_mask).logits, labels)
    head = model.get_output_embeddings()
    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    flat_labels = labels.reshape(-1)
    rows = (flat_labels >= 0).nonzero().squeeze(-1)
    trained = hidden.reshape(-1, hidden.shape[-1]).index_select(0, rows)
    chosen = flat_labels.index_select(0, rows)
    pieces, entropies = [], []
    for start in range(0, rows.shape[0], LOGIT_CHUNK):
        args = (
            trained[start : start + LOGIT_CHUNK],
            chosen[start : start + LOGIT_CHUNK],
            head.weight,
            head.bias,
        )
        if torch.is_grad_enabled():
            picked, entropy = checkpoint(_chunk_logprobs, *args, use_reentrant=False)
        else:
            picked, entropy = _chunk_logprobs(*args)
        pieces.append(picked)
        entropies.append(entropy)
    total = flat_labels.shape[0]
    picked_all = torch.zeros(total, dtype=torch.float32, device=hidden.device)
    entropy_all = torch.zeros(total, dtype=torch.float32, device=hidden.device)
    if pieces:
        picked_all = picked_all.index_put((rows,), torch.cat(pieces))
        entropy_all[rows] = torch.cat(entropies)
    return picked_all.view(labels.shape), entropy_all.view(labels.shape)
