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
from typing import Literal, get_args

import torch

LossVariant = Literal["grpo", "token", "dr_grpo"]
VARIANTS: tuple[str, ...] = get_args(LossVariant)


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
    """Log-probability of each label [B, T] (0 where the label is -100) and the entropy per position,
    from a model's full logits (the path of a model that changes its logits after the output layer).

    The log-probability is the label's logit minus the logsumexp of its row: log_softmax's value,
    without a [B, T, vocab] log_softmax kept alive for the backward pass (logsumexp's backward
    recomputes the softmax). The entropy is a metric, computed without gradient from that same
    logsumexp in chunks of rows: H = lse - sum(p * logits), one exp per logit.
    """
    logits = logits.float()
    safe = labels.clamp(min=0)
    lse = torch.logsumexp(logits, dim=-1)
    picked = logits.gather(-1, safe.unsqueeze(-1)).squeeze(-1) - lse
    with torch.no_grad():
        rows = logits.detach().reshape(-1, logits.shape[-1])
        norms = lse.detach().reshape(-1, 1)
        entropy = torch.empty(rows.shape[0], dtype=rows.dtype, device=rows.device)
        for start in range(0, rows.shape[0], ENTROPY_ROWS):
            chunk = rows[start : start + ENTROPY_ROWS]
            probs = (chunk - norms[start : start + ENTROPY_ROWS]).exp_()
            entropy[start : start + ENTROPY_ROWS] = norms[start : start + ENTROPY_ROWS, 0] - _row_dot(
                probs, chunk
            )
    return picked * (labels >= 0), entropy.view(logits.shape[:-1])


def _row_dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """sum(a * b, -1) per row, without an [rows, vocab] product in memory."""
    return torch.bmm(a.unsqueeze(1), b.unsqueeze(2)).view(-1)


def _label_softmax(logits: torch.Tensor, labels: torch.Tensor, entropy: bool):
    """One pass over a chunk's logits [n, vocab] (overwritten): the labels' log-probabilities [n],
    the entropy per row [n] (or None), the softmax [n, vocab] and the logsumexp [n]."""
    top = logits.amax(dim=-1, keepdim=True)
    shifted = logits.sub_(top)
    exp = shifted.exp()
    total = exp.sum(dim=-1, keepdim=True)
    log_total = total.log()
    picked = shifted.gather(-1, labels.unsqueeze(-1)).sub_(log_total).squeeze(-1)
    # H = -sum(p log p) = log Z - sum(exp(z) z) / Z, with z the shifted logits and Z their exp's sum.
    spread = (log_total.squeeze(-1) - _row_dot(exp, shifted) / total.squeeze(-1)) if entropy else None
    return picked, spread, exp.div_(total), (top + log_total).squeeze(-1)


class OutputLayerLogprobs(torch.autograd.Function):
    """A chunk of trained positions through the output layer: the label's log-probability (with its
    gradient) and the entropy (a metric: no gradient), from ONE softmax of the chunk's logits.

    d logp(label) / d logits = onehot(label) - softmax, so the backward pass needs the softmax
    only. `keep`: the softmax [n, vocab] is kept from the forward pass for the backward (one
    vocabulary-sized tensor per chunk until then); otherwise only the logsumexp [n] is kept and the
    backward recomputes the logits (one matmul) and the softmax from it (one exp): activation
    checkpointing, without the entropy or a second logsumexp. (Torch's autograd through
    logsumexp keeps the logits and recomputes their softmax in the backward pass; `checkpoint`
    around it, as this trainer used, recomputed the whole forward, entropy included.)

    The backward pass turns the softmax into the gradient in place (a fresh tensor the size of a
    chunk costs ten times the multiply on a CPU: new pages), so a second backward through the same
    graph (`retain_graph`) raises torch's in-place error instead of reusing it.
    """

    @staticmethod
    def forward(ctx, hidden, weight, bias, labels, keep: bool, entropy: bool):
        compute = torch.promote_types(hidden.dtype, torch.float32)
        logits = torch.nn.functional.linear(hidden, weight, bias).to(compute)
        picked, spread, probs, lse = _label_softmax(logits, labels, entropy)
        ctx.keep = keep
        if keep:
            ctx.save_for_backward(hidden, weight, labels, probs)
        else:
            ctx.save_for_backward(hidden, weight, bias, labels, lse)
        if spread is None:
            spread = torch.zeros_like(picked)
        ctx.mark_non_differentiable(spread)
        return picked, spread

    @staticmethod
    def backward(ctx, grad_picked, _grad_entropy):
        if ctx.keep:
            hidden, weight, labels, probs = ctx.saved_tensors
            bias_needed = ctx.needs_input_grad[2]
        else:
            hidden, weight, bias, labels, lse = ctx.saved_tensors
            bias_needed = bias is not None and ctx.needs_input_grad[2]
            logits = torch.nn.functional.linear(hidden, weight, bias).to(lse.dtype)
            probs = logits.sub_(lse.unsqueeze(-1)).exp_()
        grad = grad_picked.to(probs.dtype)
        # d logp / d logits = onehot(label) - softmax, times the incoming gradient, in place.
        grad_logits = probs.mul_(grad.neg().unsqueeze(-1))
        grad_logits.scatter_add_(-1, labels.unsqueeze(-1), grad.unsqueeze(-1))
        grad_logits = grad_logits.to(weight.dtype)
        grad_hidden = grad_logits @ weight if ctx.needs_input_grad[0] else None
        grad_weight = grad_logits.t() @ hidden if ctx.needs_input_grad[1] else None
        grad_bias = grad_logits.sum(0) if bias_needed else None
        return grad_hidden, grad_weight, grad_bias, None, None, None


def output_layer_logprobs(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    labels: torch.Tensor,
    keep: bool = True,
    entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """For rows `hidden` [n, d] and their labels [n] (all trained): log softmax(hidden W^T + b)[label]
    [n] with its gradient, and the entropy of each row [n] (no gradient; 0 with `entropy=False`).
    See OutputLayerLogprobs for `keep`."""
    return OutputLayerLogprobs.apply(hidden, weight, bias, labels, keep, entropy)


# Trained positions per chunk when the output layer runs apart from the decoder: the logits that
# exist at once are this many rows of the vocabulary (Qwen3: 1 024 x 151 936 floats, 0.6 GB),
# whatever the batch's length.
LOGIT_CHUNK = 1024
# The softmax of every trained position is kept for the backward pass when it (and one chunk's
# transient logits) fits in this share of the memory available after the decoder's forward pass;
# otherwise each chunk is recomputed in the backward pass.
KEEP_SHARE = 0.5
_split_checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def available_memory(device: torch.device) -> int | None:
    """Bytes a new tensor can still take on `device`: on CUDA the driver's free memory plus what
    torch's allocator holds unused; on the CPU Linux's MemAvailable, or the cgroup's limit less its
    use when that is lower (a container). None where it cannot be read."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    if device.type != "cpu":
        return None
    found = None
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as limit, open("/sys/fs/cgroup/memory.current") as used:
            cap = limit.read().strip()
            if cap != "max":
                left = int(cap) - int(used.read().strip())
                found = left if found is None else min(found, left)
    except (OSError, ValueError):
        pass
    return found


@dataclass(frozen=True)
class OutputLayerPlan:
    """How one forward pass runs the output layer: keep each trained position's softmax for the
    backward pass, or recompute it there (checkpointing), decided from the shape and the memory."""

    rows: int
    """Trained positions."""
    vocab: int
    keep_bytes: int
    """The softmax of every trained position (float32): what keeping costs until the backward pass."""
    available_bytes: int | None
    keep: bool

    def describe(self) -> str:
        shape = f"{self.rows} trained positions x {self.vocab} tokens"
        room = (
            "memory available unknown"
            if self.available_bytes is None
            else f"{_size(self.available_bytes)} available"
        )
        if self.keep:
            return f"output layer: softmax of {shape} kept for the backward pass ({_size(self.keep_bytes)}; {room})"
        return (
            f"output layer: recomputed in the backward pass, {LOGIT_CHUNK} positions at a time (keeping the softmax of "
            f"{shape} would take {_size(self.keep_bytes)}, over {KEEP_SHARE:.0%} of the {room})"
        )


def _size(count: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if count >= scale:
            return f"{count / scale:.2f} {unit}"
    return f"{count / 2**10:.2f} KiB"


def plan_output_layer(
    rows: int, vocab: int, device: torch.device, available: int | None = None
) -> OutputLayerPlan:
    """Keep when the softmax of `rows` positions plus one chunk's transient logits fit in
    KEEP_SHARE of the memory available (read now unless given); recompute otherwise, and when the
    memory cannot be read."""
    keep_bytes = rows * vocab * 4
    if available is None:
        available = available_memory(device)
    transient = 2 * min(rows, LOGIT_CHUNK) * vocab * 4
    keep = available is not None and keep_bytes + transient <= KEEP_SHARE * available
    return OutputLayerPlan(
        rows=rows, vocab=vocab, keep_bytes=keep_bytes, available_bytes=available, keep=keep
    )


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


def model_label_logprobs(
    model, input_ids, attention_mask, labels, on_plan=None, entropy: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """`token_logprobs(model(...).logits, labels)` without the [B, T, vocab] logits when the model
    splits at its output layer: the decoder's hidden states of the trained positions (label not
    -100) go through the output layer LOGIT_CHUNK rows at a time (`output_layer_logprobs`: one
    softmax per chunk gives the logprob, its gradient and the entropy). Whether the softmax is kept
    for the backward pass or recomputed there is `plan_output_layer`'s decision, taken after the
    decoder's forward pass from the trained positions, the vocabulary and the memory left;
    `on_plan` receives it. Untrained positions get 0, as token_logprobs gives them 0 (and their
    entropy is never counted: the loss mask is the labels' mask). `entropy=False` skips the metric
    (0 everywhere), as for the reference model."""
    if not splits_at_output_layer(model):
        return token_logprobs(model(input_ids=input_ids, attention_mask=attention_mask).logits, labels)
    head = model.get_output_embeddings()
    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    flat_labels = labels.reshape(-1)
    rows = (flat_labels >= 0).nonzero().squeeze(-1)
    trained = hidden.reshape(-1, hidden.shape[-1]).index_select(0, rows)
    chosen = flat_labels.index_select(0, rows)
    keep = True
    if torch.is_grad_enabled():
        plan = plan_output_layer(int(rows.shape[0]), head.weight.shape[0], hidden.device)
        keep = plan.keep
        if on_plan is not None:
            on_plan(plan)
    pieces, entropies = [], []
    for start in range(0, rows.shape[0], LOGIT_CHUNK):
        picked, spread = output_layer_logprobs(
            trained[start : start + LOGIT_CHUNK],
            head.weight,
            head.bias,
            chosen[start : start + LOGIT_CHUNK],
            keep,
            entropy,
        )
        pieces.append(picked)
        entropies.append(spread)
    total = flat_labels.shape[0]
    picked_all = torch.zeros(total, dtype=torch.float32, device=hidden.device)
    entropy_all = torch.zeros(total, dtype=torch.float32, device=hidden.device)
    if pieces:
        picked_all = picked_all.index_put((rows,), torch.cat(pieces).float())
        entropy_all[rows] = torch.cat(entropies).float()
    return picked_all.view(labels.shape), entropy_all.view(labels.shape)
