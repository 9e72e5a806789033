"""Tensors from served batches: every JSON spelling of a number gives the same tensors, with the
dtype the field needs; what cannot be trained on is refused with the group, sequence and field."""

import gzip
import json
import urllib.request

import pytest
import torch

from shears_trainer.api import TrajectoryApi
from shears_trainer.batch import BatchError, advantages_from_scores, batch_from_groups

# One group of two sequences written with the number spellings JSON allows for the same values.
SPELLINGS = {
    "plain": ("5", "9", "42", "77", "1", "-1", "-0.5"),
    "float": ("5.0", "9.0", "42.0", "77.0", "1.0", "-1.0", "-0.50"),
    "exponent": ("5e0", "0.9e1", "4.2E1", "770e-1", "1e0", "-1E0", "-5e-1"),
    "signed_exponent": ("5E+0", "90E-1", "42e+0", "7.7e+1", "10E-1", "-0.1e1", "-50e-2"),
}


def group_text(spelling: str) -> str:
    a, b, c, d, one, minus_one, half = SPELLINGS[spelling]
    return (
        f'{{"tokens": [[{a}, {b}, {c}], [{a}, {b}, {d}]],'
        f' "masks": [[-100, -100, {c}], [-100, -100, {d}]],'
        f' "scores": [{one}, {minus_one}],'
        f' "advantages": null,'
        f' "inference_logprobs": [[{one}, {one}, {half}], [{one}, {one}, {half}]],'
        f' "ref_logprobs": null, "messages": null, "generation_params": null, "overrides": null,'
        f' "group_overrides": null, "images": null, "env_id": null, "distill_token_ids": null,'
        f' "distill_logprobs": null}}'
    )


def check(batch):
    assert batch.input_ids.dtype == torch.long and batch.labels.dtype == torch.long
    assert batch.advantages.dtype == torch.float32 and batch.old_logprobs.dtype == torch.float32
    assert batch.input_ids.tolist() == [[5, 9], [5, 9]]
    assert batch.labels.tolist() == [[-100, 42], [-100, 77]]
    assert batch.loss_mask.tolist() == [[0.0, 1.0], [0.0, 1.0]]
    # No served advantages: group-normalised scores (1, -1 → ±1) on the trained token only.
    assert batch.advantages[:, 1].tolist() == pytest.approx([1.0, -1.0], abs=1e-5)
    assert batch.advantages[:, 0].tolist() == [0.0, 0.0]
    assert batch.old_logprobs[:, 1].tolist() == [-0.5, -0.5]
    assert batch.advantage_source == "scores"
    # An embedding lookup works: the ids are integers, not floats.
    torch.nn.Embedding(100, 4)(batch.input_ids)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_every_spelling_parsed_by_python_json_gives_the_same_tensors(spelling):
    check(batch_from_groups([json.loads(group_text(spelling))]))


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_every_spelling_served_by_shears_api(shears_api, spelling):
    """Posted to the real `shears api` with that spelling, pulled back from /batch."""
    api = TrajectoryApi(shears_api)
    requests = [
        ("GET", "/reset_data", None),
    ]
    for method, path, body in requests:
        urllib.request.urlopen(urllib.request.Request(shears_api + path, data=body, method=method)).read()
    api.register(batch_size=2, max_token_len=64, num_steps=10)
    assert api.batch() is None
    env = json.dumps(
        {"max_token_length": 64, "desired_name": "spell", "weight": 1.0, "group_size": 2}
    ).encode()
    urllib.request.urlopen(
        urllib.request.Request(
            shears_api + "/register-env",
            data=env,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
    ).read()
    body = gzip.compress(group_text(spelling).encode())
    urllib.request.urlopen(
        urllib.request.Request(
            shears_api + "/scored_data",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
    ).read()
    groups = api.wait_for_batch(timeout_s=30)
    check(batch_from_groups(groups))


def test_served_per_token_advantages_are_used_as_given():
    group = json.loads(group_text("plain"))
    group["advantages"] = [[0, 0, 0.25], [0, 0, -0.75]]
    batch = batch_from_groups([group])
    assert batch.advantages[:, 1].tolist() == [0.25, -0.75]
    assert batch.advantage_source == "served"
    # Asked to recompute from scores, the trainer ignores them.
    assert batch_from_groups([group], use_served_advantages=False).advantages[:, 1].tolist() == pytest.approx(
        [1.0, -1.0], abs=1e-5
    )


def test_set_advantage_to_zero_override():
    group = json.loads(group_text("plain"))
    group["overrides"] = [{"set_advantage_to_zero": True}, {}]
    assert batch_from_groups([group]).advantages[:, 1].tolist() == pytest.approx([0.0, -1.0], abs=1e-5)


def test_empty_lists_as_atropos_base_env_sends_them_mean_absent():
    # Atropos's BaseEnv sends `advantages: []`, `ref_logprobs: []` when it has none; the API takes
    # them, so the trainer must read them as absent (it raised IndexError on them).
    group = json.loads(group_text("plain"))
    group["advantages"] = []
    group["ref_logprobs"] = []
    group["inference_logprobs"] = []
    batch = batch_from_groups([group])
    assert batch.advantage_source == "scores"
    assert batch.advantages[:, 1].tolist() == pytest.approx([1.0, -1.0], abs=1e-5)
    assert batch.ref_logprobs is None and batch.old_logprobs is None


def test_int_scores_and_missing_logprobs():
    group = json.loads(group_text("plain"))
    group["scores"] = [3, 1]
    group["inference_logprobs"] = None
    batch = batch_from_groups([group])
    assert batch.scores.dtype == torch.float32 and batch.scores.tolist() == [3.0, 1.0]
    assert batch.old_logprobs is None


def test_advantages_from_scores():
    assert advantages_from_scores([0, 1, 2, 3]) == pytest.approx(
        [-1.341641, -0.447214, 0.447214, 1.341641], abs=1e-5
    )
    assert advantages_from_scores([1, 1]) == [0.0, 0.0]


@pytest.mark.parametrize(
    "field, value, message",
    [
        (
            "tokens",
            [[5, 9.5, 42], [5, 9, 77]],
            r"group 0, sequence 0, tokens\[1\]: expected an integer, got 9.5",
        ),
        ("tokens", [[5, True, 42], [5, 9, 77]], r"tokens\[1\]: expected an integer, got True"),
        ("tokens", [[5, "9", 42], [5, 9, 77]], r"tokens\[1\]: expected an integer, got str"),
        (
            "masks",
            [[-100, -100, 41], [-100, -100, 77]],
            r"masks\[2\]: is 41, expected -100 or the token id 42",
        ),
        ("masks", [[-100, 42], [-100, -100, 77]], r"sequence 0, masks: has 2 entries, tokens have 3"),
        ("scores", [float("nan"), 1], r"group 0, sequence 0, scores: expected a finite number"),
        ("scores", [1], r"group 0, scores: expected 2 entries"),
        ("inference_logprobs", [[1, 1], [1, 1, 1]], r"sequence 0, inference_logprobs: has 2 entries"),
    ],
)
def test_bad_groups_are_refused_naming_the_field(field, value, message):
    group = json.loads(group_text("plain"))
    group[field] = value
    with pytest.raises(BatchError, match=message):
        batch_from_groups([group])
