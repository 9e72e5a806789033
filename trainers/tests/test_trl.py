"""TRL's GRPOTrainer trains on shears groups pulled from the real `shears api` through
`shears_trainer.trl` (rollout_func + pass-through reward), on CPU with the toy model."""

import gzip
import json
import os
import urllib.request

import pytest
import torch

from shears_trainer.trl import (
    ShearsGroupError,
    ShearsRollouts,
    placeholder_prompts,
    shears_score_reward,
    split_sequence,
)

G = 4


def post(url: str, path: str, body: dict, gzipped: bool = False) -> None:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if gzipped:
        data = gzip.compress(data)
        headers["Content-Encoding"] = "gzip"
    urllib.request.urlopen(
        urllib.request.Request(url + path, data=data, method="POST", headers=headers)
    ).read()


def shears_group(tokenizer, task: int, scores: list[float]) -> dict:
    """A two-turn tool rollout as shears' managed server records it: prompt (masked), the model's
    call (trained), the tool's answer (masked), the model's reply (trained)."""
    prompt = tokenizer(
        f"<|im_start|>user\nSave the word kemo {task}.<|im_end|>\n<|im_start|>assistant\n",
        add_special_tokens=False,
    )["input_ids"]
    call = tokenizer('<tool_call>{"name":"save"}</tool_call><|im_end|>', add_special_tokens=False)[
        "input_ids"
    ]
    tool = tokenizer(
        "\n<|im_start|>tool\nsaved kemo<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False
    )["input_ids"]
    reply = tokenizer("done<|im_end|>", add_special_tokens=False)["input_ids"]
    tokens = prompt + call + tool + reply
    masks = [-100] * len(prompt) + call + [-100] * len(tool) + reply
    logprobs = [1.0] * len(prompt) + [-0.5] * len(call) + [1.0] * len(tool) + [-0.25] * len(reply)
    return {
        "tokens": [tokens] * G,
        "masks": [masks] * G,
        "scores": scores,
        "advantages": None,
        "ref_logprobs": None,
        "messages": None,
        "generation_params": None,
        "inference_logprobs": [logprobs] * G,
        "overrides": None,
        "group_overrides": None,
        "images": None,
        "env_id": None,
        "distill_token_ids": None,
        "distill_logprobs": None,
    }


def test_split_sequence_gives_trl_prompt_completion_env_mask_and_logprobs():
    part = split_sequence(
        [1, 2, 3, 4, 5, 6.0], [-100, -100, 3, -100, 5, 6], [1, 1, -0.3, 1, -0.5, -0.6], "g0 s0"
    )
    assert part == {
        "prompt_ids": [1, 2],
        "completion_ids": [3, 4, 5, 6],
        "env_mask": [1, 0, 1, 1],
        "logprobs": [-0.3, 0.0, -0.5, -0.6],
    }
    with pytest.raises(ShearsGroupError, match="g1 s2: no generated token"):
        split_sequence([1, 2], [-100, -100], None, "g1 s2")
    with pytest.raises(ShearsGroupError, match="token 1: 2.5 is not a token id"):
        split_sequence([1, 2.5], [-100, 3], None, "g0 s0")


def test_grpo_trainer_trains_two_steps_on_shears_groups(fresh_shears_api, toy_model, tmp_path):
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    post(
        fresh_shears_api,
        "/register-env",
        {"max_token_length": 256, "desired_name": "toy", "weight": 1.0, "group_size": G},
    )
    scores = [[1.0, 0.0, 0.0, 0.1], [0.0, 0.0, 1.0, 1.0], [0.1, 0.1, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0]]
    groups = [shears_group(tokenizer, task, group_scores) for task, group_scores in enumerate(scores)]
    for group in groups:
        post(fresh_shears_api, "/scored_data", group, gzipped=True)

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(toy_model, dtype=torch.float32)
    before = {name: parameter.detach().clone() for name, parameter in model.named_parameters()}
    rollouts = ShearsRollouts(fresh_shears_api, max_token_len=256, timeout_s=60)
    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        num_generations=G,
        per_device_train_batch_size=2 * G,  # two shears groups per step
        max_steps=2,
        learning_rate=1e-2,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=False,
        max_completion_length=64,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        args=args,
        processing_class=tokenizer,
        train_dataset=placeholder_prompts(64),
        reward_funcs=shears_score_reward,
        rollout_func=rollouts,
    )
    trainer.train()

    # Two steps, each on two whole shears groups, in the order the API served them.
    assert rollouts.groups_used == 4
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logs) == 2
    # The reward TRL logged is shears' score, passed through (mean over each step's two groups).
    expected = [sum(scores[0] + scores[1]) / 8, sum(scores[2] + scores[3]) / 8]
    assert [entry["reward"] for entry in logs] == pytest.approx(expected, abs=1e-6)
    # env_mask reached TRL: completion lengths count only the model's tokens, not the tool's answer.
    generated = sum(1 for mask in groups[0]["masks"][0] if mask != -100)
    assert logs[0]["completions/mean_length"] == pytest.approx(generated)
    # The weights moved.
    changed = [
        name for name, parameter in model.named_parameters() if not torch.equal(parameter, before[name])
    ]
    assert changed


def test_a_group_of_the_wrong_size_is_refused_naming_the_fix(fresh_shears_api, toy_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    post(
        fresh_shears_api,
        "/register-env",
        {"max_token_length": 256, "desired_name": "toy", "weight": 1.0, "group_size": G},
    )
    # Groups of 2 (env.group_size 2) while TRL groups by 4: TRL would mix two tasks in one group.
    for task in range(2):
        group = shears_group(tokenizer, task, [1.0, 0.0, 0.0, 1.0])
        for key in ("tokens", "masks", "inference_logprobs", "scores"):
            group[key] = group[key][:2]
        post(fresh_shears_api, "/scored_data", group, gzipped=True)

    class Trainer:  # what the adapter reads of a GRPOTrainer
        num_generations = G
        num_generations_eval = G

        class model:
            training = True

        class args:
            max_steps = 1

    rollouts = ShearsRollouts(fresh_shears_api, timeout_s=30)
    with pytest.raises(
        ShearsGroupError, match="has 2 sequences but TRL's num_generations is 4: set env.group_size"
    ):
        rollouts(["p"] * 3 + ["q"], Trainer())


def test_empty_logprob_lists_as_atropos_base_env_sends_them_mean_no_logprobs(fresh_shears_api, toy_model):
    # Atropos's BaseEnv sends `inference_logprobs: []` when it has none; the adapter read it as a
    # list of rows and raised IndexError.
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    post(
        fresh_shears_api,
        "/register-env",
        {"max_token_length": 256, "desired_name": "toy", "weight": 1.0, "group_size": G},
    )
    group = shears_group(tokenizer, 0, [1.0, 0.0, 0.0, 1.0])
    group["inference_logprobs"] = []
    group["advantages"] = []
    group["ref_logprobs"] = []
    post(fresh_shears_api, "/scored_data", group, gzipped=True)

    class Trainer:  # what the adapter reads of a GRPOTrainer
        num_generations = G
        num_generations_eval = G

        class model:
            training = True

        class args:
            max_steps = 1

    out = ShearsRollouts(fresh_shears_api, timeout_s=30)(["p"] * G, Trainer())
    assert out["logprobs"] is None
    assert len(out["completion_ids"]) == G and out["shears_score"] == [1.0, 0.0, 0.0, 1.0]
