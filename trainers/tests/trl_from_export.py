"""One TRL training step from each of `shears export`'s formats, on CPU.

Used by packages/cli/src/commands/export.e2e.test.ts (not collected by pytest: it needs a run file
made by `shears process` and exported by `shears export`). For each of --sft, --dpo and --grpo it
loads the file with `datasets.load_dataset("json", ...)` exactly as a TRL user would, trains one
optimiser step with SFTTrainer, DPOTrainer or GRPOTrainer from --model, checks that the weights
changed, and prints one line per trainer: `result {"trainer", "rows", "loss", "changed"}`.
"""

import argparse
import json
import os
import tempfile

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer


def load(model_dir: str):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    return model, tokenizer


def snapshot(model) -> dict[str, torch.Tensor]:
    return {name: param.detach().clone() for name, param in model.named_parameters()}


def changed(model, before: dict[str, torch.Tensor]) -> bool:
    return any(not torch.equal(before[name], param.detach()) for name, param in model.named_parameters())


def common(out: str) -> dict:
    return {
        "output_dir": out,
        "max_steps": 1,
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 1,
        "learning_rate": 1e-2,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": [],
        "use_cpu": True,
        "bf16": False,
        "fp16": False,
        "seed": 0,
        "dataloader_num_workers": 0,
    }


def last_loss(trainer) -> float | None:
    for entry in reversed(trainer.state.log_history):
        if "loss" in entry:
            return float(entry["loss"])
        if "train_loss" in entry:
            return float(entry["train_loss"])
    return None


def train_one_step(
    trainer_class, config_class, path: str, model_dir: str, out: str, trainer_extra=None, **extra
) -> dict:
    """Loads `path` as a TRL user would, trains one step, and says whether the weights moved."""
    data = load_dataset("json", data_files=path, split="train")
    model, tokenizer = load(model_dir)
    before = snapshot(model)
    trainer = trainer_class(
        model=model,
        args=config_class(**common(out), **extra),
        train_dataset=data,
        processing_class=tokenizer,
        **(trainer_extra or {}),
    )
    trainer.train()
    return {
        "trainer": trainer_class.__name__,
        "rows": len(data),
        "loss": last_loss(trainer),
        "changed": changed(model, before),
    }


def run_sft(path: str, model_dir: str, out: str) -> dict:
    from trl import SFTConfig, SFTTrainer

    return train_one_step(SFTTrainer, SFTConfig, path, model_dir, out, max_length=256)


def run_dpo(path: str, model_dir: str, out: str) -> dict:
    from trl import DPOConfig, DPOTrainer

    return train_one_step(DPOTrainer, DPOConfig, path, model_dir, out, max_length=256)


def run_grpo(path: str, model_dir: str, out: str) -> dict:
    from trl import GRPOConfig, GRPOTrainer

    seen: set[str] = set()

    def letters_of_the_word(completions, task, **_):
        """A reward that reads the exported task row: the share of the task's word's letters the
        completion contains (graded, so a random model's two samples differ and the step moves)."""
        words = [json.loads(row)["word"] for row in task]
        seen.update(words)
        texts = [
            c if isinstance(c, str) else " ".join(str(m.get("content", "")) for m in c) for c in completions
        ]
        return [sum(letter in text for letter in word) / len(word) for word, text in zip(words, texts)]

    result = train_one_step(
        GRPOTrainer,
        GRPOConfig,
        path,
        model_dir,
        out,
        trainer_extra={"reward_funcs": letters_of_the_word},
        num_generations=2,
        max_completion_length=16,
        temperature=1.0,
    )
    return {**result, "task_words": sorted(seen)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--sft")
    parser.add_argument("--dpo")
    parser.add_argument("--grpo")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as out:
        for name, run in (("sft", run_sft), ("dpo", run_dpo), ("grpo", run_grpo)):
            path = getattr(args, name)
            if path:
                print("result", json.dumps(run(path, args.model, os.path.join(out, name))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
