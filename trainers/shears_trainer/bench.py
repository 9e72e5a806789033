"""`python -m shears_trainer bench`: the trainer's own speed on the toy model, on the CPU (or
`--device cuda`).

- one GRPO step (forward, backward, AdamW) of 16 sequences x 256 tokens, as the issue measured it;
- the colocated sampler: 64 rollouts of up to 32 tokens in one batch (the toy env's first turn),
  in rollouts/s — the upper bound of the full loop's rate, which also runs the agent loop, the
  tool in a sandbox, the API and the trainer's own steps on the same cores.

Wall and CPU (process) time are both given: on a shared machine the wall time is mostly other
people's load. Prints one JSON object.

With `--learning`, also the CI learning test's own run (toy_loop.learning_check: warm-up, GRPO and
the shuffled-sign control) with its wall and CPU time, rise, the control's, and the lead.
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time

import torch

from .batch import IGNORE, Sequence, collate
from .policy_server import _Job, generate_batch
from .toy import make_toy_model, toy_word
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


def run_bench(threads: int = 1, repeats: int = 5, learning: bool = False, device: str = "cpu") -> dict:
    on = resolve_device(device)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        made = make_toy_model(os.path.join(folder, "toy"))
        model, tokenizer = load_model(made["folder"], device=on)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rng = random.Random(0)
    vocab = made["vocab_size"]
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
        "model": {"parameters": made["parameters"], "vocab_size": vocab},
        "device": str(on),
        **({"gpu": torch.cuda.get_device_name(on)} if on.type == "cuda" else {}),
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
    if learning:
        figures["learning_test"] = learning_figures(threads)
    return figures
