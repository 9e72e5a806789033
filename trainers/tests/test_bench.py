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
