"""The GRPO step end to end on sampled data (issue 22 §6, "why it does not learn", checked bottom
up): the policy server's logprobs are those of the same tokens the trainer scores after the shift
(ratio 1 on policy), and one step moves each sampled sequence the way its advantage says."""

import random

import torch

from shears_trainer.batch import IGNORE, Sequence, advantages_from_scores, collate
from shears_trainer.loss import model_label_logprobs
from shears_trainer.policy_server import Sampling, generate_batch
from shears_trainer.toy_loop import toy_score
from shears_trainer.train import GrpoConfig, load_model, stop_token_ids, train_step


def sampled_batch(model, tokenizer, groups=2, group_size=4, seed=0):
    """Groups sampled from the model, shaped as shears serves them: inference logprobs aligned with
    `tokens` (1.0 at masked positions, as Atropos spells them), advantages from arbitrary scores."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    sequences = []
    for group in range(groups):
        prompt = tokenizer(f"<|im_start|>user\nSave the word {group}.<|im_end|>\n<|im_start|>assistant\n")[
            "input_ids"
        ]
        sampling = Sampling(max_tokens=12, temperature=1.0)
        results = generate_batch(
            model, [(prompt, sampling)] * group_size, set(stop_token_ids(tokenizer)), None
        )
        scores = [rng.choice([0.0, 0.1, 1.0]) for _ in results]
        scores[0], scores[1] = 1.0, 0.0  # never all equal
        for (ids, logprobs, _), advantage, score in zip(results, advantages_from_scores(scores), scores):
            sequences.append(
                Sequence(
                    tokens=prompt + ids,
                    masks=[IGNORE] * len(prompt) + ids,
                    advantages=[0.0] * len(prompt) + [advantage] * len(ids),
                    inference_logprobs=[1.0] * len(prompt) + logprobs,
                    ref_logprobs=None,
                    score=score,
                    group=group,
                )
            )
    return collate(sequences, pad_id=tokenizer.pad_token_id)


def sequence_logprobs(model, batch):
    # The trainer's own path (the logits of the trained positions only, in chunks).
    with torch.no_grad():
        logprobs, _ = model_label_logprobs(model, batch.input_ids, batch.attention_mask, batch.labels)
    return logprobs


def test_inference_logprobs_are_the_trainers_for_the_same_tokens(toy_model):
    model, tokenizer = load_model(str(toy_model))
    batch = sampled_batch(model, tokenizer)
    mask = batch.loss_mask.bool()
    assert mask.sum() > 8
    trainer = sequence_logprobs(model, batch)
    # The server samples left-padded with a KV cache, the trainer scores right-padded in one pass:
    # the same numbers at every trained position, so the importance ratio starts at exactly 1.
    assert torch.allclose(trainer[mask], batch.old_logprobs[mask], atol=1e-4)
    # The 1.0 placeholders at masked positions are in `old_logprobs`; the step's ratio (over the
    # trained tokens only) does not see them.
    assert bool((batch.old_logprobs[~mask] == 1.0).any())
    totals = train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), batch, GrpoConfig("", ""))
    assert abs(totals["ratio"] - 1.0) < 1e-4
    assert totals["clip_fraction"] == 0.0


def test_one_step_moves_each_sampled_sequence_the_way_its_advantage_says(toy_model):
    model, tokenizer = load_model(str(toy_model))
    batch = sampled_batch(model, tokenizer, groups=3, group_size=4, seed=1)
    before = (sequence_logprobs(model, batch) * batch.loss_mask).sum(1)
    train_step(
        model, torch.optim.SGD(model.parameters(), lr=0.5), batch, GrpoConfig("", "", max_grad_norm=1e9)
    )
    after = (sequence_logprobs(model, batch) * batch.loss_mask).sum(1)
    advantage = batch.advantages.sum(1) / batch.loss_mask.sum(1)
    change = after - before
    # Rewarded sequences became more likely, punished ones less: a flipped sign fails both.
    assert bool((change[advantage > 0.1] > 0).all()), (advantage, change)
    assert bool((change[advantage < -0.1] < 0).all()), (advantage, change)


def test_the_toy_rule_scores_as_the_env_does():
    call = '<tool_call>{"name":"save","arguments":{"word":"bamo"}}</tool_call><|im_end|>'
    assert toy_score(call, "bamo") == 1.0
    assert toy_score(call, "bebu") == 0.1
    assert (
        toy_score('<tool_call>{"name":"save","arguments":"{\\"word\\":\\"bamo\\"}"}</tool_call>', "bamo")
        == 1.0
    )
    assert toy_score("<tool_call>{not json}</tool_call>", "bamo") == 0.0
    assert toy_score('<tool_call>{"name":"load","arguments":{"word":"bamo"}}</tool_call>', "bamo") == 0.0
    assert toy_score("done", "bamo") == 0.0


def test_the_sampler_computes_only_the_last_positions_logits(toy_model):
    # The prompt's forward pass would otherwise compute logits for every prompt position:
    # [rows, prompt length, vocabulary], the largest tensor of a long-prompt batch.
    for lora_rank in (0, 4):
        model, tokenizer = load_model(str(toy_model), lora_rank=lora_rank)
        base = model.get_base_model() if lora_rank else model
        shapes = []
        hook = base.register_forward_hook(
            lambda _module, _args, output, _shapes=shapes: _shapes.append(
                (*output.logits.shape, output.logits.requires_grad)
            )
        )
        prompt = tokenizer("<|im_start|>user\nSave the word mazu.<|im_end|>\n<|im_start|>assistant\n")[
            "input_ids"
        ]
        generate_batch(model, [(prompt, Sampling(max_tokens=4))] * 3, set(stop_token_ids(tokenizer)), None)
        hook.remove()
        # ... and builds no autograd graph (a graph through 32 steps of KV cache held 40 GB on a GPU).
        assert shapes and all(shape[1] == 1 and not grad for *shape, grad in shapes), (lora_rank, shapes)
