"""`bench --shape`: a published architecture with random weights goes through the trainer's own
load_model, train_step and sampler. Checked on a Qwen3 of tiny dimensions (seconds on a CPU); the
0.6B itself is only built where it is timed (docs/train-a-model.md). Nothing here is timed."""

import pytest

from shears_trainer import bench
from shears_trainer.__main__ import main


def qwen3_parameters(dims: dict) -> int:
    """Qwen3ForCausalLM's parameters from its config: no biases, RMSNorm on q and k per head, the
    output head tied to the embedding (counted once)."""
    hidden, heads, kv_heads, head_dim = (
        dims["hidden_size"],
        dims["num_attention_heads"],
        dims["num_key_value_heads"],
        dims["head_dim"],
    )
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2 + 2 * head_dim
    mlp = 3 * hidden * dims["intermediate_size"]
    layer = attention + mlp + 2 * hidden
    embedding = dims["vocab_size"] * hidden
    head = 0 if dims["tie_word_embeddings"] else embedding
    return embedding + dims["num_hidden_layers"] * layer + hidden + head


TINY = {
    **bench.SHAPES["qwen3-0.6b"],
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 48,
    "vocab_size": 1000,
    "max_position_embeddings": 512,
}


def test_the_qwen3_shape_is_the_published_0_6b():
    # Qwen3-0.6B's model card: 0.6B parameters, 0.44B of them not the embedding.
    dims = bench.SHAPES["qwen3-0.6b"]
    assert qwen3_parameters(dims) == 596_049_920
    assert qwen3_parameters(dims) - dims["vocab_size"] * dims["hidden_size"] == 440_467_456


def test_a_shape_goes_through_the_trainers_own_path(monkeypatch):
    monkeypatch.setitem(bench.SHAPES, "qwen3-tiny", TINY)
    figures = bench.run_bench(repeats=1, shape="qwen3-tiny")
    assert figures["model"] == {
        "shape": "qwen3-tiny",
        "architecture": "Qwen3ForCausalLM",
        "parameters": qwen3_parameters(TINY),
        "vocab_size": 1000,
        "hidden_size": 32,
        "layers": 2,
        "dtype": "float32",
        "weights": "random",
        "attention": figures["model"]["attention"],
    }
    assert figures["device"] == "cpu" and "cuda_memory_gib" not in figures
    assert {"torch", "transformers", "threads", "process_max_rss_gib"} <= figures.keys()
    assert figures["train_step"]["sequences"] == 16
    assert figures["train_step"]["tokens"] == 16 * 256  # 257 tokens, shifted
    assert set(figures["train_step"]) >= {"wall_s_median", "tokens_per_s_wall", "cpu_s_median"}
    assert figures["sampler"]["rollouts"] == 64
    assert 0 < figures["sampler"]["generated_tokens_mean"] <= 64 * 32
    assert set(figures["sampler"]) >= {"wall_s_median", "rollouts_per_s_wall"}


def test_an_unknown_shape_is_refused_naming_the_choices(capsys):
    with pytest.raises(
        SystemExit, match=r"--shape qwen3-70b: not a known shape; choose from toy, qwen3-0\.6b"
    ):
        main(["bench", "--shape", "qwen3-70b"])
    assert capsys.readouterr().out == ""


def test_the_comparison_times_the_trainers_step_beside_a_bare_torch_step_interleaved(monkeypatch):
    monkeypatch.setitem(bench.SHAPES, "qwen3-tiny", TINY)
    lines = []
    summaries = bench.compare_with_bare(shapes=["qwen3-tiny"], rows=[2], rounds=3, emit=lines.append)
    rounds, summary = lines[:-1], lines[-1]
    assert [line["bench"] for line in rounds] == ["step-vs-bare"] * 3
    assert [line["order"] for line in rounds] == ["GB", "BG", "GB"]  # interleaved
    for line in rounds:
        assert line["shape"] == "qwen3-tiny" and line["vocab_size"] == 1000 and line["rows"] == 2
        assert line["tokens"] == 2 * 256 and line["trained_tokens"] == 2 * 193
        assert line["output_layer"] == "kept"
        assert line["ratio_cpu"] == pytest.approx(line["grpo_cpu_s"] / line["bare_cpu_s"], rel=1e-2)
        assert {"load_average_1m", "steps_timed", "grpo_wall_s", "bare_wall_s", "ratio_wall"} <= line.keys()
    assert summary["bench"] == "step-vs-bare-summary" and summaries == [summary]
    assert summary["ratio_cpu_range"] == [
        min(line["ratio_cpu"] for line in rounds),
        max(line["ratio_cpu"] for line in rounds),
    ]
    assert "ratio_wall_median" in summary and "load_average_1m_range" in summary


def test_the_bare_step_is_a_policy_gradient_step(tmp_path):
    """The baseline does the work a user's own step would: the advantage-weighted cross-entropy of
    the trained tokens, a backward pass and an AdamW step that moves the weights."""
    import torch

    from shears_trainer.train import load_model

    made = bench.make_shape_model(tmp_path / "tiny", TINY)
    model, tokenizer = load_model(made["folder"])
    batch = bench.comparison_batch(2, 1000, tokenizer.pad_token_id)
    before = [parameter.detach().clone() for parameter in model.parameters()]
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        picked = torch.log_softmax(logits, -1).gather(-1, batch.labels.clamp(min=0)[..., None])[..., 0]
        expected = -(picked * batch.advantages).sum() / batch.loss_mask.sum()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    assert bench.bare_torch_step(model, optimizer, batch) == pytest.approx(float(expected), rel=1e-5)
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--compare-shapes", "toy,qwen3-70b"], r"--shape qwen3-70b: not a known shape"),
        (["--compare-rows", "4,x"], r"--compare-rows 4,x: expected whole numbers"),
        (["--compare-rows", "0"], r"--compare-rows 0: every count must be 1 or more"),
    ],
)
def test_bad_comparison_settings_are_refused_before_anything_runs(capsys, argv, message):
    with pytest.raises(SystemExit, match=message):
        main(["bench", *argv])
    assert capsys.readouterr().out == ""
