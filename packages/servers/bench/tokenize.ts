// Benchmark: per-turn chat templating + tokenization for a 20-turn tool-using conversation
// growing to ~32k tokens (Qwen3 tokenizer), incremental (tokenize only the new suffix, as a
// managed session does) versus re-tokenizing the whole rendered conversation every turn.
// Prints one JSON line per turn and a summary line. Run: pnpm -F @shears/servers bench
import type { ChatMessage, ToolSchema } from '@shears/core';
import { createIncrementalEncoder } from '../src/incremental-encoder.js';
import { qwen3Tokenizer } from '../test/tokenizers.js';

const TURNS = 20;
const TARGET_TOKENS = 32_000;
const REPEATS = 7;

// Deterministic varied text (a seeded word generator) so BPE caches do not flatter either side.
let seed = 12345;
const random = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
const vocabulary =
  'the of and to in is that for it as with was on be by this are from or have an they which one you were all we can her has there been if more when will would who so no file test error line value function return import class self def const let new data list path string number result case check run build output input config module package version update change fix issue assert expected actual failed passed source branch commit merge diff patch repo directory command option default parse format render token model server client request response status code message header body json yaml text info debug warning trace stack frame call index offset length count size limit timeout retry cache buffer stream reader writer socket handle event queue worker thread process signal exit user group owner mode time date year week hour minute second'.split(
    ' ',
  );
function word(): string {
  return vocabulary[Math.floor(random() * vocabulary.length)] as string;
}
function toolOutput(characters: number): string {
  const lines: string[] = [];
  let length = 0;
  while (length < characters) {
    const line =
      random() < 0.3
        ? `  ${word()}_${Math.floor(random() * 1000)} = ${word()}(${word()}, ${Math.floor(random() * 100)})  # ${word()} ${word()}`
        : `${Array.from({ length: 6 + Math.floor(random() * 10) }, word).join(' ')}.`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n');
}

const tools: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'terminal',
      description: 'Run a shell command',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];

const tokenizer = qwen3Tokenizer();
const time = (run: () => void): number => {
  const samples: number[] = [];
  for (let index = 0; index < REPEATS; index++) {
    const start = performance.now();
    run();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] as number;
};
const round = (value: number) => Math.round(value * 1000) / 1000;

// Size each tool output so the conversation reaches the target after TURNS turns.
const charsPerToken = 4.2;
const perTurnChars = Math.floor((TARGET_TOKENS * charsPerToken) / TURNS) - 200;

const messages: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent working in a repository.' },
  { role: 'user', content: 'Find and fix the failing test.' },
];
let previousText = '';
let lastIncremental = 0;
let lastFull = 0;
const lastFive: Array<{ incremental: number; full: number }> = [];
let lastTokens = 0;
for (let turn = 1; turn <= TURNS; turn++) {
  messages.push(
    {
      role: 'assistant',
      content: null,
      reasoning_content: `Step ${turn}: ${Array.from({ length: 12 }, word).join(' ')}.`,
      tool_calls: [
        {
          id: `call_${turn}`,
          type: 'function',
          function: {
            name: 'terminal',
            arguments: JSON.stringify({ command: `grep -rn ${word()} src/` }).replace(/":/g, '": '),
          },
        },
      ],
    },
    { role: 'tool', tool_call_id: `call_${turn}`, content: toolOutput(perTurnChars) },
  );
  const options = { tools, addGenerationPrompt: true };
  const renderMs = time(() => tokenizer.applyChatTemplate(messages, options));
  const text = tokenizer.applyChatTemplate(messages, options);
  const fullIds = tokenizer.encode(text, { addSpecialTokens: false });
  const fullEncodeMs = time(() => tokenizer.encode(text, { addSpecialTokens: false }));
  // Incremental, as a session does: check the prefix, tokenize only the appended text.
  const extends_ = previousText.length > 0 && text.startsWith(previousText);
  const suffix = extends_ ? text.slice(previousText.length) : text;
  const suffixEncodeMs = time(() => {
    text.startsWith(previousText);
    tokenizer.encode(suffix, { addSpecialTokens: false });
  });
  // The boundary-safe incremental encoder (re-tokenizes from the last special token): time one
  // step from the previous turn's state, and check it against one-shot tokenization.
  const stepSamples: number[] = [];
  let equal = true;
  for (let index = 0; index < REPEATS; index++) {
    const encoder = createIncrementalEncoder(tokenizer);
    if (previousText) encoder.encode(previousText);
    const start = performance.now();
    const ids = encoder.encode(text).ids;
    stepSamples.push(performance.now() - start);
    equal = ids.length === fullIds.length && ids.every((id, position) => id === fullIds[position]);
  }
  stepSamples.sort((a, b) => a - b);
  const incrementalEncoderMs = stepSamples[Math.floor(stepSamples.length / 2)] as number;

  const incrementalTotalMs = renderMs + suffixEncodeMs;
  const fullTotalMs = renderMs + fullEncodeMs;
  console.log(
    JSON.stringify({
      bench: 'tokenize',
      turn,
      contextTokens: fullIds.length,
      newChars: suffix.length,
      prefixStable: turn === 1 || extends_,
      incrementalEqualsOneShot: equal,
      renderMs: round(renderMs),
      suffixEncodeMs: round(suffixEncodeMs),
      incrementalEncoderMs: round(incrementalEncoderMs),
      fullEncodeMs: round(fullEncodeMs),
      incrementalTotalMs: round(incrementalTotalMs),
      fullTotalMs: round(fullTotalMs),
    }),
  );
  previousText = text;
  lastIncremental = incrementalTotalMs;
  if (turn > TURNS - 5) lastFive.push({ incremental: incrementalTotalMs, full: fullTotalMs });
  lastFull = fullTotalMs;
  lastTokens = fullIds.length;
}
console.log(
  JSON.stringify({
    bench: 'tokenize-summary',
    turns: TURNS,
    finalContextTokens: lastTokens,
    incrementalPerTurnMs: round(lastIncremental),
    fullRetokenizePerTurnMs: round(lastFull),
    speedup: round(lastFull / lastIncremental),
    lastFiveTurnsMeanIncrementalMs: round(
      lastFive.reduce((sum, entry) => sum + entry.incremental, 0) / lastFive.length,
    ),
    lastFiveTurnsMeanFullMs: round(lastFive.reduce((sum, entry) => sum + entry.full, 0) / lastFive.length),
  }),
);
