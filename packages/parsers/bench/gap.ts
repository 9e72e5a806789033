// What does it cost a pass of ours to follow something else? (A probe of the bench's method, see
// "How the method was chosen" in bench/README.md; not part of the bench run.) Repeatedly: a gap of one kind,
// then K passes of ours back to back, each timed in CPU; the gap kinds take turns so that the
// machine's phases (its speed moves by up to 2x over seconds) hit every kind alike. Prints, per
// gap kind, the median CPU ms of the pass at each position after the gap, the median over
// repetitions of (first pass / median of the last half) and of (last half / last half after no
// gap in the same turn), and a latency-bound multiply chain timed before and after the passes
// (a CPU running at a lower clock would slow it; a busy cache or memory would not).
//
//   BENCH_REFERENCE=/path/to/hermes-agent BENCH_PYTHON=/venv/bin/python pnpm -F @shears/parsers bench:gap
//   PARSER (mistral), GAP_MS (40: about one pass of the reference), BENCH_MS (60000), GAP_PASSES (16)
//
// Gap kinds: none; sleep (the thread sleeps, the core may idle); python (one pass of
// hermes-agent's parser in its own process, as the bench's pass-by-pass alternation had it; only
// with BENCH_REFERENCE); alu (GAP_MS of arithmetic on a few registers); mem (GAP_MS of random
// reads over 64 MB, which evicts the caches).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import type { ToolCallParserV1 } from '@shears/core';
import { createCorpus } from './corpus.js';

const FORMAT = process.env.PARSER ?? 'mistral';
const GAP_MS = Number(process.env.GAP_MS ?? 40);
const BUDGET_MS = Number(process.env.BENCH_MS ?? 60000);
const K = Number(process.env.GAP_PASSES ?? 16);
const REFERENCE = process.env.BENCH_REFERENCE;
const PYTHON = process.env.BENCH_PYTHON ?? 'python3';

const PASS_SCRIPT = `
import importlib, sys
sys.path.insert(0, sys.argv[1])
importlib.import_module('environments.tool_call_parsers.' + sys.argv[2] + '_parser')
parser = importlib.import_module('environments.tool_call_parsers').PARSER_REGISTRY[sys.argv[2]]()
import json
texts = json.load(open(sys.argv[3]))
print('ready', flush=True)
for line in sys.stdin:
    for text in texts: parser.parse(text)
    print('done', flush=True)
`;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
const big = new Uint32Array(16 << 20);
for (let index = 0; index < big.length; index += 1) big[index] = (index * 2654435761) >>> 0;
let sink = 0;

function alu(ms: number): void {
  const end = performance.now() + ms;
  let x = 1;
  while (performance.now() < end)
    for (let index = 0; index < 10000; index += 1) x = (x * 1103515245 + 12345) | 0;
  sink ^= x;
}

function mem(ms: number): void {
  const end = performance.now() + ms;
  let at = 1;
  while (performance.now() < end)
    for (let index = 0; index < 10000; index += 1)
      at = ((big[at & (big.length - 1)] as number) + index) >>> 0;
  sink ^= at;
}

/** Wall ms of 300,000 dependent multiplications. */
function chain(): number {
  const started = performance.now();
  let x = 3;
  for (let index = 0; index < 300000; index += 1) x = Math.imul(x, 1103515245) + 12345;
  sink ^= x;
  return performance.now() - started;
}

/** The machine's steal time so far (ticks, all CPUs): time the hypervisor ran something else. */
const steal = (): number =>
  Number(readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/)[8] ?? Number.NaN);

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const round = (value: number): number => Number(value.toFixed(3));

async function main(): Promise<void> {
  const parser = (
    (await import('../src/index.js')) as { getParser(name: string): ToolCallParserV1 }
  ).getParser(FORMAT);
  const texts = createCorpus(FORMAT, 1000).outputs.map((output) => output.text);
  const pass = (): number => {
    const started = process.cpuUsage();
    for (const text of texts) parser.parse(text);
    const used = process.cpuUsage(started);
    return (used.user + used.system) / 1000;
  };
  const dir = mkdtempSync(join(tmpdir(), 'shears-parser-gap-'));
  let python: ((command: string) => Promise<void>) | undefined;
  let close = () => {};
  if (REFERENCE) {
    writeFileSync(join(dir, 'texts.json'), JSON.stringify(texts));
    const child = spawn(PYTHON, ['-c', PASS_SCRIPT, REFERENCE, FORMAT, join(dir, 'texts.json')], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const next = async () => {
      const { value, done } = await lines.next();
      if (done || (value !== 'ready' && value !== 'done'))
        throw new Error(`the reference process failed (BENCH_PYTHON=${PYTHON})`);
    };
    await next();
    python = async (command) => {
      child.stdin.write(`${command}\n`);
      await next();
    };
    close = () => child.stdin.end();
  }
  let stealStart = 0;
  const kinds = ['none', 'sleep', ...(python ? ['python'] : []), 'alu', 'mem'];
  const times: Record<string, number[][]> = {};
  const chains: Record<string, [number[], number[]]> = {};
  for (const kind of kinds) {
    times[kind] = [];
    chains[kind] = [[], []];
  }
  try {
    stealStart = steal();
    const warmUntil = performance.now() + 1500;
    while (performance.now() < warmUntil) pass();
    const stop = performance.now() + BUDGET_MS;
    while (performance.now() < stop) {
      for (const kind of kinds) {
        if (kind === 'sleep') Atomics.wait(sleeper, 0, 0, GAP_MS);
        else if (kind === 'python') await python?.('pass');
        else if (kind === 'alu') alu(GAP_MS);
        else if (kind === 'mem') mem(GAP_MS);
        const chained = chains[kind] as [number[], number[]];
        chained[0].push(chain());
        const run: number[] = [];
        for (let index = 0; index < K; index += 1) run.push(pass());
        chained[1].push(chain());
        (times[kind] as number[][]).push(run);
      }
    }
  } finally {
    close();
    rmSync(dir, { recursive: true, force: true });
  }
  const lastHalf = (run: number[]) => median(run.slice(Math.floor(K / 2)));
  const none = times.none as number[][];
  for (const kind of kinds) {
    const runs = times[kind] as number[][];
    const chained = chains[kind] as [number[], number[]];
    console.log(
      JSON.stringify({
        bench: 'parsers.gap',
        parser: FORMAT,
        gap: kind,
        gap_ms: kind === 'none' ? 0 : GAP_MS,
        repetitions: runs.length,
        pass_cpu_ms_by_position: Array.from({ length: K }, (_, position) =>
          round(median(runs.map((run) => run[position] as number))),
        ),
        first_over_last_half: round(median(runs.map((run) => (run[0] as number) / lastHalf(run)))),
        last_half_over_no_gap: round(
          median(runs.map((run, index) => lastHalf(run) / lastHalf(none[index] ?? run))),
        ),
        last_half_ms_deciles: [0.1, 0.3, 0.5, 0.7, 0.9].map((q) =>
          round([...runs.map(lastHalf)].sort((a, b) => a - b)[Math.floor(runs.length * q)] as number),
        ),
        chain_ms_before_after: [round(median(chained[0])), round(median(chained[1]))],
        steal_ticks_whole_run: steal() - stealStart,
        loadavg: loadavg().map((value) => Number(value.toFixed(2))),
        sink: sink & 1,
      }),
    );
  }
}

await main();
