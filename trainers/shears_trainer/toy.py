"""The toy model of the learning test: a byte-level BPE vocabulary of a few hundred tokens trained
with `tokenizers` on text shaped like the toy env's conversations, our own chat template (Hermes
style `<tool_call>` JSON, tools listed in one short line), and a ~0.6 M-parameter Llama-shaped
model with random weights. Saved as a normal Hugging Face folder (tokenizer.json,
tokenizer_config.json with the chat template, config.json, model.safetensors), so
`AutoModelForCausalLM.from_pretrained`, `AutoTokenizer.from_pretrained` and shears' tokenizer
loader all read it like any other model."""

from __future__ import annotations

import random
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from .train import save_tokenizer

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

# Tools on one line (`tools: save(word)`), tool calls as Hermes JSON in <tool_call> tags (the
# `hermes` parser reads them), arguments written as the caller spelled them.
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>tools\n"
    "{% for tool in tools %}{% set f = tool.function if tool.function is defined else tool %}"
    "{{ f.name }}({% if f.parameters is defined and f.parameters.properties is defined %}"
    "{% for name, _ in f.parameters.properties.items() %}{{ name }}{% if not loop.last %},{% endif %}"
    "{% endfor %}{% endif %}){% if not loop.last %} {% endif %}"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% for message in messages %}"
    "<|im_start|>{{ message.role }}\n"
    "{% if message.content is string %}{{ message.content }}{% endif %}"
    "{% if message.tool_calls is defined and message.tool_calls %}"
    "{% for call in message.tool_calls %}"
    '<tool_call>{"name":"{{ call.function.name }}","arguments":'
    "{% if call.function.arguments is string %}{{ call.function.arguments }}"
    "{% else %}{{ call.function.arguments | tojson }}{% endif %}}</tool_call>"
    "{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# The toy env's words (examples/toy-pack/src/index.js holds the same list): each becomes one
# token of the vocabulary, so the task is to copy one token from the prompt into the call.
TOY_WORDS = [
    "bamo",
    "bebu",
    "bisu",
    "buro",
    "dapo",
    "dedu",
    "desu",
    "dudi",
    "dure",
    "fifo",
    "fudu",
    "keve",
    "kota",
    "kuni",
    "kuze",
    "lapa",
    "lema",
    "lera",
    "liro",
    "masa",
    "mazu",
    "numi",
    "nuni",
    "rape",
    "rare",
    "roda",
    "sibo",
    "soko",
    "tedu",
    "toku",
    "vuri",
    "zeko",
]


# The demonstrator's mistake in the learning test's warm-up data: a scripted policy that, some of
# the time, saves this fixed word instead of the prompt's (examples/toy-pack: `demo_decoy_rate`).
DECOY_WORD = "zeko"


def toy_word(rng: random.Random) -> str:
    return rng.choice(TOY_WORDS)


def _corpus(lines: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        word = toy_word(rng)
        out.append(
            "<|im_start|>tools\nsave(word)<|im_end|>\n"
            f"<|im_start|>user\nSave the word {word}.<|im_end|>\n"
            f'<|im_start|>assistant\n<tool_call>{{"name":"save","arguments":{{"word":"{word}"}}}}</tool_call><|im_end|>\n'
            f"<|im_start|>tool\nsaved {word}<|im_end|>\n<|im_start|>assistant\ndone<|im_end|>\n"
        )
    return out


def train_tokenizer(vocab_size: int = 440, seed: int = 0) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(4000, seed), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def make_toy_model(
    folder: str | Path,
    vocab_size: int = 440,
    hidden: int = 128,
    layers: int = 2,
    heads: int = 4,
    intermediate: int = 384,
    max_positions: int = 256,
    seed: int = 0,
) -> dict:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(vocab_size, seed)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    save_tokenizer(tokenizer, folder)
    parameters = sum(parameter.numel() for parameter in model.parameters())
    return {"folder": str(folder), "parameters": parameters, "vocab_size": len(tokenizer)}


SAVE_TOOL = {
    "type": "function",
    "function": {
        "name": "save",
        "description": "Save a word; it is written to saved.txt in the workspace.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    },
}
