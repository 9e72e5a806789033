// Parse throughput of every parser over a corpus written the way models write (bench/corpus.ts),
// cold and warmed, in CPU time. Prints one JSON line per parser and a closing line; the method is
// described in bench/README.md. No ratio against other implementations is printed: none can be
// measured here in the same run (see the README).
//
//   pnpm -F @shears/parsers bench                 every parser
//   PARSER=mistral pnpm -F @shears/parsers bench  one parser
//   BENCH_OUTPUTS=1000 BENCH_MS=600 BENCH_COLD_RUNS=5   corpus size, warmed time budget, cold processes
//   BENCH_REFERENCE=/path/to/hermes-agent BENCH_PYTHON=/venv/bin/python   also time hermes-agent's
//     parsers on the same corpus in this run, alternating with ours, and print the ratios
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
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
/** A hermes-agent checkout (its `environments/tool_call_parsers`) to time beside ours; see the README. */
const REFERENCE = process.env.BENCH_REFERENCE;
const PYTHON = process.env.BENCH_PYTHON ?? 'python3';
const REFERENCE_ROUNDS = Number(process.env.BENCH_REFERENCE_ROUNDS ?? 3);

// Times one hermes-agent parser the way `warmedMs` times ours: warm-up passes, then passes with a
// collection before each, CPU time (time.process_time), the median pass. Prints one JSON line.
const REFERENCE_SCRIPT = `
import gc, importlib, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
fmt, path, budget = sys.argv[2], sys.argv[3], float(sys.argv[4]) / 1000
registry = importlib.import_module('environments.tool_call_parsers')
try:
    importlib.import_module('environments.tool_call_parsers.' + fmt + '_parser')
except ImportError:
    pass
cls = registry.PARSER_REGISTRY.get(fmt)
if cls is None:
    print(json.dumps({'missing': True})); sys.exit(0)
parser = cls()
texts = json.load(open(path))
calls = 0
for text in texts:
    found = parser.parse(text)[1]
    calls += len(found) if found else 0
start = time.process_time()
while time.process_time() - start < budget / 2:
    for text in texts: parser.parse(text)
passes = []
start = time.process_time()
while not passes or time.process_time() - start < budget:
    gc.collect()
    began = time.process_time()
    for text in texts: parser.parse(text)
    passes.append(time.process_time() - began)
print(json.dumps({'calls': calls, 'ms': statistics.median(passes) * 1000, 'passes': len(passes)}))
`;

/** hermes-agent's parser for `id` over the same texts: CPU ms per pass, or undefined when it has none. */
function referenceMs(id: string, textsPath: string): { ms: number; calls: number } | undefined {
  const child = spawnSync(
    PYTHON,
    ['-c', REFERENCE_SCRIPT, REFERENCE as string, id, textsPath, String(WARM_MS * 2)],
    {
      encoding: 'utf8',
    },
  );
  const line = child.stdout.trim().split('\n').pop() ?? '';
  if (child.status !== 0 || !line.startsWith('{'))
    throw new Error(
      `the reference parser for ${id} failed (BENCH_PYTHON=${PYTHON}): ${child.stderr.slice(-2000)}`,
    );
  const result = JSON.parse(line) as { missing?: boolean; ms: number; calls: number };
  return result.missing ? undefined : result;
}

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

/**
 * hermes-agent's parser and ours on the same texts, alternating (ours, then the reference) for
 * `REFERENCE_ROUNDS` rounds so that machine load hits both alike; one ratio per round.
 */
function referenceRounds(id: string, parser: ToolCallParserV1, corpus: Corpus): void {
  const dir = mkdtempSync(join(tmpdir(), 'shears-parser-bench-'));
  try {
    const textsPath = join(dir, `${id}.json`);
    writeFileSync(textsPath, JSON.stringify(corpus.outputs.map((output) => output.text)));
    const rounds: Array<{ shears_us: number; reference_us: number; ratio: number }> = [];
    let referenceCalls = 0;
    for (let index = 0; index < REFERENCE_ROUNDS; index += 1) {
      const ours = warmedMs(() => parseAll(parser, corpus));
      const reference = referenceMs(id, textsPath);
      if (!reference) {
        console.log(
          JSON.stringify({
            bench: 'parsers.reference',
            parser: id,
            ratio: null,
            reason: 'hermes-agent has no parser by this name',
          }),
        );
        return;
      }
      referenceCalls = reference.calls;
      rounds.push({
        shears_us: round((ours * 1000) / OUTPUTS, 2),
        reference_us: round((reference.ms * 1000) / OUTPUTS, 2),
        ratio: round(reference.ms / ours, 2),
      });
    }
    const ratios = rounds.map((entry) => entry.ratio).sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        bench: 'parsers.reference',
        parser: id,
        reference: 'hermes-agent',
        calls_written: corpus.outputs.reduce((sum, output) => sum + output.calls, 0),
        reference_calls_read: referenceCalls,
        rounds,
        ratio_warm_median: median(ratios),
        time: 'cpu',
        loadavg: load(),
      }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
    if (REFERENCE) referenceRounds(id, parser, corpus);
  }
  if (!REFERENCE)
    console.log(
      JSON.stringify({
        bench: 'parsers.reference',
        ratio: null,
        reason:
          "no reference given: set BENCH_REFERENCE to a hermes-agent checkout (and BENCH_PYTHON to a Python with `openai`) to time its parsers beside these in this run; vLLM's parsers cannot be installed here (the local package index has no vllm). No ratio against figures measured elsewhere is printed",
      }),
    );
  if (mismatches > 0) process.exitCode = 1;
}

await main();
