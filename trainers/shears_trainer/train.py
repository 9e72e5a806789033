"""The reference GRPO trainer, top to bottom.

    load model + tokenizer  →  (optional) start the colocated policy server
    →  register with the trajectory API  →  loop: pull /batch, build tensors, GRPO loss,
       AdamW step (gradient accumulation, clipping), bump the policy version, log metrics,
       checkpoint every N steps
    →  save the final model folder (safetensors, config, tokenizer, chat template) and a summary.

The loss is in loss.py, the tensors in batch.py, the policy server in policy_server.py.
"""

from __future__ import annotations

import atexit
import copy
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

from .api import TrajectoryApi
from .batch import TrainBatch, batch_from_groups
from .lag import lag_metrics
from .loss import LossVariant, grpo_loss, model_label_logprobs, token_weights
from .waiting import wait_note_default


@dataclass
class GrpoConfig:
    """The `grpo` command's settings. Each field is its flag (`batch_size`: `--batch-size`), built
    from this class by transformers' HfArgumentParser, so a default is written here only."""

    model: str = field(metadata={"help": "Hugging Face model folder to start from"})
    output: str = field(metadata={"help": "folder for the final model, metrics and checkpoints"})
    api_url: str | None = field(
        default=None, metadata={"help": "trajectory API; unset: $SHEARS_API_URL, then $ATROPOS_SERVER_URL"}
    )
    steps: int = field(default=50, metadata={"help": "optimiser steps (registered with the API)"})
    batch_size: int = field(default=64, metadata={"help": "sequences per step (registered with the API)"})
    micro_batch: int = field(
        default=16, metadata={"help": "sequences per forward pass (gradient accumulation)"}
    )
    lr: float = field(default=1e-3, metadata={"help": "AdamW's learning rate"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW's weight decay"})
    adam_beta1: float = field(default=0.9, metadata={"help": "AdamW's first beta"})
    adam_beta2: float = field(default=0.99, metadata={"help": "AdamW's second beta"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping"})
    clip_low: float = field(default=0.2, metadata={"help": "PPO clip below the ratio 1"})
    clip_high: float = field(default=0.2, metadata={"help": "PPO clip above the ratio 1"})
    beta: float = field(
        default=0.0, metadata={"help": "KL weight to the reference (ref_logprobs, else the start model)"}
    )
    loss: LossVariant = field(default="grpo", metadata={"help": "aggregation: grpo, token (DAPO), dr_grpo"})
    max_tokens: int | None = field(
        default=None, metadata={"help": "dr_grpo's constant normaliser; unset: the batch width"}
    )
    advantages: Literal["served", "scores"] = field(
        default="served",
        metadata={
            "help": "served: the per-token advantages in each group (shears computes them); scores: normalise scores here"
        },
    )
    control: Literal["shuffle-signs"] | None = field(
        default=None,
        metadata={
            "help": "a control experiment: give each sequence's advantage a random sign (nothing should be learnt)"
        },
    )
    checkpoint_every: int = field(default=0, metadata={"help": "save a checkpoint every N steps (0: never)"})
    lora_rank: int = field(
        default=0, metadata={"help": "train a LoRA adapter of this rank (peft); merged on save"}
    )
    lora_alpha: int = field(default=16, metadata={"help": "LoRA's alpha"})
    serve_port: int | None = field(
        default=None, metadata={"help": "serve the policy colocated on this port (POST /generate)"}
    )
    serve_host: str = field(default="127.0.0.1", metadata={"help": "the policy server's address"})
    max_token_len: int = field(default=2048, metadata={"help": "longest sequence (registered with the API)"})
    metrics: str | None = field(default=None, metadata={"help": "metrics JSONL; unset: OUTPUT/metrics.jsonl"})
    seed: int = field(default=0, metadata={"help": "torch's seed and the control's"})
    batch_timeout_s: float = field(
        default=600.0, metadata={"help": "seconds to wait for one batch", "aliases": ["--batch-timeout"]}
    )
    wait_note_s: float = field(
        default_factory=lambda: wait_note_default(),
        metadata={
            "help": "a wait for a batch says so within 5 s, then again this often (default: SHEARS_WAIT_NOTE_MS, which shears train sets from api.wait_note_ms, else 30)"
        },
    )
    threads: int | None = field(default=None, metadata={"help": "torch CPU threads"})
    device: str = field(
        default="auto",
        metadata={"help": "torch device: auto (CUDA when this torch has it, else CPU), cpu, cuda or cuda:N"},
    )


# Advantages smaller than this are float noise (equal scores normalised: 1e-9), not signal.
ADVANTAGE_EPSILON = 1e-6


def log(message: str) -> None:
    print(message, flush=True)


def resolve_device(name: str = "auto") -> torch.device:
    """`auto`: the first CUDA device when this torch has one, else the CPU. A device asked for by
    name that this machine does not have is refused, naming what is there (never a silent CPU run)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as error:
        raise SystemExit(
            f"--device {name}: not a torch device ({error}); use auto, cpu, cuda or cuda:N"
        ) from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit(
                f"--device {name}: this torch ({torch.__version__}) sees no CUDA device; use --device cpu"
                " or install a CUDA build of torch"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise SystemExit(
                f"--device {name}: only {torch.cuda.device_count()} CUDA device(s) here (cuda:0"
                f"{f' .. cuda:{torch.cuda.device_count() - 1}' if torch.cuda.device_count() > 1 else ''})"
            )
    elif device.type != "cpu":
        raise SystemExit(f"--device {name}: only cpu and cuda devices are supported")
    return device


def load_model(path: str, lora_rank: int = 0, lora_alpha: int = 16, device: torch.device | str = "cpu"):
    # float32 on every device: the toy and small models train in full precision, and the
    # importance ratio compares these logprobs with the sampler's own (same weights, same dtype).
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(r=lora_rank, lora_alpha=lora_alpha, target_modules="all-linear", lora_dropout=0.0),
        ).to(device)
    return model, tokenizer


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, folder: Path) -> None:
    """save_pretrained, plus the chat template inside tokenizer_config.json: transformers 5 writes
    it to chat_template.jinja only, which older loaders (shears' own before it learnt that file)
    do not read."""
    tokenizer.save_pretrained(folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    if tokenizer.chat_template and config.get("chat_template") != tokenizer.chat_template:
        config["chat_template"] = tokenizer.chat_template
        config_path.write_text(json.dumps(config, indent=2) + "\n")


def save_model(model, tokenizer, folder: str | Path) -> Path:
    """A folder `AutoModelForCausalLM.from_pretrained` loads: LoRA is merged into a copy first."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "merge_and_unload"):
        model = copy.deepcopy(model).merge_and_unload()
    # Saved tensors are the same on every device; safetensors reads them back onto the CPU.
    model.save_pretrained(folder, safe_serialization=True)
    save_tokenizer(tokenizer, folder)
    return folder


def stop_token_ids(tokenizer) -> list[int]:
    ids = []
    for token in ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", tokenizer.eos_token):
        if token and token in tokenizer.get_vocab():
            ids.append(tokenizer.convert_tokens_to_ids(token))
    return sorted(set(ids))


def micro_batches(batch: TrainBatch, weights: torch.Tensor, size: int, device: torch.device | None = None):
    """Rows of `size`, right padding trimmed, moved to `device` (the batch is built on the CPU)."""

    def on(tensor):
        return tensor if device is None else tensor.to(device, non_blocking=True)

    for start in range(0, batch.input_ids.shape[0], size):
        rows = slice(start, start + size)
        # Trim the right padding this micro-batch does not need.
        width = int(batch.attention_mask[rows].sum(dim=1).max())
        cols = slice(0, width)
        yield {
            "input_ids": on(batch.input_ids[rows, cols]),
            "attention_mask": on(batch.attention_mask[rows, cols]),
            "labels": on(batch.labels[rows, cols]),
            "advantages": on(batch.advantages[rows, cols]),
            "old": None if batch.old_logprobs is None else on(batch.old_logprobs[rows, cols]),
            "ref": None if batch.ref_logprobs is None else on(batch.ref_logprobs[rows, cols]),
            "weights": on(weights[rows, cols]),
            "mask": on(batch.loss_mask[rows, cols]),
        }


def train_step(model, optimizer, batch: TrainBatch, config: GrpoConfig, reference=None, on_plan=None) -> dict:
    """One optimiser step over the batch (micro-batches accumulate into one gradient). `on_plan`
    receives each micro-batch's output-layer plan (loss.plan_output_layer: softmax kept for the
    backward pass or recomputed there)."""
    weights = token_weights(batch.loss_mask, config.loss, config.max_tokens)
    totals = {"loss": 0.0, "policy": 0.0, "kl": 0.0, "clip_fraction": 0.0, "entropy": 0.0, "ratio": 0.0}
    trained = max(batch.trained_tokens, 1)
    optimizer.zero_grad(set_to_none=True)
    device = next(model.parameters()).device
    for part in micro_batches(batch, weights, config.micro_batch, device):
        logprobs, entropy = model_label_logprobs(
            model, part["input_ids"], part["attention_mask"], part["labels"], on_plan=on_plan
        )
        # Without inference logprobs the batch is treated as on-policy: ratio 1 (no clipping).
        old = part["old"] if part["old"] is not None else logprobs.detach()
        ref = part["ref"]
        if ref is None and reference is not None and config.beta > 0:
            with torch.no_grad():
                ref, _ = model_label_logprobs(
                    reference, part["input_ids"], part["attention_mask"], part["labels"], entropy=False
                )
        parts = grpo_loss(
            logprobs,
            old,
            part["advantages"],
            part["weights"],
            clip_low=config.clip_low,
            clip_high=config.clip_high,
            ref_logprobs=ref,
            beta=config.beta,
        )
        parts.loss.backward()
        tokens = float(part["mask"].sum())
        totals["loss"] += parts.loss.item()
        totals["policy"] += parts.policy.item()
        totals["kl"] += parts.kl.item()
        totals["clip_fraction"] += float(parts.clip_fraction) * tokens / trained
        totals["ratio"] += float(parts.ratio_mean) * tokens / trained
        totals["entropy"] += float((entropy.detach() * part["mask"]).sum()) / trained
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
    optimizer.step()
    totals["grad_norm"] = float(grad_norm)
    return totals


def plan_reporter(log):
    """An `on_plan` for train_step that says the output layer's plan in the log at the first step
    and whenever it changes (a longer batch, less memory), not once per micro-batch."""
    said = None

    def report(plan) -> None:
        nonlocal said
        if plan.keep != said:
            said = plan.keep
            log(plan.describe())

    return report


def shuffle_advantage_signs(batch: TrainBatch, generator: random.Random) -> None:
    """The control experiment: each sequence's advantages get a random sign, so the reward says
    nothing about which way to move. A trainer that still 'learns' under this is not learning
    from the reward."""
    for row in range(batch.advantages.shape[0]):
        if generator.random() < 0.5:
            batch.advantages[row] *= -1


def run_grpo(config: GrpoConfig) -> dict:
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    control_rng = random.Random(config.seed)
    output = Path(config.output)
    output.mkdir(parents=True, exist_ok=True)
    metrics_path = Path(config.metrics) if config.metrics else output / "metrics.jsonl"
    metrics_path.parent.mkdir(parents=True, exist_ok=True)
    api_url = config.api_url or os.environ.get("SHEARS_API_URL") or os.environ.get("ATROPOS_SERVER_URL")
    if not api_url:
        raise SystemExit("no trajectory API: pass --api-url or set SHEARS_API_URL (shears train sets it)")

    device = resolve_device(config.device)
    model, tokenizer = load_model(config.model, config.lora_rank, config.lora_alpha, device)
    model.train()
    log(f"training on {device}")
    reference = None
    if config.beta > 0:
        reference = AutoModelForCausalLM.from_pretrained(config.model, dtype=torch.float32).to(device).eval()
        for parameter in reference.parameters():
            parameter.requires_grad_(False)
    optimizer = torch.optim.AdamW(
        [parameter for parameter in model.parameters() if parameter.requires_grad],
        lr=config.lr,
        betas=(config.adam_beta1, config.adam_beta2),
        weight_decay=config.weight_decay,
    )
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    server = None
    if config.serve_port is not None:
        from .policy_server import PolicyServer

        server = PolicyServer(
            model, stop_token_ids(tokenizer), host=config.serve_host, port=config.serve_port
        ).start()
        # However the run ends (an error such as no batch within --batch-timeout included), the
        # generation thread is stopped before the interpreter exits: a daemon thread killed in the
        # middle of a torch call aborts the process (SIGABRT) instead of exiting with the error.
        atexit.register(server.close)
        log(f"policy server listening on {server.url} (POST /generate, policy_version 0)")

    # Register only once the policy server answers: env workers wait for the trainer's first
    # /batch before they start rollouts, so none of them meets a closed port.
    api = TrajectoryApi(api_url, token=os.environ.get("SHEARS_API_TOKEN"))
    api.register(
        batch_size=config.batch_size,
        max_token_len=config.max_token_len,
        num_steps=config.steps,
        checkpoint_dir=str(output / "checkpoints"),
        save_checkpoint_interval=config.checkpoint_every,
    )
    log(
        f"registered with {api_url}: batch_size {config.batch_size}, {config.steps} steps, loss {config.loss}"
    )

    rewards: list[float] = []
    checkpoints: list[str] = []
    report_plan = plan_reporter(log)
    started = time.monotonic()
    with metrics_path.open("a") as metrics:
        for step in range(1, config.steps + 1):
            waited = time.monotonic()
            groups = api.wait_for_batch(
                timeout_s=config.batch_timeout_s, say=log, note_every_s=config.wait_note_s
            )
            wait_s = time.monotonic() - waited
            batch = batch_from_groups(
                groups, pad_id=pad_id, use_served_advantages=config.advantages == "served"
            )
            if config.control == "shuffle-signs":
                shuffle_advantage_signs(batch, control_rng)
            # Off-policy lag of every consumed record, against the weights before this step.
            lags = lag_metrics(groups, server.version if server is not None else step - 1)
            step_started = time.monotonic()
            # A batch whose advantages are all zero (groups of equal scores) carries no signal:
            # its gradient is zero or float noise, and AdamW would still move every weight by
            # about `lr` (momentum, and noise divided by its own tiny scale). No step is taken.
            skipped = not bool((batch.advantages.abs() > ADVANTAGE_EPSILON).any())
            lock = server.lock if server is not None else None
            if lock is not None:
                lock.acquire()
            try:
                if skipped:
                    totals = dict.fromkeys(
                        ("loss", "policy", "kl", "clip_fraction", "entropy", "ratio", "grad_norm"), 0.0
                    )
                    version = server.version if server is not None else step - 1
                else:
                    totals = train_step(model, optimizer, batch, config, reference, on_plan=report_plan)
                    version = server.bump_version() if server is not None else step
            finally:
                if lock is not None:
                    lock.release()
            step_s = time.monotonic() - step_started
            tokens = int(batch.attention_mask.sum())
            reward = float(batch.scores.mean())
            rewards.append(reward)
            record = {
                "step": step,
                **{key: round(value, 6) for key, value in totals.items()},
                "reward_mean": round(reward, 6),
                "sequences": int(batch.input_ids.shape[0]),
                "tokens": tokens,
                "trained_tokens": batch.trained_tokens,
                "tokens_per_s": round(tokens / step_s, 1) if step_s > 0 else None,
                "step_s": round(step_s, 4),
                "wait_s": round(wait_s, 4),
                "advantages": batch.advantage_source,
                "on_policy_fallback": batch.old_logprobs is None,
                "skipped": skipped,
                "policy_version": version,
                **lags,
                "time_s": round(time.monotonic() - started, 3),
            }
            metrics.write(json.dumps(record) + "\n")
            metrics.flush()
            log(
                f"step {step}/{config.steps}{' (no signal: skipped)' if skipped else ''} reward {reward:.3f} loss {totals['loss']:.4f} "
                f"clip {totals['clip_fraction']:.3f} grad {totals['grad_norm']:.3f} "
                f"entropy {totals['entropy']:.3f} {record['tokens_per_s']} tok/s"
            )
            if config.checkpoint_every and step % config.checkpoint_every == 0 and step < config.steps:
                folder = save_model(model, tokenizer, output / "checkpoints" / f"step-{step}")
                if hasattr(model, "peft_config"):
                    # The adapter alone too, for a LoRA hot-swap into vLLM (/v1/load_lora_adapter).
                    model.save_pretrained(folder / "adapter")
                # Written last: `shears train` syncs a vLLM server once this file exists.
                (folder / "checkpoint.json").write_text(json.dumps({"step": step, "policy_version": version}))
                checkpoints.append(str(folder))
    if server is not None:
        server.close()
    save_model(model, tokenizer, output)
    window = max(1, min(10, len(rewards) // 4))
    summary = {
        "steps": len(rewards),
        "reward_start": sum(rewards[:window]) / window,
        "reward_end": sum(rewards[-window:]) / window,
        "reward_window": window,
        "output": str(output),
        "metrics": str(metrics_path),
        "checkpoints": checkpoints,
        "seconds": round(time.monotonic() - started, 1),
        "config": {key: value for key, value in asdict(config).items() if key not in ("api_url",)},
    }
    (output / "train-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log(
        f"done: {summary['steps']} steps, reward {summary['reward_start']:.3f} → {summary['reward_end']:.3f} "
        f"(mean of the first/last {window}); model in {output}, metrics in {metrics_path}"
    )
    return summary


# --- supervised warm-up -------------------------------------------------------------------------


def sft_examples(
    records: list[dict], tokenizer, tools: list | None, max_len: int
) -> list[tuple[list[int], list[int]]]:
    """Each record's assistant turns are trained; everything else is context. The spans come from
    rendering the conversation up to each assistant turn with the chat template."""
    examples = []
    for index, record in enumerate(records):
        messages = record.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError(f"SFT record {index}: no messages")
        full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
        ids = tokenizer(full, add_special_tokens=False)["input_ids"]
        labels = [-100] * len(ids)
        for turn, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            before = tokenizer.apply_chat_template(
                messages[:turn], tools=tools, tokenize=False, add_generation_prompt=True
            )
            through = tokenizer.apply_chat_template(messages[: turn + 1], tools=tools, tokenize=False)
            start = len(tokenizer(before, add_special_tokens=False)["input_ids"])
            end = len(tokenizer(through, add_special_tokens=False)["input_ids"])
            if not full.startswith(through):
                raise ValueError(f"SFT record {index}: the template does not render turn {turn} as a prefix")
            for position in range(start, min(end, len(ids))):
                labels[position] = ids[position]
        examples.append((ids[:max_len], labels[:max_len]))
    return examples


def run_sft(
    model_path: str,
    data: str,
    output: str,
    tools: list | None = None,
    epochs: float = 1.0,
    steps: int | None = None,
    batch_size: int = 32,
    lr: float = 3e-3,
    max_len: int = 256,
    seed: int = 0,
    metrics: str | None = None,
    threads: int | None = None,
    device: str = "auto",
) -> dict:
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    on = resolve_device(device)
    model, tokenizer = load_model(model_path, device=on)
    model.train()
    records = [json.loads(line) for line in Path(data).read_text().splitlines() if line.strip()]
    examples = sft_examples(records, tokenizer, tools, max_len)
    total = steps if steps is not None else max(1, math.ceil(len(examples) * epochs / batch_size))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    metrics_path = Path(metrics) if metrics else Path(output) / "sft-metrics.jsonl"
    metrics_path.parent.mkdir(parents=True, exist_ok=True)
    order: list[int] = []
    started = time.monotonic()
    losses = []
    with metrics_path.open("a") as sink:
        for step in range(1, total + 1):
            chosen = []
            while len(chosen) < batch_size:
                if not order:
                    order = list(range(len(examples)))
                    rng.shuffle(order)
                chosen.append(examples[order.pop()])
            width = max(len(ids) for ids, _ in chosen) - 1
            input_ids = torch.full((len(chosen), width), pad_id, dtype=torch.long)
            labels = torch.full((len(chosen), width), -100, dtype=torch.long)
            attention = torch.zeros((len(chosen), width), dtype=torch.long)
            for row, (ids, label) in enumerate(chosen):
                n = len(ids) - 1
                input_ids[row, :n] = torch.tensor(ids[:-1], dtype=torch.long)
                labels[row, :n] = torch.tensor(label[1:], dtype=torch.long)
                attention[row, :n] = 1
            logits = model(input_ids=input_ids.to(on), attention_mask=attention.to(on)).logits
            loss = torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), labels.to(on).flatten(), ignore_index=-100
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
            sink.write(json.dumps({"sft_step": step, "loss": round(losses[-1], 6)}) + "\n")
    save_model(model, tokenizer, output)
    return {
        "steps": total,
        "examples": len(examples),
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "seconds": round(time.monotonic() - started, 1),
        "device": str(on),
        "output": output,
    }
