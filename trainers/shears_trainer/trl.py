"""TRL's `GRPOTrainer` trained on shears groups: a `rollout_func` that pulls scored groups from the
trajectory API (`shears api`, fed by `shears serve`) instead of generating, and a pass-through
reward that hands TRL shears' score.

    from trl import GRPOConfig, GRPOTrainer
    from shears_trainer.trl import ShearsRollouts, shears_score_reward

    rollouts = ShearsRollouts("http://127.0.0.1:8000")
    trainer = GRPOTrainer(model=..., args=GRPOConfig(num_generations=8, ...),   # = env.group_size
                          train_dataset=placeholder_prompts(64), reward_funcs=shears_score_reward,
                          rollout_func=rollouts)

What TRL gets per completion: `prompt_ids` (the sequence's tokens before its first generated one),
`completion_ids` (the rest: generated turns, and tool results between them), `env_mask` (1 on tokens
the policy generated, 0 on tool results and templates: shears' masks), `logprobs` (shears' inference
logprobs on those positions, 0.0 on env positions; None when a group has none), and `shears_score`
(the rollout's score), which `shears_score_reward` returns as the reward.

The contract as TRL 1.13 really calls it (read from trl/trainer/grpo_trainer.py, not its
docstring): `rollout_func(prompts, trainer)` gets the per-process slice of the generation batch
with each dataset prompt ALREADY repeated `num_generations` times, consecutively, and must return
exactly one completion per entry; TRL then groups consecutive runs of `num_generations` for its
advantages. So one shears group (env.group_size rollouts of one task) fills one run, and the
dataset's prompts are placeholders: shears' env chooses the tasks, the dataset only sets how many.

Advantages: TRL recomputes them from the reward, per group of `num_generations` ((score - mean) /
(std + 1e-4) with `scale_rewards="group"`, the default). shears' own (per-token) advantages in the
group are NOT used. The inference logprobs are used by TRL only for its vLLM importance-sampling
correction (`use_vllm=True`, `vllm_importance_sampling_correction`); without vLLM, TRL's ratio is
against its own model at generation time, so shears' sampling policy (possibly older weights) is
not corrected for.

Fragile (TRL marks `rollout_func` experimental): the prompt repetition above contradicts the
docstring and may change; extra returned keys reach reward functions only as lists indexed like
the inputs; `env_mask` is read only when `tools` is not set on the trainer; key names
(`prompt_ids`, `completion_ids`, `logprobs`, `env_mask`) have changed between TRL releases.
Pinned and tested with trl==1.13.0.
"""

from __future__ import annotations

import os

from .api import TrajectoryApi
from .batch import optional_rows
from .waiting import wait_note_default


class ShearsGroupError(ValueError):
    pass


def _token(value: object, where: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShearsGroupError(f"{where}: {value!r} is not a token id")
    return value


def split_sequence(tokens: list, masks: list, logprobs: list | None, where: str) -> dict:
    """One shears sequence → TRL's prompt/completion halves, env mask and sampling logprobs."""
    if len(masks) != len(tokens):
        raise ShearsGroupError(f"{where}: {len(tokens)} tokens but {len(masks)} masks")
    ids = [_token(value, f"{where} token {index}") for index, value in enumerate(tokens)]
    generated = [_token(value, f"{where} mask {index}") != -100 for index, value in enumerate(masks)]
    if not any(generated):
        raise ShearsGroupError(f"{where}: no generated token (every mask is -100)")
    start = generated.index(True)
    result = {
        "prompt_ids": ids[:start],
        "completion_ids": ids[start:],
        "env_mask": [1 if flag else 0 for flag in generated[start:]],
        "logprobs": None,
    }
    if logprobs is not None:
        if len(logprobs) != len(tokens):
            raise ShearsGroupError(f"{where}: {len(tokens)} tokens but {len(logprobs)} inference logprobs")
        result["logprobs"] = [
            float(logprobs[index]) if generated[index] else 0.0 for index in range(start, len(tokens))
        ]
    return result


class ShearsRollouts:
    """`rollout_func` for trl's GRPOTrainer: each call returns whole shears groups, one completion
    per (repeated) prompt TRL passes. Registers with the API on the first call, with the batch size
    TRL asks for; set `api.split_groups: false` and `env.group_size` = `num_generations`."""

    def __init__(
        self,
        api_url: str | None = None,
        token: str | None = None,
        max_token_len: int = 2048,
        num_steps: int = 0,
        timeout_s: float = 600.0,
    ):
        url = api_url or os.environ.get("SHEARS_API_URL") or os.environ.get("ATROPOS_SERVER_URL")
        if not url:
            raise ValueError("ShearsRollouts: no trajectory API (pass api_url or set SHEARS_API_URL)")
        self.api = TrajectoryApi(url, token=token or os.environ.get("SHEARS_API_TOKEN"))
        self.max_token_len = max_token_len
        self.num_steps = num_steps
        self.timeout_s = timeout_s
        self.registered = False
        self.pending: list[dict] = []  # groups pulled but not handed to TRL yet
        self.groups_used = 0

    def __call__(self, prompts: list, trainer) -> dict:
        size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        if len(prompts) % size != 0:
            raise ShearsGroupError(
                f"TRL passed {len(prompts)} prompts, not a multiple of num_generations {size}"
            )
        if not self.registered:
            steps = self.num_steps or int(getattr(trainer.args, "max_steps", 0) or 0)
            self.api.register(batch_size=len(prompts), max_token_len=self.max_token_len, num_steps=steps)
            self.registered = True
        chosen: list[dict] = []
        while len(chosen) * size < len(prompts):
            if not self.pending:
                self.pending.extend(
                    self.api.wait_for_batch(timeout_s=self.timeout_s, note_every_s=wait_note_default())
                )
            group = self.pending.pop(0)
            count = len(group.get("tokens") or [])
            if count != size:
                raise ShearsGroupError(
                    f"a shears group has {count} sequences but TRL's num_generations is {size}: set "
                    f"env.group_size to {size} and api.split_groups: false (a token record split because the "
                    "chat template re-rendered history also adds sequences)"
                )
            chosen.append(group)
        self.groups_used += len(chosen)
        out: dict = {
            "prompt_ids": [],
            "completion_ids": [],
            "logprobs": [],
            "env_mask": [],
            "shears_score": [],
        }
        every_logprob = all(optional_rows(group, "inference_logprobs") is not None for group in chosen)
        for number, group in enumerate(chosen):
            inference = optional_rows(group, "inference_logprobs")
            for index, (tokens, masks) in enumerate(zip(group["tokens"], group["masks"], strict=True)):
                part = split_sequence(
                    tokens,
                    masks,
                    inference[index] if inference is not None else None,
                    f"group {number} sequence {index}",
                )
                out["prompt_ids"].append(part["prompt_ids"])
                out["completion_ids"].append(part["completion_ids"])
                out["env_mask"].append(part["env_mask"])
                out["logprobs"].append(part["logprobs"])
                out["shears_score"].append(float(group["scores"][index]))
        if not every_logprob:
            # TRL reads None as "no sampling logprobs" (it then corrects nothing); a mix is not allowed.
            out["logprobs"] = None
        return out


def shears_score_reward(prompts, completions, shears_score, **kwargs) -> list[float]:
    """The pass-through reward: shears' score of each rollout, as `ShearsRollouts` returned it."""
    return [float(score) for score in shears_score]


def placeholder_prompts(count: int):
    """A dataset (🤗 datasets) for GRPOTrainer whose prompts are placeholders: shears' env chooses
    the tasks; the count only bounds how many TRL asks for."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": f"shears task {index}"} for index in range(count)])
