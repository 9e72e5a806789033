// Two builds of the parsers in one process, pass by pass: a before/after figure that machine load
// hits alike (the bench's separate runs move by more than most changes gain on a shared machine).
// Checks first that both give the same result for every output of the corpus, then alternates
// passes (order swapped every round) for BENCH_MS of wall time and prints the median CPU ms of each.
//
//   BENCH_A_SRC=/path/to/main/packages/parsers/src/index.ts PARSER=mistral pnpm -F @shears/parsers bench:ab
//   BENCH_B_SRC (default: this checkout), BENCH_OUTPUTS (1000), BENCH_MS (8000)
import { loadavg } from 'node:os';
import type { ToolCallParserV1 } from '@shears/core';
import { createCorpus } from './corpus.js';

const A_SRC = process.env.BENCH_A_SRC;
const B_SRC = process.env.BENCH_B_SRC ?? '../src/index.js';
const FORMAT = process.env.PARSER ?? 'mistral';
const OUTPUTS = Number(process.env.BENCH_OUTPUTS ?? 1000);
const BUDGET_MS = Number(process.env.BENCH_MS ?? 8000);

async function load(source: string): Promise<ToolCallParserV1> {
  return ((await import(source)) as { getParser(name: string): ToolCallParserV1 }).getParser(FORMAT);
}

function cpuMs(run: () => void): number {
  const started = process.cpuUsage();
  run();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
}

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

async function main(): Promise<void> {
  if (!A_SRC) throw new Error('set BENCH_A_SRC to the src/index.ts of the build to compare against');
  const a = await load(A_SRC);
  const b = await load(B_SRC);
  const corpus = createCorpus(FORMAT, OUTPUTS);
  const options = FORMAT === 'qwen3_coder' || FORMAT === 'glm45' ? { tools: corpus.tools } : undefined;
  const texts = corpus.outputs.map((output) => output.text);
  let differences = 0;
  for (const text of texts)
    if (JSON.stringify(a.parse(text, options)) !== JSON.stringify(b.parse(text, options))) differences += 1;
  const pass = (parser: ToolCallParserV1) => () => {
    for (const text of texts) parser.parse(text, options);
  };
  const runA = pass(a);
  const runB = pass(b);
  const warmUntil = Date.now() + BUDGET_MS / 4;
  while (Date.now() < warmUntil) {
    runA();
    runB();
  }
  const timesA: number[] = [];
  const timesB: number[] = [];
  const stop = Date.now() + BUDGET_MS;
  for (let round = 0; Date.now() < stop; round += 1) {
    if (round % 2 === 0) {
      timesA.push(cpuMs(runA));
      timesB.push(cpuMs(runB));
    } else {
      timesB.push(cpuMs(runB));
      timesA.push(cpuMs(runA));
    }
  }
  const msA = median(timesA);
  const msB = median(timesB);
  // Adjacent passes see the same machine (its speed moves by up to 2x for seconds at a time on a
  // shared host; see README.md), so the ratio of each pair is steadier than the ratio of medians.
  const pairRatios = timesA.map((a, index) => a / (timesB[index] as number));
  console.log(
    JSON.stringify({
      bench: 'parsers.ab',
      parser: FORMAT,
      outputs: OUTPUTS,
      differences,
      passes: timesA.length,
      a_ms: Number(msA.toFixed(2)),
      b_ms: Number(msB.toFixed(2)),
      b_speedup: Number((msA / msB).toFixed(3)),
      b_speedup_paired: Number(median(pairRatios).toFixed(3)),
      time: 'cpu',
      loadavg: loadavg().map((value) => Number(value.toFixed(2))),
    }),
  );
  if (differences > 0) process.exitCode = 1;
}

await main();
