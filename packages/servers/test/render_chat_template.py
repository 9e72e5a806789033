"""Renders Hugging Face chat templates the way transformers does, for the differential test.

Reads one JSON object on stdin: {"dir": <folder with tokenizer_config.json>, "cases": [{"messages",
"tools", "add_generation_prompt", "variables"}]} and prints a JSON list with one rendering per
case. The Jinja environment copies transformers' `_compile_jinja_template` (trim_blocks,
lstrip_blocks, loopcontrols, `tojson` with ensure_ascii=False, `raise_exception`,
`strftime_now`) and the render call copies `apply_chat_template` (special tokens, tools=None and
documents=None when absent, extra variables last). Messages are prepared as vLLM prepares them
before templating: tool-call arguments (JSON text) are parsed into dicts, and a null content
becomes "".
"""

import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def pick_template(config, has_tools):
    template = config.get("chat_template")
    if isinstance(template, str):
        return template
    named = {entry["name"]: entry["template"] for entry in template}
    if has_tools and "tool_use" in named:
        return named["tool_use"]
    return named.get("default", next(iter(named.values())))


def special_tokens(config):
    tokens = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            tokens[key] = value
    return tokens


def vllm_messages(messages):
    result = []
    for message in messages:
        message = dict(message)
        if message.get("content") is None:
            message["content"] = ""
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                parsed = json.loads(function.get("arguments", ""))
            except ValueError:
                continue
            if isinstance(parsed, dict):
                function["arguments"] = parsed
        result.append(message)
    return result


def main():
    request = json.load(sys.stdin)
    with open(f"{request['dir']}/tokenizer_config.json", encoding="utf-8") as file:
        config = json.load(file)
    env = environment()
    renderings = []
    for case in request["cases"]:
        tools = case.get("tools") or None
        template = env.from_string(pick_template(config, tools is not None))
        renderings.append(
            template.render(
                messages=vllm_messages(case["messages"]),
                tools=tools,
                documents=None,
                add_generation_prompt=case.get("add_generation_prompt", False),
                **special_tokens(config),
                **(case.get("variables") or {}),
            )
        )
    sys.stdout.write(json.dumps(renderings, ensure_ascii=False))


main()
