"""The GRPO loss against cases worked out by hand."""

import math

import pytest
import torch

from shears_trainer.loss import grpo_loss, token_logprobs, token_weights


def one_token(logp: float, old: float, advantage: float, **kwargs):
    logprobs = torch.tensor([[logp]], requires_grad=True)
    parts = grpo_loss(
        logprobs, torch.tensor([[old]]), torch.tensor([[advantage]]), torch.tensor([[1.0]]), **kwargs
    )
    parts.loss.backward()
    parts.loss = parts.loss.detach()
    return parts, float(logprobs.grad[0, 0])


def test_on_policy_token_is_minus_the_advantage_with_gradient_minus_advantage():
    parts, grad = one_token(-1.0, -1.0, 2.0)
    assert float(parts.loss) == pytest.approx(-2.0)
    assert grad == pytest.approx(-2.0)  # d(-ratio * A)/dlogp = -ratio * A
    assert float(parts.clip_fraction) == 0.0


def test_positive_advantage_above_the_clip_has_no_gradient():
    # ratio = e^0.5 = 1.6487 > 1.2: the clipped term 1.2 * 1 is the smaller one.
    parts, grad = one_token(-0.5, -1.0, 1.0)
    assert float(parts.loss) == pytest.approx(-1.2)
    assert grad == 0.0
    assert float(parts.clip_fraction) == 1.0


def test_negative_advantage_below_the_clip_has_no_gradient():
    # ratio = e^-0.5 = 0.6065; unclipped -0.6065, clipped 0.8 * -1 = -0.8; min is -0.8 → loss 0.8.
    parts, grad = one_token(-1.5, -1.0, -1.0)
    assert float(parts.loss) == pytest.approx(0.8)
    assert grad == 0.0
    assert float(parts.clip_fraction) == 1.0


def test_negative_advantage_above_the_clip_keeps_its_gradient():
    # ratio = e^0.5; unclipped -1.6487 < clipped -1.2 → loss 1.6487, gradient ratio * 1.
    parts, grad = one_token(-0.5, -1.0, -1.0)
    assert float(parts.loss) == pytest.approx(math.exp(0.5))
    assert grad == pytest.approx(math.exp(0.5))
    assert float(parts.clip_fraction) == 0.0


def test_asymmetric_clip_bounds():
    parts, _ = one_token(-0.5, -1.0, 1.0, clip_low=0.2, clip_high=0.28)
    assert float(parts.loss) == pytest.approx(-1.28)


def test_k3_kl_to_the_reference():
    # ref - logp = 1: e^1 - 1 - 1 = 0.71828; beta 0.5 adds half of it.
    parts, _ = one_token(-2.0, -2.0, 0.0, ref_logprobs=torch.tensor([[-1.0]]), beta=0.5)
    assert float(parts.kl) == pytest.approx(math.e - 2)
    assert float(parts.loss) == pytest.approx(0.5 * (math.e - 2))
    same, _ = one_token(-2.0, -2.0, 0.0, ref_logprobs=torch.tensor([[-2.0]]), beta=0.5)
    assert float(same.kl) == pytest.approx(0.0)


def test_variants_weigh_a_short_and_a_long_sequence_differently():
    # Two sequences: 1 trained token with advantage 1, 3 trained tokens with advantage 2 (on policy,
    # so each token's loss is -A). Row width 4 (one padding column on each row).
    mask = torch.tensor([[1.0, 0, 0, 0], [1.0, 1, 1, 0]])
    advantages = torch.tensor([[1.0, 0, 0, 0], [2.0, 2, 2, 0]])
    logprobs = torch.full((2, 4), -1.0)

    def loss(variant, max_tokens=None):
        weights = token_weights(mask, variant, max_tokens)
        return float(grpo_loss(logprobs, logprobs, advantages, weights).loss)

    assert loss("grpo") == pytest.approx(-(1 + 2) / 2)  # mean of the per-sequence means
    assert loss("token") == pytest.approx(-(1 + 6) / 4)  # mean over the 4 trained tokens
    assert loss("dr_grpo", max_tokens=8) == pytest.approx(-(1 + 6) / (2 * 8))  # constant normaliser
    assert loss("dr_grpo") == pytest.approx(-(1 + 6) / (2 * 4))  # default constant: the row width
    with pytest.raises(ValueError, match="not one of grpo, token, dr_grpo"):
        token_weights(mask, "ppo")


def test_micro_batches_accumulate_to_the_full_batch_gradient():
    torch.manual_seed(0)
    mask = torch.tensor([[1.0, 1, 0], [1.0, 1, 1], [1.0, 0, 0], [0.0, 1, 1]])
    advantages = torch.randn(4, 3) * mask
    old = torch.randn(4, 3) * 0.1 - 1
    weights = token_weights(mask, "grpo")
    full = (old + torch.randn(4, 3) * 0.1).requires_grad_(True)
    grpo_loss(full, old, advantages, weights).loss.backward()
    split = full.detach().clone().requires_grad_(True)
    for rows in (slice(0, 1), slice(1, 4)):
        grpo_loss(split[rows], old[rows], advantages[rows], weights[rows]).loss.backward()
    assert torch.allclose(full.grad, split.grad)


def test_token_logprobs_and_entropy():
    logits = torch.log(torch.tensor([[[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]]]))
    labels = torch.tensor([[0, -100]])
    picked, entropy = token_logprobs(logits, labels)
    assert float(picked[0, 0]) == pytest.approx(math.log(0.5))
    assert float(picked[0, 1]) == 0.0
    assert float(entropy[0, 1]) == pytest.approx(math.log(3))


def test_token_logprobs_match_log_softmax_with_its_gradient():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 50, requires_grad=True)
    labels = torch.randint(0, 50, (3, 5))
    labels[0, 0] = -100
    picked, _ = token_logprobs(logits, labels)
    expected = torch.log_softmax(logits, -1).gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    expected = expected * (labels >= 0)
    assert torch.allclose(picked, expected, atol=1e-6)
    (grad,) = torch.autograd.grad(picked.sum(), logits)
    (expected_grad,) = torch.autograd.grad(expected.sum(), logits)
    assert torch.allclose(grad, expected_grad, atol=1e-6)


def test_token_logprobs_keep_no_vocab_sized_tensor_but_the_logits_for_backward(monkeypatch):
    # Memory on a real vocabulary: every [B, T, vocab] tensor the graph saves stays alive until the
    # backward pass. The logits are the model's output (saved anyway); the old log_softmax-based
    # version also kept its log_softmax and, for the entropy metric, its exp: three times the
    # logits' size more on a 0.6 B model's 151 936-token vocabulary.
    import shears_trainer.loss as loss_module

    monkeypatch.setattr(loss_module, "ENTROPY_ROWS", 4, raising=False)  # chunk boundaries inside the 15 rows
    logits = torch.randn(3, 5, 50, requires_grad=True)
    labels = torch.randint(0, 50, (3, 5))
    saved = []

    def pack(tensor):
        saved.append(tensor)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        _, entropy = loss_module.token_logprobs(logits, labels)
    vocab_sized = [tensor for tensor in saved if tensor.numel() >= logits.numel()]
    assert all(tensor.data_ptr() == logits.data_ptr() for tensor in vocab_sized), [
        t.shape for t in vocab_sized
    ]
    assert not entropy.requires_grad
    expected = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1)
    assert torch.allclose(entropy, expected.detach(), atol=1e-6)
