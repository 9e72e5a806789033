// Parse throughput of every parser over a corpus written the way models write (bench/corpus.ts),
// cold and warmed, in CPU time. Prints one JSON line per parser and a closing line; the method is
// described in bench/README.md. A ratio is printed only against a reference parser timed in this
// same run, pass by pass beside ours (BENCH_REFERENCE); never against figures from elsewhere.
//
//   pnpm -F @shears/parsers bench                 every parser
//   PARSER=mistral pnpm -F @shears/parsers bench  one parser
//   BENCH_OUTPUTS=1000 BENCH_MS=600 BENCH_COLD_RUNS=5   corpus size, warmed time budget, cold processes
//   BENCH_WARMUP_MS=1000                          CPU ms of passes before a warmed figure
//   BENCH_REFERENCE=/path/to/hermes-agent BENCH_PYTHON=/venv/bin/python   also time hermes-agent's
//     parsers on the same corpus in this run, alternating with ours, and print the ratios
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { ToolCallParserV1 } from '@shears/core';
import { CORPUS_FORMATS, type Corpus, createCorpus } from './corpus.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const OUTPUTS = Number(process.env.BENCH_OUTPUTS ?? 1000);
const WARM_MS = Number(process.env.BENCH_MS ?? 600);
/** CPU ms of passes before a warmed figure is taken (V8 keeps optimising for a while). */
const WARM_UP_MS = Number(process.env.BENCH_WARMUP_MS ?? 1000);
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 5);
/** Another build of the parsers to measure (a checkout's src/index.ts), for before/after figures. */
const SOURCE = process.env.BENCH_PARSERS_SRC ?? '../src/index.js';
/** A hermes-agent checkout (its `environments/tool_call_parsers`) to time beside ours; see the README. */
const REFERENCE = process.env.BENCH_REFERENCE;
const PYTHON = process.env.BENCH_PYTHON ?? 'python3';
const REFERENCE_ROUNDS = Number(process.env.BENCH_REFERENCE_ROUNDS ?? 3);
/** CPU ms of passes per side before the other side takes its turn (0: one pass a turn). */
const BLOCK_MS = Number(process.env.BENCH_BLOCK_MS ?? 100);

// hermes-agent's parser for one format, as a process that times its own passes on request, so
// that its blocks of passes and ours can alternate (see referenceRounds). `block MS` parses the
// corpus until MS of CPU time have been spent inside the loop (at least once); the reply gives
// the passes and the CPU ms spent in them, timed around the loop (time.process_time: the whole
// process, including the collections Python runs by itself; none forced), so that reading the
// request and writing the reply are not counted, as they are not for ours.
const REFERENCE_SCRIPT = `
import importlib, json, sys, time
sys.path.insert(0, sys.argv[1])
fmt, path = sys.argv[2], sys.argv[3]
registry = importlib.import_module('environments.tool_call_parsers')
try:
    importlib.import_module('environments.tool_call_parsers.' + fmt + '_parser')
except ImportError:
    pass
cls = registry.PARSER_REGISTRY.get(fmt)
if cls is None:
    print(json.dumps({'missing': True}), flush=True); sys.exit(0)
parser = cls()
texts = json.load(open(path))
calls = 0
for text in texts:
    found = parser.parse(text)[1]
    calls += len(found) if found else 0
print(json.dumps({'calls': calls}), flush=True)
for line in sys.stdin:
    budget = float(line.split()[1]) / 1000
    passes = 0
    start = time.process_time()
    while True:
        for text in texts: parser.parse(text)
        passes += 1
        spent = time.process_time() - start
        if spent >= budget: break
    print(json.dumps({'passes': passes, 'cpu_ms': spent * 1000}), flush=True)
`;

/** Passes made in one block, and the CPU ms they took. */
interface Block {
  passes: number;
  cpu_ms: number;
}

/** A running reference parser (REFERENCE_SCRIPT): one block at a time. */
interface ReferenceProcess {
  calls: number;
  block(ms: number): Promise<Block>;
  close(): void;
}

async function startReference(id: string, textsPath: string): Promise<ReferenceProcess | undefined> {
  const child = spawn(PYTHON, ['-c', REFERENCE_SCRIPT, REFERENCE as string, id, textsPath], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  // A Python that cannot be started (a wrong BENCH_PYTHON) ends here, not as an unhandled event.
  const ended = new Promise<void>((resolve) => {
    child.once('error', (error) => {
      stderr = `${error.message}\n${stderr}`;
      resolve();
    });
    child.once('close', () => resolve());
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const read = async (): Promise<Record<string, number | boolean>> => {
    const { value, done } = await lines.next();
    if (done || typeof value !== 'string' || !value.startsWith('{')) {
      await ended;
      throw new Error(`the reference parser for ${id} failed (BENCH_PYTHON=${PYTHON}): ${stderr}`);
    }
    return JSON.parse(value) as Record<string, number | boolean>;
  };
  const first = await read();
  if (first.missing) {
    child.kill();
    return undefined;
  }
  return {
    calls: first.calls as number,
    async block(ms) {
      child.stdin.write(`block ${ms}\n`);
      const reply = await read();
      return { passes: reply.passes as number, cpu_ms: reply.cpu_ms as number };
    },
    close() {
      child.stdin.end();
    },
  };
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

/**
 * Warmed: passes for `WARM_UP_MS` of CPU time so that V8 has optimised the code, a forced GC,
 * then CPU ms per pass over `WARM_MS` of passes (the mean: the collections the passes cause are
 * part of their cost).
 */
function warmedMs(run: () => void): number {
  const warmStart = process.cpuUsage();
  while (cpuMs(warmStart) < WARM_UP_MS) run();
  gc();
  const started = process.cpuUsage();
  let rounds = 0;
  while (rounds === 0 || cpuMs(started) < WARM_MS) {
    run();
    rounds += 1;
  }
  return cpuMs(started) / rounds;
}

/**
 * In a fresh process per format, so that a figure does not depend on which parsers ran before
 * it in the same process (their step functions make shared call sites polymorphic): the warmed
 * and streamed figures, then the reference rounds when a reference is given. The reference is
 * started first, so that this process does not sit idle for seconds between its warm-up and the
 * rounds while the reference loads: V8 shrinks its young generation after a few idle seconds
 * (seen under load: 16 MB to 1 MB, so ten times as many scavenges per pass), which would time
 * ours in a state that its warm figure was not taken in.
 */
async function warmChild(id: string): Promise<void> {
  const parser = await loadParser(id);
  const corpus = createCorpus(id, OUTPUTS);
  const dir = mkdtempSync(join(tmpdir(), 'shears-parser-bench-'));
  try {
    let reference: ReferenceProcess | undefined;
    if (REFERENCE) {
      const textsPath = join(dir, `${id}.json`);
      writeFileSync(textsPath, JSON.stringify(corpus.outputs.map((output) => output.text)));
      reference = await startReference(id, textsPath);
    }
    try {
      const warm = warmedMs(() => parseAll(parser, corpus));
      // The reference rounds before the streamed figure: streaming the corpus through the same
      // parser leaves its whole-text parse slower for the rest of the process (mistral: 9.9-12.4
      // us/output in rounds after it, 5.2-9.0 before it; see the README's fifth round), so rounds
      // taken after it would time ours in a state that its warm figure was not taken in.
      let referenceLine: string | undefined;
      if (REFERENCE)
        referenceLine = reference
          ? await referenceRounds(id, parser, corpus, reference)
          : JSON.stringify({
              bench: 'parsers.reference',
              parser: id,
              ratio: null,
              reason: 'hermes-agent has no parser by this name',
            });
      const stream = process.env.SKIP_STREAM ? null : warmedMs(() => streamAll(parser, corpus));
      console.log(JSON.stringify({ warm_ms: warm, stream_ms: stream }));
      if (referenceLine) console.log(referenceLine);
    } finally {
      reference?.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The warmed child's figures and the lines it printed after them; `failed` when it exited
 * non-zero (the reference broke, say) after its own figures were taken, which are still printed.
 */
function warmRun(id: string): { warm: number; stream: number; lines: string[]; failed: boolean } {
  const child = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--conditions=@shears/source', fileURLToPath(import.meta.url), '--warm', id],
    { encoding: 'utf8', env: process.env, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 },
  );
  const lines = child.stdout.trim().split('\n');
  const first = lines[0] ?? '';
  if (!first.startsWith('{')) throw new Error(`warmed run of ${id} failed before its figures`);
  const figures = JSON.parse(first) as { warm_ms: number; stream_ms: number | null };
  return {
    warm: figures.warm_ms,
    stream: figures.stream_ms ?? Number.NaN,
    lines: lines.slice(1),
    failed: child.status !== 0,
  };
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
 * CPU ms so far of this process's threads other than the main one (V8's GC and compiler helpers),
 * from Linux's per-thread counters (exact for a thread that is not running); undefined where
 * they cannot be read.
 */
function helperThreadsMs(): number | undefined {
  try {
    let ns = 0;
    for (const task of readdirSync('/proc/self/task')) {
      if (Number(task) === process.pid) continue;
      ns += Number(readFileSync(`/proc/self/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    }
    return ns / 1e6;
  } catch {
    return undefined;
  }
}

/** Passes of ours until `ms` of CPU time are spent (at least one), timed around the loop. */
function ourBlock(parser: ToolCallParserV1, corpus: Corpus, ms: number): Block {
  const started = process.cpuUsage();
  let passes = 0;
  let spent = 0;
  do {
    parseAll(parser, corpus);
    passes += 1;
    spent = cpuMs(started);
  } while (spent < ms);
  return { passes, cpu_ms: spent };
}

/**
 * hermes-agent's parser and ours on the same texts, in alternating blocks: `BLOCK_MS` of CPU
 * time of passes of ours, then as much of the reference's (a process of its own, kept running),
 * and again, so that the machine's phases (its speed moves by up to 2x over seconds, see the
 * README) hit both alike. Each side is timed the same way: the CPU time of its whole process
 * (all threads) around its own passes, measured inside that process, so neither side is charged
 * for the requests and replies between blocks; the figure is the mean per pass. Collections
 * run inside the passes are counted on both sides and none is forced; V8's collections that run
 * between our blocks (scavenges V8 schedules as tasks for the event loop) are added to ours
 * (`shears_gc_between_ms`, by their wall duration), and so is the CPU time of V8's helper threads
 * during the reference's turns (`shears_helpers_between_ms`; null where Linux's per-thread
 * counters cannot be read, and then not counted). `REFERENCE_ROUNDS` rounds of `2 x WARM_MS` of the reference's CPU
 * time each; one ratio per round. `BENCH_BLOCK_MS=0` alternates pass by pass (one pass a block).
 */
async function referenceRounds(
  id: string,
  parser: ToolCallParserV1,
  corpus: Corpus,
  reference: ReferenceProcess,
): Promise<string> {
  // Every collection V8 reports, so that those outside our blocks can be charged to us.
  const collections: Array<{ start: number; duration: number }> = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      collections.push({ start: entry.startTime, duration: entry.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  // Ours was warmed by the figures measured just before; the reference gets the same warm-up,
  // in alternating blocks so that ours is not left idle meanwhile.
  let warmed = 0;
  while (warmed < WARM_UP_MS) {
    ourBlock(parser, corpus, BLOCK_MS);
    warmed += (await reference.block(BLOCK_MS)).cpu_ms;
  }
  const rounds: Array<Record<string, number>> = [];
  for (let index = 0; index < REFERENCE_ROUNDS; index += 1) {
    const ours: Block = { passes: 0, cpu_ms: 0 };
    const theirs: Block = { passes: 0, cpu_ms: 0 };
    const inside: Array<[number, number]> = [];
    let helpers: number | undefined = 0;
    collections.length = 0;
    const roundStart = performance.now();
    while (theirs.passes < 3 || theirs.cpu_ms < 2 * WARM_MS) {
      const from = performance.now();
      const block = ourBlock(parser, corpus, BLOCK_MS);
      inside.push([from, performance.now()]);
      ours.passes += block.passes;
      ours.cpu_ms += block.cpu_ms;
      const helpersBefore = helperThreadsMs();
      const other = await reference.block(BLOCK_MS);
      const helpersAfter = helperThreadsMs();
      helpers =
        helpers === undefined || helpersBefore === undefined || helpersAfter === undefined
          ? undefined
          : helpers + helpersAfter - helpersBefore;
      theirs.passes += other.passes;
      theirs.cpu_ms += other.cpu_ms;
    }
    // Let the observer deliver the last entries of the round.
    await new Promise((resolve) => setTimeout(resolve, 1));
    const between = collections
      .filter(({ start }) => start >= roundStart && !inside.some(([from, to]) => start >= from && start < to))
      .reduce((sum, { duration }) => sum + duration, 0);
    const oursPerPass = (ours.cpu_ms + between + (helpers ?? 0)) / ours.passes;
    const theirsPerPass = theirs.cpu_ms / theirs.passes;
    rounds.push({
      shears_passes: ours.passes,
      reference_passes: theirs.passes,
      shears_us: round((oursPerPass * 1000) / OUTPUTS, 2),
      reference_us: round((theirsPerPass * 1000) / OUTPUTS, 2),
      shears_gc_between_ms: round(between, 2),
      shears_helpers_between_ms: helpers === undefined ? Number.NaN : round(helpers, 2),
      ratio: round(theirsPerPass / oursPerPass, 2),
    });
  }
  observer.disconnect();
  const ratios = rounds.map((entry) => entry.ratio as number).sort((a, b) => a - b);
  return JSON.stringify({
    bench: 'parsers.reference',
    parser: id,
    reference: 'hermes-agent',
    // Said in every line: the ratio is against the reference this bench can run, not the best.
    best_reference: false,
    reference_note:
      "hermes-agent's parser, the only reference this bench runs; vLLM's, faster for some formats, is not timed (no vllm here), so this ratio overstates the lead over the best reference",
    calls_written: corpus.outputs.reduce((sum, output) => sum + output.calls, 0),
    reference_calls_read: reference.calls,
    rounds,
    ratio_warm_median: median(ratios),
    time: 'cpu',
    block_ms: BLOCK_MS,
    method:
      BLOCK_MS > 0
        ? `alternating blocks of ${BLOCK_MS} ms of CPU per side; each side's process CPU timed around its own passes, inside its process, plus V8's scavenges and helper threads between shears' turns; mean per pass`
        : "alternating pass by pass; each side's process CPU timed around its own pass, inside its process, plus V8's scavenges and helper threads between shears' turns; mean per pass",
    loadavg: load(),
  });
}

const median = (sorted: number[]): number => sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
const round = (value: number, digits = 1): number => Number(value.toFixed(digits));
const load = (): number[] => loadavg().map((value) => round(value, 2));

async function main(): Promise<void> {
  const coldIndex = process.argv.indexOf('--cold');
  if (coldIndex >= 0) return coldChild(process.argv[coldIndex + 1] ?? '');
  const warmIndex = process.argv.indexOf('--warm');
  if (warmIndex >= 0) return warmChild(process.argv[warmIndex + 1] ?? '');
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
    const { warm, stream, lines, failed } = warmRun(id);
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
    for (const line of lines) console.log(line);
    if (failed) throw new Error(`the warmed run of ${id} failed after its figures (see above)`);
  }
  if (!REFERENCE)
    console.log(
      JSON.stringify({
        bench: 'parsers.reference',
        ratio: null,
        reason:
          "no reference given: set BENCH_REFERENCE to a hermes-agent checkout (and BENCH_PYTHON to a Python with `openai`) to time its parsers beside these in this run; vLLM's parsers, faster than hermes-agent's for some formats, cannot be installed here (the local package index has no vllm), so a ratio printed is against hermes-agent, not the best reference. No ratio against figures measured elsewhere is printed",
      }),
    );
  if (mismatches > 0) process.exitCode = 1;
}

await main();
