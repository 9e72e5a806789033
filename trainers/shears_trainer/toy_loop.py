"""The toy task learnt in one process, without shears: sample groups from the policy with the policy
server's own sampler, score them with the toy env's rule, take the trainer's own GRPO step.

This is the algorithm alone (the same `generate_batch`, `collate`, `train_step` the colocated run
uses), so that "does GRPO learn on this model, with these settings?" is answered in seconds,
apart from the chain (env worker, API, pacing) that the CLI's learning test runs through.

The rule is the toy env's (examples/toy-pack), as `toy_score` reads a turn the way the chain does
(its calls read by hermes.hermes_calls, as shears' hermes parser reads them): a `save` call with
the prompt's word scores 1, a call with another word 0.1, no call 0. Only the first turn is
sampled: the reward depends on nothing after the call. `toy_accuracy` measures a model with the
same rule; `learning_check` is the CI learning test.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from .batch import IGNORE, Sequence, advantages_from_scores, collate
from .hermes import hermes_calls
from .policy_server import Sampling, generate_batch
from .toy import DECOY_WORD, SAVE_TOOL, make_toy_model, toy_word
from .train import (
    ADVANTAGE_EPSILON,
    GrpoConfig,
    load_model,
    run_sft,
    save_model,
    shuffle_advantage_signs,
    stop_token_ids,
    train_step,
)


def toy_score(text: str, word: str) -> float:
    """The toy env's reward for a first turn's text, as the chain computes it
    (examples/toy-pack): the hermes parser's calls (`hermes_calls`), each run in order by the
    agent loop; a `save` call whose `word` is a string of 1-64 characters writes it to saved.txt
    (other arguments ignored, as the tool's schema strips them), any other call fails and writes
    nothing; the verifier reads back the last word written: 1 for the prompt's word, 0.1 for
    another, 0 for none. `packages/cli/src/toy-score.test.ts` checks it against the parser and the
    tool themselves on a corpus of model-like outputs."""
    text = text.removesuffix("<|im_end|>")
    saved = None
    for name, arguments in hermes_calls(text):
        if name != "save" or not isinstance(arguments, dict):
            continue
        candidate = arguments.get("word")
        if isinstance(candidate, str) and 1 <= len(candidate) <= 64:
            saved = candidate
    if saved is None:
        return 0.0
    return 1.0 if saved == word else 0.1


@torch.no_grad()
def toy_accuracy(
    folder: str | Path,
    words: int = 64,
    seed: int = 12345,
    max_tokens: int = 32,
    samples: int = 0,
    temperature: float = 1.0,
) -> dict:
    """Greedy accuracy on fresh words: the share of greedy answers the toy env rewards in full
    (`toy_score` 1: a `save` call with the prompt's word, read as the chain reads it). With
    `samples`, also the mean reward (`toy_score`) of that many sampled answers per word at
    `temperature`: the policy's expected reward, measured on more answers than a training run's
    rollouts give per policy version."""
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    rng = random.Random(seed)
    targets = [toy_word(rng) for _ in range(words)]
    stop = {tokenizer.convert_tokens_to_ids("<|im_end|>")}
    prompts = [toy_prompt(tokenizer, word) for word in targets]
    greedy = Sampling(max_tokens=max_tokens, temperature=0.0)
    rows = [(ids, greedy) for ids in prompts]
    results = generate_batch(model, rows, stop, None)
    correct = sum(
        toy_score(tokenizer.decode(ids, skip_special_tokens=False), word) == 1.0
        for word, (ids, _, _) in zip(targets, results)
    )
    result = {"accuracy": correct / words, "words": words}
    if samples > 0:
        torch.manual_seed(seed)
        sampled_at = Sampling(max_tokens=max_tokens, temperature=temperature)
        rows = [(ids, sampled_at) for ids in prompts for _ in range(samples)]
        sampled = generate_batch(model, rows, stop, None)
        scores = [
            toy_score(tokenizer.decode(ids, skip_special_tokens=False), targets[index // samples])
            for index, (ids, _, _) in enumerate(sampled)
        ]
        result["reward"] = sum(scores) / len(scores)
        result["samples"] = len(scores)
    return result


def toy_sft_records(count: int, seed: int, decoy_rate: float = 0.0) -> list[dict]:
    """Conversations shaped as shears' SFT export of the toy env's scripted rollouts. With
    `decoy_rate`, that share of the demonstrations saves DECOY_WORD instead of the prompt's word
    (a demonstrator with a bug: what the learning test's warm-up imitates, and GRPO then unlearns)."""
    rng = random.Random(seed)
    records = []
    for index in range(count):
        word = toy_word(rng)
        saved = DECOY_WORD if decoy_rate > 0 and rng.random() < decoy_rate else word
        call_id = f"call_{index}"
        records.append(
            {
                "messages": [
                    {"role": "user", "content": f"Save the word {word}."},
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {
                                    "name": "save",
                                    "arguments": json.dumps({"word": saved}, separators=(",", ":")),
                                },
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": call_id, "content": f"saved {saved}"},
                    {"role": "assistant", "content": "done"},
                ]
            }
        )
    return records


def toy_prompt(tokenizer, word: str) -> list[int]:
    """The toy env's first prompt for `word`, as token ids (the chat template, the save tool)."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": f"Save the word {word}."}],
        tools=[SAVE_TOOL],
        tokenize=False,
        add_generation_prompt=True,
    )
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def run_toy_loop(
    model_path: str,
    steps: int = 40,
    prompts: int = 8,
    group_size: int = 8,
    lr: float = 3e-4,
    temperature: float = 1.0,
    max_tokens: int = 32,
    control: str | None = None,
    seed: int = 0,
    loss: str = "grpo",
    threads: int | None = None,
    log=None,
) -> dict:
    """GRPO on the toy task in-process; returns the mean reward of every step's samples (all of
    them, also the groups without signal) and timings."""
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    control_rng = random.Random(seed + 1)
    model, tokenizer = load_model(model_path)
    model.train()
    config = GrpoConfig(
        model=model_path,
        output="",
        batch_size=prompts * group_size,
        lr=lr,
        loss=loss,
        micro_batch=prompts * group_size,
    )
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(config.adam_beta1, config.adam_beta2), weight_decay=0.0
    )
    stop = set(stop_token_ids(tokenizer))
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    sampling = Sampling(max_tokens=max_tokens, temperature=temperature)
    rewards: list[float] = []
    exact: list[float] = []
    sample_s = train_s = 0.0
    trained_steps = 0
    tokens_trained = 0
    for step in range(1, steps + 1):
        words = [toy_word(rng) for _ in range(prompts)]
        rows = []
        for word in words:
            ids = toy_prompt(tokenizer, word)
            rows.extend((ids, sampling) for _ in range(group_size))
        started = time.perf_counter()
        results = generate_batch(model, rows, stop, None)
        sample_s += time.perf_counter() - started
        sequences: list[Sequence] = []
        step_scores = []
        for g, word in enumerate(words):
            group = results[g * group_size : (g + 1) * group_size]
            prompt = rows[g * group_size][0]
            scores = [
                toy_score(tokenizer.decode(ids, skip_special_tokens=False), word) for ids, _, _ in group
            ]
            step_scores.extend(scores)
            advantages = advantages_from_scores(scores)
            if max(abs(a) for a in advantages) <= ADVANTAGE_EPSILON:
                continue
            for (ids, lps, _), score, advantage in zip(group, scores, advantages):
                tokens = prompt + ids
                sequences.append(
                    Sequence(
                        tokens=tokens,
                        masks=[IGNORE] * len(prompt) + ids,
                        advantages=[0.0] * len(prompt) + [advantage] * len(ids),
                        inference_logprobs=[0.0] * len(prompt) + lps,
                        ref_logprobs=None,
                        score=score,
                        group=g,
                    )
                )
        rewards.append(sum(step_scores) / len(step_scores))
        exact.append(sum(score == 1.0 for score in step_scores) / len(step_scores))
        if sequences:
            batch = collate(sequences, pad_id)
            if control == "shuffle-signs":
                shuffle_advantage_signs(batch, control_rng)
            started = time.perf_counter()
            totals = train_step(model, optimizer, batch, config)
            train_s += time.perf_counter() - started
            trained_steps += 1
            tokens_trained += int(batch.attention_mask.sum())
        else:
            totals = {"loss": 0.0, "clip_fraction": 0.0}
        if log:
            log(
                f"step {step} reward {rewards[-1]:.3f} exact {exact[-1]:.3f} groups {len(sequences) // group_size} loss {totals['loss']:.4f}"
            )
    return {
        "rewards": rewards,
        "exact": exact,
        "sample_s": round(sample_s, 3),
        "train_s": round(train_s, 3),
        "trained_steps": trained_steps,
        "tokens_per_s": round(tokens_trained / train_s, 1) if train_s > 0 else None,
        "model": model,
        "tokenizer": tokenizer,
    }


def write_sft_data(path: str | Path, count: int, seed: int, decoy_rate: float = 0.0) -> Path:
    path = Path(path)
    records = toy_sft_records(count, seed, decoy_rate)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


# The learning test's settings (trainers/tests/test_learns.py; figures per seed in
# docs/train-a-model.md, "The learning test").
LEARNING = {
    "records": 384,
    "clean_sft_steps": 200,
    "clean_sft_lr": 3e-3,
    "decoy_rate": 0.5,
    "decoy_sft_steps": 100,
    "decoy_sft_lr": 1e-3,
    "steps": 20,
    "prompts": 8,
    "group_size": 8,
    "lr": 5e-4,
    "window": 5,
}


def toy_warm_up(base: str | Path, folder: str | Path, seed: int = 0, threads: int | None = None) -> dict:
    """The learning test's start model, in two SFT stages: clean demonstrations until the model
    copies the word, then demonstrations of which half save DECOY_WORD instead, so the policy
    samples the right word about half the time (and greedy decoding often prefers the decoy).
    One stage on the mixed data alone does not work: on some model seeds the decoy, the easier
    answer, wins before the model learns to copy at all."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    settings = LEARNING
    clean = write_sft_data(folder / "clean.jsonl", settings["records"], seed + 99)
    mixed = write_sft_data(folder / "decoy.jsonl", settings["records"], seed + 98, settings["decoy_rate"])
    started = time.perf_counter()
    common = {"tools": [SAVE_TOOL], "batch_size": 32, "threads": threads}
    run_sft(
        str(base),
        str(clean),
        str(folder / "clean"),
        steps=settings["clean_sft_steps"],
        lr=settings["clean_sft_lr"],
        seed=seed,
        **common,
    )
    clean_accuracy = toy_accuracy(folder / "clean")["accuracy"]
    run_sft(
        str(folder / "clean"),
        str(mixed),
        str(folder / "start"),
        steps=settings["decoy_sft_steps"],
        lr=settings["decoy_sft_lr"],
        seed=seed + 1,
        **common,
    )
    return {
        "model": str(folder / "start"),
        "clean_accuracy": clean_accuracy,
        "accuracy": toy_accuracy(folder / "start")["accuracy"],
        "seconds": round(time.perf_counter() - started, 1),
    }


def learning_check(
    folder: str | Path, model_seed: int = 0, seed: int = 0, threads: int | None = 1, log=None
) -> dict:
    """The learning test end to end in one process: make the toy model, warm it up (toy_warm_up),
    run GRPO and the control (the same run with each sequence's advantage sign shuffled) from the
    same start, and report the rewards, the rise of the rolling mean and greedy accuracy."""
    if threads:
        torch.set_num_threads(threads)
    folder = Path(folder)
    started = time.perf_counter()
    made = make_toy_model(folder / "base", seed=model_seed)
    warm = toy_warm_up(folder / "base", folder / "warm", seed=model_seed, threads=threads)
    settings = LEARNING
    window = settings["window"]
    runs = {}
    for name, control in (("grpo", None), ("control", "shuffle-signs")):
        run_started = time.perf_counter()
        result = run_toy_loop(
            warm["model"],
            steps=settings["steps"],
            prompts=settings["prompts"],
            group_size=settings["group_size"],
            lr=settings["lr"],
            control=control,
            seed=seed,
            threads=threads,
            log=log,
        )
        save_model(result.pop("model"), result.pop("tokenizer"), folder / name)
        rewards = result["rewards"]
        start, end = sum(rewards[:window]) / window, sum(rewards[-window:]) / window
        runs[name] = {
            "start": round(start, 4),
            "end": round(end, 4),
            "rise": round(end - start, 4),
            "accuracy": toy_accuracy(folder / name)["accuracy"],
            "rewards": [round(value, 4) for value in rewards],
            "exact": [round(value, 4) for value in result["exact"]],
            "seconds": round(time.perf_counter() - run_started, 1),
            "sample_s": result["sample_s"],
            "train_s": result["train_s"],
            "tokens_per_s": result["tokens_per_s"],
            "rollouts_per_s": round(
                settings["steps"] * settings["prompts"] * settings["group_size"] / result["sample_s"], 1
            ),
        }
    return {
        "model_seed": model_seed,
        "seed": seed,
        "parameters": made["parameters"],
        "vocab_size": made["vocab_size"],
        "warm_up": warm,
        "grpo": runs["grpo"],
        "control": runs["control"],
        "lead": round(runs["grpo"]["end"] - runs["control"]["end"], 4),
        "seconds": round(time.perf_counter() - started, 1),
        "settings": settings,
    }
