"""The output layer's cost (issue 38 §2): one softmax per trained position gives the logprob, its
gradient and the entropy metric; the softmax is kept for the backward pass when it fits in the
memory available and recomputed there (checkpointing) only when it does not, and the trainer
says which in its log. Values and gradients are the full logits' either way."""

import gzip
import json
import urllib.request

import pytest
import torch
from test_chunked_logprobs import batch, full, models, tiny_qwen3

from shears_trainer import loss
from shears_trainer.train import GrpoConfig, run_grpo

PLENTY = 1 << 40  # bytes: keeping always fits
NONE_LEFT = 0  # bytes: keeping never fits


def with_memory(monkeypatch, available):
    monkeypatch.setattr(loss, "available_memory", lambda device: available)


@pytest.mark.parametrize("available, kept", [(PLENTY, True), (NONE_LEFT, False)])
def test_kept_or_recomputed_the_values_and_gradients_are_the_full_logits(
    toy_model, monkeypatch, available, kept
):
    with_memory(monkeypatch, available)
    monkeypatch.setattr(loss, "LOGIT_CHUNK", 5)  # chunk boundaries inside the 18 trained rows
    for name, model in models(toy_model).items():
        model.train()
        input_ids, attention, labels = batch(model.get_output_embeddings().weight.shape[0])
        trained = labels >= 0
        parameters = [parameter for parameter in model.parameters() if parameter.requires_grad]
        expected, expected_entropy = full(model, input_ids, attention, labels)
        expected_grads = torch.autograd.grad((expected * torch.linspace(-1, 1, 11)).sum(), parameters)
        plans = []
        got, entropy = loss.model_label_logprobs(model, input_ids, attention, labels, on_plan=plans.append)
        grads = torch.autograd.grad((got * torch.linspace(-1, 1, 11)).sum(), parameters)
        assert [plan.keep for plan in plans] == [kept], name
        assert plans[0].rows == int(trained.sum()), name
        assert torch.allclose(got, expected, atol=1e-5), name
        assert torch.all(got[~trained] == 0) and torch.all(entropy[~trained] == 0), name
        assert torch.allclose(entropy[trained], expected_entropy[trained], atol=1e-5), name
        for grad, expected_grad in zip(grads, expected_grads):
            assert torch.allclose(grad, expected_grad, atol=1e-6), name


@pytest.mark.parametrize("keep", [True, False])
def test_the_output_layers_gradient_is_autograds_in_float64_with_a_bias(keep):
    """Against torch's own autograd through log_softmax, in float64, bias included (the models
    above have none)."""
    generator = torch.Generator().manual_seed(3)
    inputs = [
        torch.randn(6, 4, dtype=torch.float64, generator=generator),  # hidden
        torch.randn(9, 4, dtype=torch.float64, generator=generator),  # weight
        torch.randn(9, dtype=torch.float64, generator=generator),  # bias
    ]
    labels = torch.tensor([0, 8, 3, 3, 5, 1])
    scale = torch.linspace(-1, 2, 6, dtype=torch.float64)

    def gradients(function):
        leaves = [tensor.clone().requires_grad_() for tensor in inputs]
        value = function(*leaves)
        return value, torch.autograd.grad((value * scale).sum(), leaves)

    expected, expected_grads = gradients(
        lambda hidden, weight, bias: (
            torch.log_softmax(hidden @ weight.T + bias, dim=-1).gather(-1, labels[:, None]).squeeze(-1)
        )
    )
    got, grads = gradients(
        lambda hidden, weight, bias: loss.output_layer_logprobs(hidden, weight, bias, labels, keep=keep)[0]
    )
    assert torch.allclose(got, expected, rtol=0, atol=1e-12)
    for grad, expected_grad in zip(grads, expected_grads):
        assert torch.allclose(grad, expected_grad, rtol=0, atol=1e-12)


def test_a_second_backward_through_a_kept_softmax_is_refused_not_wrong():
    """The kept softmax becomes the gradient in place (a fresh tensor the size of the chunk costs
    ten times the multiply on a CPU): a second backward through the same graph (retain_graph)
    raises torch's in-place error instead of using it."""
    hidden = torch.randn(3, 4, requires_grad=True)
    weight = torch.randn(7, 4, requires_grad=True)
    picked, _ = loss.output_layer_logprobs(hidden, weight, None, torch.tensor([1, 2, 3]), keep=True)
    picked.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        picked.sum().backward()


def test_the_entropy_is_the_categorical_entropy_on_both_paths():
    model = tiny_qwen3()
    input_ids, attention, labels = batch(300)
    trained = labels >= 0
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention).logits
    expected = torch.distributions.Categorical(logits=logits).entropy()
    _, split = loss.model_label_logprobs(model, input_ids, attention, labels)
    _, whole = loss.token_logprobs(logits, labels)
    assert torch.allclose(split[trained], expected[trained], atol=1e-5)
    assert torch.allclose(whole, expected, atol=1e-5)
    # The reference model's path skips the metric.
    with torch.no_grad():
        _, skipped = loss.model_label_logprobs(model, input_ids, attention, labels, entropy=False)
    assert torch.all(skipped == 0)


EXPONENTIALS = {"aten::exp", "aten::exp_", "aten::_log_softmax", "aten::_softmax", "aten::logsumexp"}


def vocabulary_work(model, input_ids, attention, labels) -> dict:
    """The vocabulary-wide exponentials and output-layer products of one forward and backward pass."""
    vocab = model.get_output_embeddings().weight.shape[0]
    width = model.get_output_embeddings().weight.shape[1]
    loss.splits_at_output_layer(model)  # its check is once per model, not per step
    with torch.profiler.profile(record_shapes=True) as profile:
        got, _ = loss.model_label_logprobs(model, input_ids, attention, labels)
        got.sum().backward()
    counts = {"exponentials": 0, "logits": 0}
    for event in profile.events():
        shapes = [shape for shape in event.input_shapes if isinstance(shape, list) and shape]
        if event.name in EXPONENTIALS and any(shape[-1] == vocab for shape in shapes):
            counts["exponentials"] += 1
        if event.name == "aten::mm" and [width, vocab] in shapes:  # hidden @ W^T: the logits
            counts["logits"] += 1
    return counts


@pytest.mark.parametrize(
    "available, expected",
    [
        # Kept: one exp makes the softmax, which gives the logprob, the entropy and the gradient.
        (PLENTY, {"exponentials": 1, "logits": 1}),
        # Recomputed: the logits and their exp once more in the backward pass, the entropy not.
        (NONE_LEFT, {"exponentials": 2, "logits": 2}),
    ],
)
def test_one_softmax_per_logit_and_a_second_only_when_memory_requires_it(monkeypatch, available, expected):
    with_memory(monkeypatch, available)
    model = tiny_qwen3()
    model.train()
    assert vocabulary_work(model, *batch(300)) == expected


def test_the_plan_follows_the_shape_and_the_memory(monkeypatch):
    cpu = torch.device("cpu")
    vocab = 151_669  # Qwen3's tokenizer
    softmax = 3_088 * vocab * 4  # 16 x 193 trained positions, float32
    transient = 2 * loss.LOGIT_CHUNK * vocab * 4  # one chunk's logits and exp
    needed = (softmax + transient) / loss.KEEP_SHARE
    assert loss.plan_output_layer(3_088, vocab, cpu, available=int(needed)).keep
    assert not loss.plan_output_layer(3_088, vocab, cpu, available=int(needed) - 1).keep
    # Longer batches, a larger vocabulary: the same memory no longer suffices.
    assert not loss.plan_output_layer(4 * 3_088, vocab, cpu, available=int(needed)).keep
    assert loss.plan_output_layer(3_088, 435, cpu, available=int(needed)).keep
    # Memory that cannot be read: recompute (the safe choice), and say why.
    assert loss.available_memory(cpu) > 0  # read on this machine: a positive number of bytes
    with_memory(monkeypatch, None)
    unknown = loss.plan_output_layer(3_088, vocab, cpu)
    assert not unknown.keep
    assert "memory available unknown" in unknown.describe()
    kept = loss.plan_output_layer(3_088, vocab, cpu, available=64 << 30)
    assert kept.keep_bytes == softmax
    assert kept.describe() == (
        "output layer: softmax of 3088 trained positions x 151669 tokens kept for the backward pass"
        " (1.74 GiB; 64.00 GiB available)"
    )


def test_recomputed_nothing_vocabulary_sized_is_kept_for_the_backward_pass(monkeypatch):
    model = tiny_qwen3()
    input_ids, attention, labels = batch(300)
    trained = int((labels >= 0).sum())
    loss.splits_at_output_layer(model)
    weights = {parameter.data_ptr() for parameter in model.parameters()}

    def saved_shapes(available):
        with_memory(monkeypatch, available)
        shapes = []

        def pack(tensor):  # activations only (the embedding is vocabulary-sized too)
            if tensor.data_ptr() not in weights:
                shapes.append(tuple(tensor.shape))
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            loss.model_label_logprobs(model, input_ids, attention, labels)
        return shapes

    # Recomputed: no tensor as wide as the vocabulary (the decoder's activations are 32 to 64 wide).
    assert not [shape for shape in saved_shapes(NONE_LEFT) if 300 in shape]
    # Kept: the softmax of each trained position, once.
    kept = [shape for shape in saved_shapes(PLENTY) if 300 in shape]
    assert all(shape[-1] == 300 for shape in kept)
    assert sum(shape[0] for shape in kept) == trained


def post_group(api_url: str, tokens: list[list[int]], prompt: int) -> None:
    unused = "advantages inference_logprobs ref_logprobs messages generation_params overrides group_overrides"
    group = dict.fromkeys((*unused.split(), "images", "env_id", "distill_token_ids", "distill_logprobs"))
    group |= {
        "tokens": tokens,
        "masks": [[-100] * prompt + row[prompt:] for row in tokens],
        "scores": [1.0, 0.0],
    }
    request = urllib.request.Request(
        api_url + "/scored_data",
        data=gzip.compress(json.dumps(group).encode()),
        method="POST",
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    urllib.request.urlopen(request).read()


def test_the_trainer_says_in_its_log_whether_the_output_layer_is_kept_and_when_that_changes(
    toy_model, fresh_shears_api, tmp_path, monkeypatch, capsys
):
    """Three steps through the real API: memory plenty, plenty, then none left. The log says
    "kept" once (not per step) and "recomputed" when the decision changes."""
    memory = iter([PLENTY, PLENTY, NONE_LEFT])
    monkeypatch.setattr(loss, "available_memory", lambda device: next(memory))
    env = {"max_token_length": 64, "desired_name": "toy", "weight": 1.0, "group_size": 2}
    urllib.request.urlopen(
        urllib.request.Request(
            fresh_shears_api + "/register-env",
            data=json.dumps(env).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
    ).read()
    for step in range(3):
        post_group(fresh_shears_api, [[5, 6, 7, 8 + step, 9], [5, 6, 7, 10, 11 + step]], prompt=3)
    config = GrpoConfig(
        model=str(toy_model),
        output=str(tmp_path / "out"),
        api_url=fresh_shears_api,
        steps=3,
        batch_size=2,
        micro_batch=2,
        threads=1,
        device="cpu",
        batch_timeout_s=60,
    )
    run_grpo(config)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("output layer:")]
    assert lines == [
        (
            "output layer: softmax of 4 trained positions x 435 tokens kept for the backward pass"
            " (6.80 KiB; 1024.00 GiB available)"
        ),
        (
            "output layer: recomputed in the backward pass, 1024 positions at a time (keeping the softmax"
            " of 4 trained positions x 435 tokens would take 6.80 KiB, over 50% of the 0.00 KiB available)"
        ),
    ]
