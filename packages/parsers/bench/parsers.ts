// Parse throughput per parser on a generated corpus of realistic outputs: content plus 1–5
// calls, nested and long arguments, unicode, braces and quotes inside strings. Prints one JSON
// line per parser (MB/s of UTF-8 text per CPU-second and outputs/s, whole-text and streamed in
// 16-char deltas) and the ratio to the reference Python parsers measured on such a corpus.
import type { RenderInput, ToolCallParserV1, ToolSchema } from '@shears/core';
import { PARSERS } from '../src/index.js';

/** MB/s of the reference Python parsers on a similar corpus (from the issue). */
const PYTHON_MB_PER_S: Record<string, number> = {
  hermes: 40,
  qwen: 40,
  mistral: 40,
  llama3_json: 33,
  qwen3_coder: 18.5,
};

function createRandom(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
}

const WORDS = [
  'the',
  'weather',
  'file',
  'search',
  'résumé',
  '東京',
  'données',
  'let',
  'me',
  'check',
  'über',
  'naïve',
  '😀',
  'result',
  'value',
  'Москва',
  'path',
];
const CODE = [
  'def f(x):\n    return {"k": [x, x + 1]}\n',
  'if (a && b) { console.log("}{"); }\n',
  "SELECT * FROM t WHERE name = '{x}';\n",
  'echo "$HOME" | grep -E \'[a-z]{3}\'\n',
];

function sentence(random: () => number, words: number): string {
  return Array.from({ length: words }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
}

function argumentValue(random: () => number, depth: number): unknown {
  const kind = Math.floor(random() * (depth > 1 ? 4 : 6));
  if (kind === 0) return sentence(random, 1 + Math.floor(random() * 8));
  if (kind === 1) return Math.floor(random() * 100000) / (random() < 0.5 ? 1 : 100);
  if (kind === 2) return random() < 0.5;
  if (kind === 3)
    return Array.from(
      { length: 1 + Math.floor(random() * 20) },
      () => CODE[Math.floor(random() * CODE.length)],
    ).join('');
  if (kind === 4)
    return Array.from({ length: 1 + Math.floor(random() * 4) }, () => argumentValue(random, depth + 1));
  return Object.fromEntries(
    Array.from({ length: 1 + Math.floor(random() * 4) }, (_, index) => [
      `k${index}`,
      argumentValue(random, depth + 1),
    ]),
  );
}

interface Sample {
  text: string;
  tools: ToolSchema[];
}

function corpus(parser: ToolCallParserV1, count: number): Sample[] {
  const random = createRandom(42);
  const samples: Sample[] = [];
  for (let index = 0; index < count; index += 1) {
    const calls = 1 + Math.floor(random() * (parser.id === 'llama3_json' ? 2 : 5));
    const toolCalls: RenderInput['toolCalls'] = [];
    const tools: ToolSchema[] = [];
    for (let call = 0; call < calls; call += 1) {
      const args: Record<string, unknown> = {};
      const properties: Record<string, unknown> = {};
      for (let key = 0; key < 1 + Math.floor(random() * 4); key += 1) {
        const value = argumentValue(random, 0);
        args[`arg_${key}`] = value;
        properties[`arg_${key}`] = {
          type:
            typeof value === 'string'
              ? 'string'
              : typeof value === 'number'
                ? 'number'
                : typeof value === 'boolean'
                  ? 'boolean'
                  : Array.isArray(value)
                    ? 'array'
                    : 'object',
        };
      }
      const name = `tool_${call}_${Math.floor(random() * 5)}`;
      toolCalls.push({ name, arguments: JSON.stringify(args) });
      tools.push({ type: 'function', function: { name, parameters: { type: 'object', properties } } });
    }
    const content = random() < 0.7 ? sentence(random, 5 + Math.floor(random() * 40)) : null;
    samples.push({ text: parser.render({ content, toolCalls }), tools });
  }
  return samples;
}

/**
 * Milliseconds of CPU time (user + system) per run, after a warm-up run. CPU time, not wall
 * time: on a shared machine the wall clock mostly measures how long we waited for a core.
 */
function measure(run: () => void, minimumMs = Number(process.env.BENCH_MS ?? 600)): number {
  run(); // warm up the JIT
  let rounds = 0;
  const started = process.cpuUsage();
  let used = 0;
  while (used < minimumMs) {
    run();
    rounds += 1;
    const delta = process.cpuUsage(started);
    used = (delta.user + delta.system) / 1000;
  }
  return used / rounds;
}

const OUTPUTS = 2000;
const only = process.env.PARSER;
const selected = PARSERS.filter((candidate) => !only || candidate.id === only);
const corpora = new Map(selected.map((parser) => [parser.id, corpus(parser, OUTPUTS)]));
const typed = (parser: ToolCallParserV1) => parser.id === 'qwen3_coder' || parser.id === 'glm45';

// Whole-text parsing for every parser first, then streaming: the stream's many small strings
// would otherwise make the shared scanning code polymorphic before the parse figures are taken.
const parseResults = new Map<string, { ms: number; calls: number }>();
for (const parser of selected) {
  const samples = corpora.get(parser.id) ?? [];
  let calls = 0;
  const ms = measure(() => {
    calls = 0;
    for (const sample of samples)
      calls += parser.parse(sample.text, typed(parser) ? { tools: sample.tools } : undefined).toolCalls
        .length;
  });
  parseResults.set(parser.id, { ms, calls });
}
for (const parser of selected) {
  const samples = corpora.get(parser.id) ?? [];
  const bytes = samples.reduce((sum, sample) => sum + Buffer.byteLength(sample.text, 'utf8'), 0);
  const streamMs = process.env.SKIP_STREAM
    ? Number.NaN
    : measure(() => {
        for (const sample of samples) {
          const stream = parser.createStream(typed(parser) ? { tools: sample.tools } : undefined);
          for (let at = 0; at < sample.text.length; at += 16) stream.feed(sample.text.slice(at, at + 16));
          stream.finish();
        }
      });
  const { ms: parseMs, calls } = parseResults.get(parser.id) ?? { ms: Number.NaN, calls: 0 };
  const mbPerS = bytes / 1e6 / (parseMs / 1000);
  const reference = PYTHON_MB_PER_S[parser.id];
  console.log(
    JSON.stringify({
      bench: 'parsers.parse',
      parser: parser.id,
      outputs: OUTPUTS,
      calls,
      corpus_mb: Number((bytes / 1e6).toFixed(3)),
      mb_per_s: Number(mbPerS.toFixed(1)),
      outputs_per_s: Math.round(OUTPUTS / (parseMs / 1000)),
      stream_mb_per_s: Number((bytes / 1e6 / (streamMs / 1000)).toFixed(1)),
      python_mb_per_s: reference ?? null,
      ratio_vs_python: reference ? Number((mbPerS / reference).toFixed(2)) : null,
    }),
  );
}
