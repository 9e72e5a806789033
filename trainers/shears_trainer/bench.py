"""`python -m shears_trainer bench`: the trainer's own speed on the toy model, on the CPU (or
`--device cuda`).

- one GRPO step (forward, backward, AdamW) of 16 sequences x 256 tokens, as the issue measured it;
- the colocated sampler: 64 rollouts of up to 32 tokens in one batch (the toy env's first turn),
  in rollouts/s — the upper bound of the full loop's rate, which also runs the agent loop, the
  tool in a sandbox, the API and the trainer's own steps on the same cores.

Wall and CPU (process) time are both given: on a shared machine the wall time is mostly other
people's load. Prints one JSON object.

With `--shape qwen3-0.6b`, the same two figures on a model of Qwen3-0.6B's published architecture
(596 M parameters) with random weights, built from a transformers config here (nothing is
downloaded) and saved with the toy's tokenizer, then loaded by the trainer's own `load_model`, so
the code timed is the trainer's (float32, as it trains). The token ids are random: a speed figure,
not a learning one. On CUDA the peak memory (`torch.cuda.max_memory_allocated`) is given too.

With `--learning`, also the CI learning test's own run (toy_loop.learning_check: warm-up, GRPO and
the shuffled-sign control) with its wall and CPU time, rise, the control's, and the lead.
"""

from __future__ import annotations

import os
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

import torch
import transformers

from .batch import IGNORE, Sequence, collate
from .policy_server import _Job, generate_batch
from .toy import make_toy_model, save_tokenizer, toy_word, train_tokenizer
from .toy_loop import _prompt
from .train import GrpoConfig, load_model, resolve_device, stop_token_ids, train_step


def _sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _timed(function):
    _sync()
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    _sync()
    return result, time.perf_counter() - wall, time.process_time() - cpu


# `--shape`: the toy (the default), or a published architecture built from its config with random
# weights. qwen3-0.6b is Qwen/Qwen3-0.6B's config.json (Qwen3ForCausalLM), field for field.
SHAPES: dict[str, dict | None] = {
    "toy": None,
    "qwen3-0.6b": {
        "hidden_size": 1024,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 3072,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
        "max_position_embeddings": 40960,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000,
    },
}


def check_shape(shape: str) -> None:
    if shape not in SHAPES:
        raise SystemExit(f"--shape {shape}: not a known shape; choose from {', '.join(SHAPES)}")


def make_shape_model(folder: str | Path, dims: dict, seed: int = 0) -> dict:
    """A Qwen3ForCausalLM of these dimensions with random weights, saved as a model folder (config,
    safetensors, the toy's tokenizer and chat template) that `load_model` reads like any other."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer()
    torch.manual_seed(seed)
    config = Qwen3Config(
        **dims,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen3ForCausalLM(config)
    model.save_pretrained(folder)
    save_tokenizer(tokenizer, folder)
    return {"folder": str(folder)}


def _gib(count: int) -> float:
    return round(count / 2**30, 2)


def learning_figures(threads: int = 1) -> dict:
    """The learning test's figures: what `trainers/tests/test_learns.py` asserts on, timed."""
    from .toy_loop import learning_check

    with tempfile.TemporaryDirectory() as folder:
        result, wall, cpu = _timed(lambda: learning_check(folder, model_seed=0, seed=0, threads=threads))
    figures = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "lead": result["lead"]}
    figures["warm_up"] = {key: result["warm_up"][key] for key in ("clean_accuracy", "accuracy", "seconds")}
    for name in ("grpo", "control"):
        run = result[name]
        figures[name] = {
            key: run[key]
            for key in ("start", "end", "rise", "accuracy", "seconds", "tokens_per_s", "rollouts_per_s")
        }
    return figures


def run_bench(
    threads: int = 1, repeats: int = 5, learning: bool = False, device: str = "cpu", shape: str = "toy"
) -> dict:
    check_shape(shape)
    on = resolve_device(device)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    if on.type == "cuda":
        torch.cuda.reset_peak_memory_stats(on)
    with tempfile.TemporaryDirectory() as folder:
        if SHAPES[shape] is None:
            made = make_toy_model(os.path.join(folder, "toy"))
        else:
            made = make_shape_model(os.path.join(folder, shape), SHAPES[shape])
        model, tokenizer = load_model(made["folder"], device=on)
    weights_bytes = torch.cuda.memory_allocated(on) if on.type == "cuda" else None
    parameters = sum(parameter.numel() for parameter in model.parameters())
    dtypes = sorted({str(parameter.dtype).removeprefix("torch.") for parameter in model.parameters()})
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rng = random.Random(0)
    vocab = model.config.vocab_size
    sequences = []
    for row in range(16):
        tokens = [rng.randrange(5, vocab) for _ in range(257)]
        sequences.append(
            Sequence(
                tokens=tokens,
                masks=[IGNORE] * 64 + tokens[64:],
                advantages=[0.0] * 64 + [1.0 if row % 2 else -1.0] * (257 - 64),
                inference_logprobs=[1.0] * 64 + [-6.0] * (257 - 64),
                ref_logprobs=None,
                score=float(row % 2),
                group=0,
            )
        )
    batch = collate(sequences, pad_id=tokenizer.pad_token_id)
    config = GrpoConfig(model="", output="", micro_batch=16)
    train_step(model, optimizer, batch, config)  # warm-up
    steps = [_timed(lambda: train_step(model, optimizer, batch, config))[1:] for _ in range(repeats)]
    tokens = int(batch.attention_mask.sum())
    if on.type == "cuda":
        train_peak = torch.cuda.max_memory_allocated(on)
        torch.cuda.reset_peak_memory_stats(on)

    stop = set(stop_token_ids(tokenizer))
    rows = []
    for _ in range(64):
        ids = _prompt(tokenizer, toy_word(rng))
        rows.append((ids, _Job(prompt=ids, n=1, max_tokens=32, temperature=1.0, top_p=1.0, seed=None)))
    generate_batch(model, rows[:8], stop, None)  # warm-up
    samples = [_timed(lambda: generate_batch(model, rows, stop, None)) for _ in range(max(1, repeats // 2))]
    generated = statistics.mean(sum(len(ids) for ids, _, _ in result) for result, _, _ in samples)
    step_wall = statistics.median(wall for wall, _ in steps)
    step_cpu = statistics.median(cpu for _, cpu in steps)
    sample_wall = statistics.median(wall for _, wall, _ in samples)
    sample_cpu = statistics.median(cpu for _, _, cpu in samples)
    figures = {
        "model": {
            "shape": shape,
            "architecture": type(model).__name__,
            "parameters": parameters,
            "vocab_size": vocab,
            "hidden_size": model.config.hidden_size,
            "layers": model.config.num_hidden_layers,
            "dtype": dtypes[0] if len(dtypes) == 1 else dtypes,
            "weights": "random",
            "attention": model.config._attn_implementation,
        },
        "device": str(on),
        **({"gpu": torch.cuda.get_device_name(on)} if on.type == "cuda" else {}),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": threads,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "train_step": {
            "sequences": 16,
            "tokens": tokens,
            "wall_s_median": round(step_wall, 4),
            "cpu_s_median": round(step_cpu, 4),
            "tokens_per_s_wall": round(tokens / step_wall, 1),
            "tokens_per_s_cpu": round(tokens / step_cpu, 1),
        },
        "sampler": {
            "rollouts": len(rows),
            "generated_tokens_mean": round(generated, 1),
            "wall_s_median": round(sample_wall, 4),
            "cpu_s_median": round(sample_cpu, 4),
            "rollouts_per_s_wall": round(len(rows) / sample_wall, 1),
            "rollouts_per_s_cpu": round(len(rows) / sample_cpu, 1),
        },
    }
    if on.type == "cuda":
        sampler_peak = torch.cuda.max_memory_allocated(on)
        # The weights, then each phase's peak (the sampler's includes AdamW's state, which stays
        # allocated between steps as it does in the trainer).
        figures["cuda_memory_gib"] = {
            "weights": _gib(weights_bytes),
            "train_step_peak": _gib(train_peak),
            "sampler_peak": _gib(sampler_peak),
            "max_memory_allocated": _gib(max(train_peak, sampler_peak)),
        }
    # Linux reports kilobytes: the whole process, model building and loading included.
    figures["process_max_rss_gib"] = _gib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    if learning:
        figures["learning_test"] = learning_figures(threads)
    return figures
