"""The trainer's device: `auto` picks CUDA when this torch has it, a device the machine does not have
is refused by name, and — on a machine with a GPU — one GRPO step and the colocated sampler give the
CPU's numbers. CI has no GPU: the two CUDA tests run where one exists (they ran on an H200; see
docs/train-a-model.md), and skip, saying why, elsewhere."""

import copy

import pytest
import torch
from test_grpo_step import sampled_batch, sequence_logprobs

from shears_trainer.train import GrpoConfig, load_model, resolve_device, train_step

HAS_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device in this torch (CI is CPU-only)")


def test_auto_is_cuda_when_there_is_one_else_the_cpu():
    assert resolve_device("auto").type == ("cuda" if HAS_CUDA else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(HAS_CUDA, reason="this machine has CUDA")
def test_cuda_asked_for_without_one_is_refused_naming_the_fix():
    with pytest.raises(SystemExit) as refused:
        resolve_device("cuda")
    assert "--device cuda: this torch" in str(refused.value)
    assert "sees no CUDA device; use --device cpu" in str(refused.value)


def test_a_device_torch_does_not_know_is_refused_by_name():
    with pytest.raises(SystemExit, match=r"--device gpu0: not a torch device"):
        resolve_device("gpu0")
    with pytest.raises(SystemExit, match=r"--device meta: only cpu and cuda devices are supported"):
        resolve_device("meta")


def test_the_cli_refuses_a_missing_device_before_any_work(tmp_path):
    from shears_trainer.__main__ import main

    if HAS_CUDA:
        pytest.skip("this machine has CUDA")
    with pytest.raises(SystemExit, match="sees no CUDA device"):
        main(
            [
                "sft",
                "--model",
                str(tmp_path / "none"),
                "--data",
                str(tmp_path / "none.jsonl"),
                "--output",
                str(tmp_path / "out"),
                "--device",
                "cuda",
            ]
        )


@needs_cuda
def test_one_grpo_step_on_cuda_matches_the_cpu(toy_model):
    cpu_model, tokenizer = load_model(str(toy_model))
    batch = sampled_batch(cpu_model, tokenizer)
    gpu_model = copy.deepcopy(cpu_model).to("cuda")
    config = GrpoConfig(model="", output="", micro_batch=4)
    results = {}
    for name, model in (("cpu", cpu_model), ("cuda", gpu_model)):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        results[name] = train_step(model, optimizer, batch, config)
    for key in ("loss", "policy", "clip_fraction", "entropy", "grad_norm"):
        assert results["cuda"][key] == pytest.approx(results["cpu"][key], rel=1e-3, abs=1e-5), key
    for (name, cpu_weight), gpu_weight in zip(cpu_model.named_parameters(), gpu_model.parameters()):
        cpu_grad, gpu_grad = cpu_weight.grad, gpu_weight.grad.cpu()
        scale = float(cpu_grad.abs().max())
        assert torch.allclose(gpu_grad, cpu_grad, rtol=1e-3, atol=1e-5 * scale), name
        # AdamW's first step moves each weight by about lr * sign(grad): where a gradient is within
        # the devices' rounding of 0, its sign (so the weight, by 2 * lr) can differ. Compared where
        # the gradient is clear of 0.
        clear = cpu_grad.abs() > 1e-4 * scale
        assert torch.allclose(cpu_weight[clear], gpu_weight.cpu()[clear], atol=1e-4), name


@needs_cuda
def test_the_sampler_on_cuda_serves_the_logprobs_the_trainer_computes(toy_model):
    model, tokenizer = load_model(str(toy_model), device="cuda")
    batch = sampled_batch(model, tokenizer)  # sampled on the GPU (left-padded, KV cache)
    mask = batch.loss_mask.bool()
    assert mask.sum() > 8
    # Scored by a CPU copy of the same weights: the same numbers, so the ratio starts at 1.
    scored = sequence_logprobs(copy.deepcopy(model).cpu(), batch)
    assert torch.allclose(scored[mask], batch.old_logprobs[mask], atol=1e-4)
