// Parse throughput of every parser over a corpus written the way models write (bench/corpus.ts),
// cold and warmed, in CPU time. Prints one JSON line per parser and a closing line; the method is
// described in bench/README.md. No ratio against other implementations is printed: none can be
// measured here in the same run (see the README).
//
//   pnpm -F @shears/parsers bench                 every parser
//   PARSER=mistral pnpm -F @shears/parsers bench  one parser
//   BENCH_OUTPUTS=1000 BENCH_MS=600 BENCH_COLD_RUNS=5   corpus size, warmed time budget, cold processes
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { ToolCallParserV1 } from '@shears/core';
import { CORPUS_FORMATS, type Corpus, createCorpus } from './corpus.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const OUTPUTS = Number(process.env.BENCH_OUTPUTS ?? 1000);
const WARM_MS = Number(process.env.BENCH_MS ?? 600);
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 5);
/** Another build of the parsers to measure (a checkout's src/index.ts), for before/after figures. */
const SOURCE = process.env.BENCH_PARSERS_SRC ?? '../src/index.js';

async function loadParser(id: string): Promise<ToolCallParserV1> {
  const module = (await import(SOURCE)) as { getParser(name: string): ToolCallParserV1 };
  return module.getParser(id);
}

/** The XML formats type values by the offered tools; the JSON formats are parsed without options. */
function optionsFor(corpus: Corpus) {
  return corpus.format === 'qwen3_coder' || corpus.format === 'glm45' ? { tools: corpus.tools } : undefined;
}

function parseAll(parser: ToolCallParserV1, corpus: Corpus): number {
  const options = optionsFor(corpus);
  let calls = 0;
  for (const output of corpus.outputs) calls += parser.parse(output.text, options).toolCalls.length;
  return calls;
}

function streamAll(parser: ToolCallParserV1, corpus: Corpus): void {
  const options = optionsFor(corpus);
  for (const output of corpus.outputs) {
    const stream = parser.createStream(options);
    for (let at = 0; at < output.text.length; at += 16) stream.feed(output.text.slice(at, at + 16));
    stream.finish();
  }
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/** Warmed: passes until V8 has optimised the code, then CPU ms per pass over `WARM_MS` of passes. */
function warmedMs(run: () => void): number {
  const warmStart = process.cpuUsage();
  while (cpuMs(warmStart) < WARM_MS / 2) run();
  gc();
  const started = process.cpuUsage();
  let rounds = 0;
  while (rounds === 0 || cpuMs(started) < WARM_MS) {
    run();
    rounds += 1;
  }
  return cpuMs(started) / rounds;
}

/** In a fresh process: one warm-up pass, a forced GC, then one measured pass. */
async function coldChild(id: string): Promise<void> {
  const parser = await loadParser(id);
  const corpus = createCorpus(id, OUTPUTS);
  parseAll(parser, corpus);
  gc();
  const started = process.cpuUsage();
  parseAll(parser, corpus);
  console.log(JSON.stringify({ cold_ms: cpuMs(started) }));
}

function coldMs(id: string): number[] {
  const script = fileURLToPath(import.meta.url);
  const runs: number[] = [];
  for (let run = 0; run < COLD_RUNS; run += 1) {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--conditions=@shears/source', script, '--cold', id],
      { encoding: 'utf8', env: process.env },
    );
    const line = child.stdout.trim().split('\n').pop() ?? '';
    if (child.status !== 0 || !line.startsWith('{'))
      throw new Error(`cold run of ${id} failed: ${child.stderr}`);
    runs.push((JSON.parse(line) as { cold_ms: number }).cold_ms);
  }
  return runs.sort((a, b) => a - b);
}

const median = (sorted: number[]): number => sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
const round = (value: number, digits = 1): number => Number(value.toFixed(digits));
const load = (): number[] => loadavg().map((value) => round(value, 2));

async function main(): Promise<void> {
  const coldIndex = process.argv.indexOf('--cold');
  if (coldIndex >= 0) return coldChild(process.argv[coldIndex + 1] ?? '');
  const only = process.env.PARSER;
  const formats = CORPUS_FORMATS.filter((format) => !only || format === only);
  if (formats.length === 0) throw new Error(`no parser "${only}" (available: ${CORPUS_FORMATS.join(', ')})`);
  let mismatches = 0;
  for (const id of formats) {
    const parser = await loadParser(id);
    const corpus = createCorpus(id, OUTPUTS);
    const bytes = corpus.outputs.reduce((sum, output) => sum + Buffer.byteLength(output.text, 'utf8'), 0);
    const expected = corpus.outputs.reduce((sum, output) => sum + output.calls, 0);
    const loadBefore = load();
    // The corpus doubles as a check: a parser that misses calls would look fast for nothing.
    const calls = parseAll(parser, corpus);
    if (calls !== expected) {
      mismatches += 1;
      const bad = corpus.outputs.find(
        (output) => parser.parse(output.text, optionsFor(corpus)).toolCalls.length !== output.calls,
      );
      console.log(
        JSON.stringify({
          bench: 'parsers.check',
          parser: id,
          expected,
          calls,
          example: bad?.text.slice(0, 400),
        }),
      );
    }
    const cold = coldMs(id);
    const warm = warmedMs(() => parseAll(parser, corpus));
    const stream = process.env.SKIP_STREAM ? Number.NaN : warmedMs(() => streamAll(parser, corpus));
    const mb = bytes / 1e6;
    console.log(
      JSON.stringify({
        bench: 'parsers.parse',
        parser: id,
        outputs: OUTPUTS,
        calls,
        corpus_mb: round(mb, 3),
        cold_mb_per_s: round(mb / (median(cold) / 1000)),
        cold_outputs_per_s: Math.round(OUTPUTS / (median(cold) / 1000)),
        cold_ms_runs: cold.map((value) => round(value)),
        warm_mb_per_s: round(mb / (warm / 1000)),
        warm_outputs_per_s: Math.round(OUTPUTS / (warm / 1000)),
        warm_us_per_output: round((warm * 1000) / OUTPUTS, 2),
        stream_warm_mb_per_s: round(mb / (stream / 1000)),
        time: 'cpu',
        loadavg: [loadBefore, load()],
      }),
    );
  }
  console.log(
    JSON.stringify({
      bench: 'parsers.reference',
      ratio: null,
      reason:
        "vLLM's and hermes-agent's parsers cannot be installed here (the local package index has neither vllm nor hermes-agent) and no other implementation runs in this process, so no ratio is printed",
    }),
  );
  if (mismatches > 0) process.exitCode = 1;
}

await main();
