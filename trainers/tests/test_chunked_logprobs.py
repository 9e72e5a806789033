"""The trainer's logprobs without the [B, T, vocab] logits (loss.model_label_logprobs): the same
values and gradients as the full logits give, for the toy (Llama), a tiny Qwen3 and a LoRA model;
the full logits for a model that changes them after its output layer; and no vocabulary-sized
tensor kept for the backward pass beyond one chunk."""

import pytest
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from shears_trainer import loss
from shears_trainer.train import load_model


def tiny_qwen3():
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=300,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        tie_word_embeddings=True,
    )
    return Qwen3ForCausalLM(config).float()


def batch(vocab, seed=1):
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, vocab, (3, 11), generator=generator)
    attention = torch.ones_like(input_ids)
    attention[2, 8:] = 0  # right padding
    labels = torch.roll(input_ids, -1, dims=1)
    labels[:, :4] = -100  # the prompt
    labels[:, -1] = -100
    labels[2, 7:] = -100
    return input_ids, attention, labels


def full(model, input_ids, attention, labels):
    return loss.token_logprobs(model(input_ids=input_ids, attention_mask=attention).logits, labels)


def models(toy_model):
    toy, _ = load_model(str(toy_model))
    lora, _ = load_model(str(toy_model), lora_rank=4)
    return {"toy (llama)": toy, "qwen3": tiny_qwen3(), "toy with LoRA": lora}


@pytest.mark.parametrize("chunk", [1024, 5])
def test_the_split_path_gives_the_full_logits_values_and_gradients(toy_model, monkeypatch, chunk):
    monkeypatch.setattr(loss, "LOGIT_CHUNK", chunk)  # 5: chunk boundaries inside the 18 trained rows
    for name, model in models(toy_model).items():
        model.train()
        assert loss.splits_at_output_layer(model), name
        input_ids, attention, labels = batch(model.get_output_embeddings().weight.shape[0])
        trained = labels >= 0
        parameters = [parameter for parameter in model.parameters() if parameter.requires_grad]
        expected, expected_entropy = full(model, input_ids, attention, labels)
        expected_grads = torch.autograd.grad((expected * torch.linspace(-1, 1, 11)).sum(), parameters)
        got, entropy = loss.model_label_logprobs(model, input_ids, attention, labels)
        grads = torch.autograd.grad((got * torch.linspace(-1, 1, 11)).sum(), parameters)
        assert torch.allclose(got, expected, atol=1e-5), name
        assert torch.all(got[~trained] == 0), name
        assert torch.allclose(entropy[trained], expected_entropy[trained], atol=1e-5), name
        for grad, expected_grad in zip(grads, expected_grads):
            assert torch.allclose(grad, expected_grad, atol=1e-6), name
        with torch.no_grad():  # the reference model's path
            assert torch.allclose(loss.model_label_logprobs(model, input_ids, attention, labels)[0], got), (
                name
            )


def test_a_model_that_changes_its_logits_after_the_output_layer_keeps_the_full_logits():
    model = tiny_qwen3()
    forward = model.forward

    def soft_capped(*args, **kwargs):  # as Gemma 2's final_logit_softcapping does
        output = forward(*args, **kwargs)
        output.logits = 30 * torch.tanh(output.logits / 30)
        return output

    model.forward = soft_capped
    assert not loss.splits_at_output_layer(model)
    input_ids, attention, labels = batch(300)
    got, _ = loss.model_label_logprobs(model, input_ids, attention, labels)
    assert torch.allclose(got, full(model, input_ids, attention, labels)[0])


def test_no_vocabulary_sized_tensor_is_kept_for_the_backward_pass_beyond_a_chunk(monkeypatch):
    monkeypatch.setattr(loss, "LOGIT_CHUNK", 4)
    model = tiny_qwen3()
    input_ids, attention, labels = batch(300)
    assert loss.splits_at_output_layer(model)
    saved = []
    weights = {parameter.data_ptr() for parameter in model.parameters()}

    def pack(tensor):  # activations only (the embedding is vocabulary-sized too)
        if tensor.data_ptr() not in weights:
            saved.append(tensor.numel())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss.model_label_logprobs(model, input_ids, attention, labels)
    assert max(saved) < 2 * 4 * 300  # one chunk's rows of the vocabulary at most (checkpointed)
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        full(model, input_ids, attention, labels)
    assert max(saved) >= 3 * 11 * 300  # the full path keeps [B, T, vocab] logits
