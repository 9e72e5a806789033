"""`python -m shears_trainer bench`: the trainer's own speed, on the CPU (or `--device cuda`), as
JSON lines (each with the load average: on a shared machine the wall time is mostly other
people's load, so the CPU time is given beside it).

First, the GRPO step beside a bare torch step (`compare_with_bare`, `--rounds`, 0 skips it): the
same weights, batch and sequence length, at the toy's vocabulary and at Qwen3's (151 669 tokens,
`qwen3-vocab`: a decoder of make_tiny_qwen3.py's size, random weights), 4 and 16 rows of 257
tokens, the first 64 untrained. The bare step is what a user would write without this trainer:
the model's full logits, an advantage-weighted cross-entropy, backward, AdamW. Interleaved rounds
(AB, BA, ...), one line per round and a summary per shape and rows with the median and range of
the ratio GRPO / bare.

Then one line for the step and the sampler of `--shape` (the toy by default):
- one GRPO step (forward, backward, AdamW) of 16 sequences x 256 tokens, as issue 22 measured it;
- the colocated sampler: 64 rollouts of up to 32 tokens in one batch (the toy env's first turn),
  in rollouts/s — the upper bound of the full loop's rate, which also runs the agent loop, the
  tool in a sandbox, the API and the trainer's own steps on the same cores.

With `--shape qwen3-0.6b`, those two figures on a model of Qwen3-0.6B's published architecture
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
from functools import partial
from pathlib import Path

import torch
import transformers

from .batch import IGNORE, Sequence, collate
from .policy_server import Sampling, generate_batch
from .toy import make_toy_model, toy_word, train_tokenizer
from .toy_loop import learning_check, toy_prompt
from .train import GrpoConfig, load_model, resolve_device, save_tokenizer, stop_token_ids, train_step


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
    # Qwen3's tokenizer (151 669 tokens) on a decoder of make_tiny_qwen3.py's size
    # (packages/servers/test): the output layer and its vocabulary-wide passes are nearly all of
    # the step, the case where the loss's own work over the logits shows most.
    "qwen3-vocab": {
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 8,
        "intermediate_size": 32,
        "vocab_size": 151669,
        "tie_word_embeddings": False,
        "max_position_embeddings": 4096,
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


def shape_folder(shape: str, folder: str) -> str:
    """The model folder of `shape`, made under `folder`: the toy, or a SHAPES architecture."""
    if SHAPES[shape] is None:
        return make_toy_model(os.path.join(folder, "toy"))["folder"]
    return make_shape_model(os.path.join(folder, shape), SHAPES[shape])["folder"]


def _gib(count: int) -> float:
    return round(count / 2**30, 2)


def learning_figures(threads: int = 1) -> dict:
    """The learning test's figures: what `trainers/tests/test_learns.py` asserts on, timed."""
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
        model, tokenizer = load_model(shape_folder(shape, folder), device=on)
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
    sampling = Sampling(max_tokens=32)
    rows = [(toy_prompt(tokenizer, toy_word(rng)), sampling) for _ in range(64)]
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


# --- the GRPO step against a bare torch step -----------------------------------------------------

# The comparison's models: the toy's own vocabulary, and Qwen3's.
COMPARE_SHAPES = ("toy", "qwen3-vocab")
COMPARE_ROWS = (4, 16)


def bare_torch_step(model, optimizer, batch) -> float:
    """What a user would write for a policy-gradient step without this trainer: the model's full
    logits, a per-token cross-entropy weighted by the advantages (REINFORCE), backward, AdamW."""
    optimizer.zero_grad(set_to_none=True)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    nll = torch.nn.functional.cross_entropy(
        logits.flatten(0, 1).float(), batch.labels.flatten(), reduction="none"
    )
    loss = (nll * batch.advantages.flatten()).sum() / batch.loss_mask.sum().clamp(min=1.0)
    loss.backward()
    optimizer.step()
    return loss.item()


def comparison_batch(rows: int, vocab: int, pad_id: int, length: int = 257, prompt: int = 64, seed: int = 0):
    """`rows` sequences of `length` random tokens, the first `prompt` untrained, advantages +1/-1 by
    row, inference logprobs those of a uniform policy (what random weights give)."""
    rng = random.Random(seed)
    uniform = -float(torch.log(torch.tensor(float(vocab))))
    sequences = []
    for row in range(rows):
        tokens = [rng.randrange(5, vocab) for _ in range(length)]
        sequences.append(
            Sequence(
                tokens=tokens,
                masks=[IGNORE] * prompt + tokens[prompt:],
                advantages=[0.0] * prompt + [1.0 if row % 2 else -1.0] * (length - prompt),
                inference_logprobs=[0.0] * prompt + [uniform] * (length - prompt),
                ref_logprobs=None,
                score=float(row % 2),
                group=0,
            )
        )
    return collate(sequences, pad_id=pad_id)


def _on(batch, device: torch.device):
    for name in ("input_ids", "labels", "loss_mask", "attention_mask", "advantages", "old_logprobs"):
        value = getattr(batch, name)
        if value is not None:
            setattr(batch, name, value.to(device))
    return batch


def _time_interleaved(runs: dict, rounds: int) -> list[dict]:
    """Each round times every run, the order turning by one each round (AB, BA, ...), so that a
    change of load hits them alike. A timing covers enough calls to last ~0.5 s."""
    for run in runs.values():  # warm-up: allocator, AdamW's state, the split check
        run()
    first = next(iter(runs.values()))
    repeat = max(1, round(0.5 / max(_timed(first)[1], 1e-3)))

    def many(run):
        for _ in range(repeat):
            run()

    names = list(runs)
    timings = []
    for index in range(rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        timed = {"order": order, "steps_timed": repeat}
        for name in order:
            _, wall, cpu = _timed(lambda run=runs[name]: many(run))
            timed[name] = (wall / repeat, cpu / repeat)
        timed["load_average_1m"] = round(os.getloadavg()[0], 2)
        timings.append(timed)
    return timings


def compare_with_bare(
    shapes=COMPARE_SHAPES,
    rows=COMPARE_ROWS,
    rounds: int = 5,
    device: str = "cpu",
    threads: int = 1,
    emit=print,
) -> list[dict]:
    """The trainer's GRPO step (`train_step`, one micro-batch) against `bare_torch_step` on two
    copies of the same weights and the same batch, interleaved (`_time_interleaved`). Emits one
    JSON-ready dict per round and one summary per (shape, rows); returns the summaries."""
    on = resolve_device(device)
    torch.set_num_threads(threads)
    summaries = []
    for shape in shapes:
        check_shape(shape)
        with tempfile.TemporaryDirectory() as folder:
            made = shape_folder(shape, folder)
            grpo_model, tokenizer = load_model(made, device=on)
            bare_model, _ = load_model(made, device=on)
        grpo_model.train()
        bare_model.train()
        vocab = grpo_model.config.vocab_size
        for count in rows:
            batch = _on(comparison_batch(count, vocab, tokenizer.pad_token_id), on)
            config = GrpoConfig(model="", output="", micro_batch=count)
            grpo_optimizer = torch.optim.AdamW(grpo_model.parameters(), lr=1e-5)
            bare_optimizer = torch.optim.AdamW(bare_model.parameters(), lr=1e-5)
            plans = []
            timings = _time_interleaved(
                {
                    "grpo": partial(
                        train_step, grpo_model, grpo_optimizer, batch, config, on_plan=plans.append
                    ),
                    "bare": partial(bare_torch_step, bare_model, bare_optimizer, batch),
                },
                rounds,
            )
            common = {
                "shape": shape,
                "vocab_size": vocab,
                "rows": count,
                "tokens": int(batch.attention_mask.sum()),
                "trained_tokens": batch.trained_tokens,
                "output_layer": None if not plans else "kept" if plans[-1].keep else "recomputed",
                "device": str(on),
                "threads": threads,
            }
            lines = []
            for index, timed in enumerate(timings):
                (grpo_wall, grpo_cpu), (bare_wall, bare_cpu) = timed["grpo"], timed["bare"]
                line = {
                    "bench": "step-vs-bare",
                    **common,
                    "round": index + 1,
                    "order": "".join(name[0].upper() for name in timed["order"]),
                    "steps_timed": timed["steps_timed"],
                    "grpo_wall_s": round(grpo_wall, 4),
                    "bare_wall_s": round(bare_wall, 4),
                    "grpo_cpu_s": round(grpo_cpu, 4),
                    "bare_cpu_s": round(bare_cpu, 4),
                    "ratio_wall": round(grpo_wall / bare_wall, 4),
                    "ratio_cpu": round(grpo_cpu / bare_cpu, 4),
                    "load_average_1m": timed["load_average_1m"],
                }
                emit(line)
                lines.append(line)
            summary = {
                "bench": "step-vs-bare-summary",
                **common,
                "rounds": rounds,
                "torch": torch.__version__,
            }
            for key in ("ratio_wall", "ratio_cpu", "grpo_wall_s", "bare_wall_s", "grpo_cpu_s", "bare_cpu_s"):
                values = [line[key] for line in lines]
                if values:
                    summary[f"{key}_median"] = round(statistics.median(values), 4)
                    summary[f"{key}_range"] = [min(values), max(values)]
            loads = [line["load_average_1m"] for line in lines]
            summary["load_average_1m_range"] = [min(loads), max(loads)] if loads else None
            emit(summary)
            summaries.append(summary)
    return summaries
