"""Tool calls read from a turn's text the way shears' `hermes` parser reads them
(packages/parsers, `hermesParser`), for rewards computed in Python that must be the chain's: the
toy env's (toy_loop.toy_score) is checked against the parser itself on a corpus of model-like
outputs by packages/cli/src/toy-score.test.ts.

Not a library's parser: transformers' and TRL's response parsers (`parse_response` with TRL's
`qwen3_template`) refuse a last call without its closing tag and a block of comma-joined objects,
and return an array as one function; the chain reads all three as calls, so a reward read with
them would be stricter than the reward the policy is trained on.
"""

from __future__ import annotations

import json

_OPEN = "<tool_call>"
_CLOSE = "</tool_call>"
_DECODER = json.JSONDecoder()


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos


def hermes_calls(text: str) -> list[tuple[str, object]]:
    """The calls shears' hermes parser reads from a turn's text (packages/parsers), as (name,
    arguments). After each `<tool_call>`: a JSON object (or an array of them, or objects joined by
    commas), then only whitespace up to `</tool_call>` or the end of the text (the last call may
    lack its closing tag). A block whose JSON does not parse, or with other text after its JSON,
    is no call, and the scan goes on; an object without a string `name` is no call. `arguments`
    may be an object or a string holding one, and defaults to {}. Text outside the blocks is
    content and plays no part in the reward."""
    calls: list[tuple[str, object]] = []
    start = text.find(_OPEN)
    while start >= 0:
        pos = _skip_space(text, start + len(_OPEN))
        values: list[object] = []
        resume = None
        while True:
            if pos >= len(text) or text[pos] not in "{[":
                resume = start + len(_OPEN)
                break
            try:
                value, pos = _DECODER.raw_decode(text, pos)
            except ValueError:
                resume = start + len(_OPEN)
                break
            values.extend(value if isinstance(value, list) else [value])
            pos = _skip_space(text, pos)
            if pos >= len(text):
                break
            if text.startswith(_CLOSE, pos):
                pos += len(_CLOSE)
                break
            if text[pos] == ",":
                after = _skip_space(text, pos + 1)
                if after < len(text) and text[after] == "{":
                    pos = after
                    continue
            resume = pos
            break
        if resume is None:
            for value in values:
                if not isinstance(value, dict) or not isinstance(value.get("name"), str):
                    continue
                arguments = value.get("arguments", {})
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments)
                    except ValueError:
                        arguments = None
                calls.append((value["name"], arguments))
        start = text.find(_OPEN, pos if resume is None else resume)
    return calls
