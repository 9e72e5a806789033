// The shared policy every parser applies: content rules, skipped calls reported in `issues`,
// name validation, raw arguments, trailing text, end-of-turn tokens, ids, and streaming that
// emits calls as soon as they are complete.
import { describe, expect, it } from 'vitest';
import { createMistralParser, getParser } from './index.js';

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
};

describe('parse policy', () => {
  it('skips a bad call, keeps the good ones, and says why in issues', () => {
    const result = getParser('hermes').parse(
      '<tool_call>{"name": "a", "arguments": {oops}}</tool_call><tool_call>{"name": "b", "arguments": {"x": 1}}</tool_call>',
    );
    expect(result.toolCalls).toEqual([{ name: 'b', arguments: '{"x": 1}' }]);
    expect(result.issues).toHaveLength(1);
    expect(result.issues[0]).toMatchObject({ index: 0, reason: 'invalid JSON in <tool_call>' });
  });

  it('refuses a hermes/qwen block with text after its JSON, as vLLM, hermes-agent and SGLang do', () => {
    // A policy trained on a parser that took the leading object would learn to babble on after
    // its call (a toy policy did): a deployed vLLM finds no call there.
    const call = '{"name": "save", "arguments": {"word": "mazu"}}';
    for (const id of ['hermes', 'qwen'] as const) {
      const parser = getParser(id);
      for (const text of [
        `<tool_call>${call} and more</tool_call>`,
        `<tool_call>${call}name": "save", "arguments": {"word": "zeko"}}`,
        `<tool_call>${call}, and more</tool_call>`,
        `<tool_call>${call}<tool_call>${call}</tool_call>`.replace('</tool_call>', ''),
      ]) {
        const result = parser.parse(text);
        expect(result.issues[0], `${id}: ${text}`).toMatchObject({
          index: 0,
          reason: 'text after the JSON in <tool_call>',
        });
        // The scan resumes after the JSON: only a later, well-formed block counts.
        expect(result.toolCalls.length, text).toBe(text.split('<tool_call>').length - 2);
      }
      // What stays a call: whitespace before the closing tag or the end of the output, and text
      // after the closing tag (dropped, as the references drop it).
      for (const text of [
        `<tool_call>\n${call}\n</tool_call>`,
        `<tool_call>${call}\n`,
        `<tool_call>${call}</tool_call> and more`,
        `<tool_call>${call}, ${call}</tool_call>`,
      ]) {
        expect(parser.parse(text).toolCalls.length, `${id}: ${text}`).toBeGreaterThan(0);
        expect(parser.parse(text).issues, text).toEqual([]);
      }
      // Streaming reads it the same, in any chunking.
      const text = `<tool_call>${call} more</tool_call><tool_call>${call}</tool_call>`;
      for (const size of [1, 3, 7]) {
        const stream = parser.createStream();
        const fed = [];
        for (let at = 0; at < text.length; at += size) fed.push(...stream.feed(text.slice(at, at + size)));
        const finished = stream.finish();
        expect(fed.length, `${id}, chunks of ${size}`).toBe(1);
        expect(finished.toolCalls.length).toBe(1);
        expect(finished.issues[0]?.reason).toBe('text after the JSON in <tool_call>');
      }
    }
  });

  it('gives a mistral v11+ call with text after its arguments those arguments raw, as vLLM does', () => {
    // vLLM hands the client everything after [ARGS] up to the next call: the JSON and the rest,
    // which is not JSON, so the call fails where it is deployed. Taking the leading object would
    // reward a policy for babbling on after its call.
    const parser = getParser('mistral');
    const args = '{"word": "mazu"}';
    for (const head of [
      '[TOOL_CALLS]save[ARGS]',
      '[TOOL_CALLS]save[CALL_ID]abcDEF123[ARGS]',
      '[TOOL_CALLS]save',
    ])
      for (const rest of [' and more', '} ', ', {"word": "zeko"}', ' [ARGS]{"word": "zeko"}']) {
        const text = `${head}${args}${rest}[TOOL_CALLS]save[ARGS]{"word": "x"}`;
        const result = parser.parse(text);
        expect(
          result.toolCalls.map((call) => call.arguments),
          text,
        ).toEqual([`${args}${rest}`.trim(), '{"word": "x"}']);
        // Dropped, not repaired, when invalid arguments are not kept.
        const strict = parser.parse(text, { keepInvalidArguments: false });
        expect(
          strict.toolCalls.map((call) => call.arguments),
          text,
        ).toEqual(['{"word": "x"}']);
        expect(strict.issues[0]?.reason).toBe('arguments of "save" are not valid JSON');
        // Streaming reads it the same, in any chunking.
        for (const size of [1, 4, 9]) {
          const stream = parser.createStream();
          for (let at = 0; at < text.length; at += size) stream.feed(text.slice(at, at + size));
          expect(
            stream.finish().toolCalls.map((call) => call.arguments),
            `${text} in chunks of ${size}`,
          ).toEqual([`${args}${rest}`.trim(), '{"word": "x"}']);
        }
      }
    // What stays a clean call: whitespace, then the next call or the end of the output.
    for (const text of [
      `[TOOL_CALLS]save[ARGS]${args}`,
      `[TOOL_CALLS]save[ARGS]${args} \n`,
      `[TOOL_CALLS]save[ARGS]${args}\n[TOOL_CALLS]save[ARGS]${args}`,
      `Sure.[TOOL_CALLS]save[CALL_ID]abcDEF123[ARGS]${args}</s>`,
    ]) {
      const result = parser.parse(text);
      expect(result.toolCalls.length, text).toBeGreaterThan(0);
      for (const call of result.toolCalls) expect(call.arguments, text).toBe(args);
      expect(result.issues, text).toEqual([]);
    }
  });

  it('keeps the whole text as content when no call survives', () => {
    const text = 'I tried <tool_call>{"name": broken}</tool_call>';
    expect(getParser('qwen').parse(text).content).toBe(text);
  });

  it('validates names against the offered tools (default on when tools are given)', () => {
    const text =
      '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>';
    const parser = getParser('hermes');
    expect(parser.parse(text, { tools: [weather] }).toolCalls.map((call) => call.name)).toEqual([
      'get_weather',
    ]);
    expect(parser.parse(text, { tools: [weather] }).issues[0]?.reason).toMatch(
      /unknown function "rm_rf" \(offered: get_weather\)/,
    );
    expect(parser.parse(text, { tools: [weather], validateNames: false }).toolCalls).toHaveLength(2);
  });

  it('keeps or drops unparseable arguments as asked', () => {
    const text =
      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": nope}<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    const parser = getParser('deepseek_v31');
    expect(parser.parse(text).toolCalls).toEqual([{ name: 'f', arguments: '{"a": nope}' }]);
    expect(parser.parse(text, { keepInvalidArguments: false }).toolCalls).toEqual([]);
  });

  it('reports trailing text only when asked', () => {
    const text = 'Hi<tool_call>{"name": "f", "arguments": {}}</tool_call> and then some.<|im_end|>';
    expect(getParser('hermes').parse(text).trailingText).toBeUndefined();
    expect(getParser('hermes').parse(text, { keepTrailingText: true }).trailingText).toBe('and then some.');
  });

  it('ignores end-of-turn tokens', () => {
    expect(
      getParser('llama3_json').parse('{"name": "f", "parameters": {"a": 1}}<|eot_id|>').toolCalls,
    ).toEqual([{ name: 'f', arguments: '{"a": 1}' }]);
    expect(getParser('mistral').parse('[TOOL_CALLS]f[ARGS]{"a": 1}</s>').toolCalls).toEqual([
      { name: 'f', arguments: '{"a": 1}' },
    ]);
    expect(getParser('hermes').parse('Just text<|im_end|>\n').content).toBe('Just text');
  });

  it('re-serialises arguments exactly like Python json.dumps', () => {
    const result = getParser('hermes').parse(
      '<tool_call>{"name":"f","arguments":{"n":1E2,"big":123456789012345678901234567890,"s":"\\u00e9\\/"}}</tool_call>',
    );
    expect(result.toolCalls[0]?.arguments).toBe(
      '{"n": 100.0, "big": 123456789012345678901234567890, "s": "é/"}',
    );
  });

  it('types XML values by the tool schema', () => {
    const text =
      '<tool_call>\n<function=get_weather>\n<parameter=city>\n2024\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>';
    expect(getParser('qwen3_coder').parse(text, { tools: [weather] }).toolCalls[0]?.arguments).toBe(
      '{"city": "2024", "days": 3}',
    );
    expect(getParser('qwen3_coder').parse(text).toolCalls[0]?.arguments).toBe('{"city": 2024, "days": 3}');
  });

  it('keeps model-written ids and writes valid Mistral ids', () => {
    expect(getParser('mistral').parse('[TOOL_CALLS]f[CALL_ID]abcDEF123[ARGS]{}').toolCalls[0]?.id).toBe(
      'abcDEF123',
    );
    const rendered = createMistralParser({ renderVersion: 'v3' }).render({
      content: null,
      toolCalls: [{ name: 'f', arguments: '{"a": 1}' }],
    });
    expect(rendered).toMatch(
      /^\[TOOL_CALLS\] \[\{"name": "f", "arguments": \{"a": 1\}, "id": "[A-Za-z0-9]{9}"\}\]$/,
    );
  });
});

describe('streaming', () => {
  it('emits each call as soon as it is complete, before the text ends', () => {
    const stream = getParser('qwen').createStream();
    expect(stream.feed('Sure.\n<tool_call>\n{"name": "a", "argu')).toEqual([]);
    expect(stream.feed('ments": {"x": 1}}\n</tool_call>')).toEqual([{ name: 'a', arguments: '{"x": 1}' }]);
    expect(stream.feed('\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>')).toEqual([
      { name: 'b', arguments: '{}' },
    ]);
    expect(stream.finish()).toEqual({
      content: 'Sure.\n',
      toolCalls: [
        { name: 'a', arguments: '{"x": 1}' },
        { name: 'b', arguments: '{}' },
      ],
      issues: [],
    });
  });

  it('holds back a partial marker and flushes it as content at the end', () => {
    const stream = getParser('hermes').createStream();
    expect(stream.feed('The format looks like <tool_call')).toEqual([]);
    expect(stream.finish().content).toBe('The format looks like <tool_call');
  });
});
