import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChatMessage, ConfigError, JsonParseError } from '@shears/core';
import { describeTokenizerConformance } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import { CONVERSATION, TOOLS } from '../test/conversations.js';
import { llama3Tokenizer, QWEN3_DIR, qwen3Tokenizer } from '../test/tokenizers.js';
import { createHfTokenizer } from './hf-tokenizer.js';
import { createIncrementalEncoder } from './incremental-encoder.js';

describeTokenizerConformance('hf qwen3', () => ({
  tokenizer: qwen3Tokenizer(),
  specialToken: '<|im_start|>',
}));
describeTokenizerConformance('hf llama3', () => ({
  tokenizer: llama3Tokenizer(),
  specialToken: '<|start_header_id|>',
}));

// Expected renderings, written by hand from each template's source in tokenizer_config.json
// (chat-template-jinja2.test.ts checks the same conversations against Python jinja2): we walked
// the Jinja logic branch by branch for this exact conversation. Qwen3: the tools block goes into the system turn with each tool as
// `tojson` (Python json.dumps spacing), tool results become `<tool_response>` blocks inside a
// user turn, and reasoning is rendered as `<think>` only for assistant turns after the last
// real user query (earlier thinking is dropped). Llama 3 (base template): every message is
// `<|start_header_id|>role<|end_header_id|>\n\n` + trimmed content + `<|eot_id|>`, BOS first,
// tools and tool_calls are not rendered, and the assistant header is always appended.
const QWEN3_SYSTEM =
  '<|im_start|>system\nYou are a careful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
  'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
  '{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}' +
  '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
  '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n';

const QWEN3_TURN_2 =
  QWEN3_SYSTEM +
  '<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n' +
  '<|im_start|>assistant\n<think>\nThe user wants the weather. I will call the tool.\n</think>\n\n' +
  '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\n<tool_response>\n{"temp_c": 18, "sky": "clear"}\n</tool_response><|im_end|>\n' +
  '<|im_start|>assistant\n';

const QWEN3_FULL =
  QWEN3_SYSTEM +
  '<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n' +
  '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\n<tool_response>\n{"temp_c": 18, "sky": "clear"}\n</tool_response><|im_end|>\n' +
  '<|im_start|>assistant\nIt is 18 °C and clear in Paris.<|im_end|>\n' +
  '<|im_start|>user\nThanks! And tomorrow?<|im_end|>\n' +
  '<|im_start|>assistant\n';

const LLAMA3_FULL =
  '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a careful assistant.<|eot_id|>' +
  '<|start_header_id|>user<|end_header_id|>\n\nWhat is the weather in Paris?<|eot_id|>' +
  '<|start_header_id|>assistant<|end_header_id|>\n\n<|eot_id|>' +
  '<|start_header_id|>tool<|end_header_id|>\n\n{"temp_c": 18, "sky": "clear"}<|eot_id|>' +
  '<|start_header_id|>assistant<|end_header_id|>\n\nIt is 18 °C and clear in Paris.<|eot_id|>' +
  '<|start_header_id|>user<|end_header_id|>\n\nThanks! And tomorrow?<|eot_id|>' +
  '<|start_header_id|>assistant<|end_header_id|>\n\n';

describe('createHfTokenizer: chat templates', () => {
  it('renders a Qwen3 tool-using conversation mid-rollout exactly, thinking kept', () => {
    const rendered = qwen3Tokenizer().applyChatTemplate(CONVERSATION.slice(0, 4), {
      tools: TOOLS,
      addGenerationPrompt: true,
    });
    expect(rendered).toBe(QWEN3_TURN_2);
  });

  it('renders the full Qwen3 conversation exactly, earlier thinking dropped after a new user query', () => {
    const rendered = qwen3Tokenizer().applyChatTemplate(CONVERSATION, {
      tools: TOOLS,
      addGenerationPrompt: true,
    });
    expect(rendered).toBe(QWEN3_FULL);
  });

  it('renders Qwen3 with thinking disabled through template variables', () => {
    const rendered = qwen3Tokenizer().applyChatTemplate(CONVERSATION.slice(0, 2), {
      addGenerationPrompt: true,
      variables: { enable_thinking: false },
    });
    expect(rendered).toBe(
      '<|im_start|>system\nYou are a careful assistant.<|im_end|>\n<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
  });

  it('renders the full Llama 3 conversation exactly', () => {
    const rendered = llama3Tokenizer().applyChatTemplate(CONVERSATION, {
      tools: TOOLS,
      addGenerationPrompt: true,
    });
    expect(rendered).toBe(LLAMA3_FULL);
  });

  it('lists end-of-turn tokens first in stopTokenIds', () => {
    const qwen = qwen3Tokenizer();
    expect(qwen.decode([qwen.stopTokenIds[0] as number])).toBe('<|im_end|>');
    const llama = llama3Tokenizer();
    expect(llama.decode([llama.stopTokenIds[0] as number])).toBe('<|eot_id|>');
    expect(llama.stopTokenIds).toContain(llama.tokenToId('<|end_of_text|>'));
  });

  it('encodes a rendered Llama 3 prompt with exactly one BOS (the one the template writes)', () => {
    const llama = llama3Tokenizer();
    const bos = llama.tokenToId('<|begin_of_text|>');
    const ids = llama.encode(LLAMA3_FULL, { addSpecialTokens: false });
    expect(ids[0]).toBe(bos);
    expect(ids.filter((id) => id === bos)).toHaveLength(1);
  });
});

describe('createHfTokenizer: tool-call arguments in templates', () => {
  // The assistant branch of Qwen2.5's template (and Llama 3.1's, in its own words): `arguments | tojson`
  // with no string check, so a JSON string would come out double-encoded.
  const QWEN25_STYLE = [
    "{%- for message in messages %}{%- if message.role == 'assistant' %}",
    "{{- '<|im_start|>assistant' }}{%- for tool_call in message.tool_calls %}",
    '{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}',
    '{{- \'\\n<tool_call>\\n{"name": "\' }}{{- tool_call.name }}{{- \'", "arguments": \' }}',
    "{{- tool_call.arguments | tojson }}{{- '}\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}",
    '{%- endif %}{%- endfor %}',
  ].join('');
  const history: ChatMessage[] = [
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        {
          id: 'c1',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city": "東京", "days": 3, "units": {"temp": "C"}}' },
        },
      ],
    },
  ];

  it('hands dicts to templates that write `arguments | tojson`, as vLLM does', () => {
    const tokenizer = createHfTokenizer({ dir: QWEN3_DIR, chatTemplate: QWEN25_STYLE });
    expect(tokenizer.applyChatTemplate(history)).toBe(
      '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "東京", "days": 3, "units": {"temp": "C"}}}\n</tool_call><|im_end|>\n',
    );
    // Forced to strings, the same template double-encodes: what `auto` avoids.
    const asText = createHfTokenizer({ dir: QWEN3_DIR, chatTemplate: QWEN25_STYLE, toolArguments: 'string' });
    expect(asText.applyChatTemplate(history)).toContain('"arguments": "{\\"city\\"');
  });

  it('keeps the exact text for templates that test `arguments is string` (Qwen3), floats included', () => {
    const exact: ChatMessage[] = [
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'scale', arguments: '{"factor": 1.0}' } },
        ],
      },
    ];
    expect(qwen3Tokenizer().applyChatTemplate(exact)).toContain('"arguments": {"factor": 1.0}}');
    const asObject = createHfTokenizer({ dir: QWEN3_DIR, toolArguments: 'object' });
    // JavaScript numbers cannot tell 1.0 from 1: the reason `auto` keeps strings where it can.
    expect(asObject.applyChatTemplate(exact)).toContain('"arguments": {"factor": 1}}');
  });
});

describe('createIncrementalEncoder', () => {
  for (const [name, load] of [
    ['qwen3', qwen3Tokenizer],
    ['llama3', llama3Tokenizer],
  ] as const) {
    it(`${name}: per-turn ids equal one-shot tokenization while the template is prefix-stable`, () => {
      const tokenizer = load();
      const encoder = createIncrementalEncoder(tokenizer);
      // The prompts one rollout sends: before each assistant turn, growing with tool results.
      const prompts = [2, 4].map((count) =>
        tokenizer.applyChatTemplate(CONVERSATION.slice(0, count), {
          tools: TOOLS,
          addGenerationPrompt: true,
        }),
      );
      // Long tool output with text right after a special token, to exercise the boundary.
      const long: ChatMessage[] = [
        ...CONVERSATION.slice(0, 4),
        {
          role: 'assistant',
          content: 'Checking again.',
          tool_calls: [
            { id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Lyon"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c2', content: 'rain '.repeat(400) },
      ];
      prompts.push(tokenizer.applyChatTemplate(long, { tools: TOOLS, addGenerationPrompt: true }));
      expect(prompts[1]?.startsWith(prompts[0] as string)).toBe(true);
      expect(prompts[2]?.startsWith(prompts[1] as string)).toBe(true);
      let previous = 0;
      for (const [index, prompt] of prompts.entries()) {
        const result = encoder.encode(prompt);
        expect(result.ids).toEqual(tokenizer.encode(prompt, { addSpecialTokens: false }));
        if (index > 0) {
          expect(result.reusedTokens).toBeGreaterThan(previous / 2);
          expect(result.encodedChars).toBeLessThan(
            prompt.length - (prompts[index - 1] as string).length + 50,
          );
        }
        previous = result.ids.length;
      }
    });
  }

  it('falls back to full tokenization when history re-renders differently (Qwen3 drops earlier thinking)', () => {
    const tokenizer = qwen3Tokenizer();
    const encoder = createIncrementalEncoder(tokenizer);
    encoder.encode(QWEN3_TURN_2);
    const result = encoder.encode(QWEN3_FULL);
    expect(QWEN3_FULL.startsWith(QWEN3_TURN_2)).toBe(false);
    expect(result.reusedTokens).toBe(0);
    expect(result.ids).toEqual(tokenizer.encode(QWEN3_FULL, { addSpecialTokens: false }));
  });

  it('re-tokenizes from the last special token so words split across calls merge as one-shot does', () => {
    const tokenizer = qwen3Tokenizer();
    const encoder = createIncrementalEncoder(tokenizer);
    encoder.encode('<|im_start|>user\nunbeliev');
    const result = encoder.encode('<|im_start|>user\nunbelievable things');
    expect(result.ids).toEqual(
      tokenizer.encode('<|im_start|>user\nunbelievable things', { addSpecialTokens: false }),
    );
    expect(result.reusedTokens).toBe(1);
  });
});

describe('createHfTokenizer: bad input', () => {
  it('names the missing file when the folder lacks tokenizer.json', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shears-tok-'));
    expect(() => createHfTokenizer({ dir })).toThrow(ConfigError);
    expect(() => createHfTokenizer({ dir })).toThrow(/tokenizer\.json/);
  });

  it('wraps a tokenizer.json the library cannot load in a ConfigError', () => {
    expect(() => createHfTokenizer({ tokenizerJson: { model: {} }, tokenizerConfig: {} })).toThrow(
      ConfigError,
    );
  });

  it('reports invalid JSON with the file path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shears-tok-'));
    writeFileSync(join(dir, 'tokenizer.json'), '{"model": ');
    writeFileSync(join(dir, 'tokenizer_config.json'), '{}');
    let error: unknown;
    try {
      createHfTokenizer({ dir });
    } catch (caught) {
      error = caught;
    }
    expect(JsonParseError.isInstance(error)).toBe(true);
    expect(String((error as Error).message)).toContain('tokenizer.json');
  });

  it('says how to fix a tokenizer without a chat template', () => {
    const tokenizer = createHfTokenizer({
      tokenizerJson: {
        model: { type: 'BPE', vocab: { a: 0 }, merges: [] },
        normalizer: null,
        pre_tokenizer: null,
        post_processor: null,
        decoder: { type: 'ByteLevel' },
        added_tokens: [],
      },
      tokenizerConfig: {},
    });
    expect(() => tokenizer.applyChatTemplate([{ role: 'user', content: 'x' }])).toThrow(/chatTemplate/);
  });
});

describe('createHfTokenizer: where transformers saves the chat template', () => {
  // A folder as transformers 5 saves it: tokenizer_config.json without chat_template, the
  // template in chat_template.jinja (and named variants under additional_chat_templates/).
  function savedByTransformers5(): { dir: string; template: string } {
    const dir = mkdtempSync(join(tmpdir(), 'shears-tok5-'));
    copyFileSync(join(QWEN3_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    const { chat_template: template, ...config } = JSON.parse(
      readFileSync(join(QWEN3_DIR, 'tokenizer_config.json'), 'utf8'),
    ) as { chat_template: string };
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    writeFileSync(join(dir, 'chat_template.jinja'), template);
    return { dir, template };
  }

  it('reads chat_template.jinja and renders exactly what the config field rendered', () => {
    const { dir } = savedByTransformers5();
    const messages: ChatMessage[] = [{ role: 'user', content: 'Count the lines' }];
    expect(createHfTokenizer({ dir }).applyChatTemplate(messages, { addGenerationPrompt: true })).toBe(
      qwen3Tokenizer().applyChatTemplate(messages, { addGenerationPrompt: true }),
    );
  });

  it('lets chat_template.jinja win over the config field, as transformers does', () => {
    const { dir } = savedByTransformers5();
    const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: 'OLD' }));
    writeFileSync(join(dir, 'chat_template.jinja'), 'NEW {{ messages[0].content }}');
    expect(createHfTokenizer({ dir }).applyChatTemplate([{ role: 'user', content: 'x' }])).toBe('NEW x');
  });

  it('offers additional_chat_templates/tool_use.jinja when tools are given', () => {
    const { dir } = savedByTransformers5();
    writeFileSync(join(dir, 'chat_template.jinja'), 'PLAIN');
    mkdirSync(join(dir, 'additional_chat_templates'));
    writeFileSync(join(dir, 'additional_chat_templates', 'tool_use.jinja'), 'TOOLS {{ tools | length }}');
    const tokenizer = createHfTokenizer({ dir });
    expect(tokenizer.applyChatTemplate([{ role: 'user', content: 'x' }])).toBe('PLAIN');
    expect(tokenizer.applyChatTemplate([{ role: 'user', content: 'x' }], { tools: TOOLS })).toBe(
      `TOOLS ${TOOLS.length}`,
    );
  });

  it('names both places in the error when neither holds a template', () => {
    const { dir } = savedByTransformers5();
    writeFileSync(join(dir, 'chat_template.jinja'), '');
    const tokenizer = createHfTokenizer({ dir });
    expect(() => tokenizer.applyChatTemplate([{ role: 'user', content: 'x' }])).toThrow(
      /chat_template\.jinja/,
    );
  });
});
