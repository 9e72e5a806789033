// The cost of the run metrics stream on the hot path, one JSON line each:
// - metrics-process-demo: groups/s of `shears process --env demo` with metrics on and off,
//   runs interleaved (off, on, off, on, ...) so machine load drifts hit both alike; the median per side.
// - metrics-record: CPU time of recording one group (RunMetrics.group plus its JSONL line) on the
//   real groups of that run, beside the mean wall time of a group: the share metrics can cost.
// Usage: pnpm -F @shears/cli bench:metrics [-- --groups 24 --pairs 5]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { scoredGroupRecordSchema } from '@shears/core';
import { createRunMetrics } from '../src/metrics/run-metrics.js';
import { createJsonlWriter } from '../src/output/output-files.js';
import { createRedactor } from '../src/redact.js';
import { successRule } from '../src/stats.js';
import { runShears } from '../src/test-support/run-cli.js';

const { values } = parseArgs({
  // pnpm passes a literal `--` through; drop it so the flags after it are read.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { groups: { type: 'string', default: '24' }, pairs: { type: 'string', default: '5' } },
});
const groups = Number(values.groups);
const pairs = Number(values.pairs);
const dir = mkdtempSync(join(tmpdir(), 'shears-bench-metrics-'));
const emit = (record: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(record)}\n`);
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;

try {
  const rates: Record<'on' | 'off', number[]> = { on: [], off: [] };
  let lastOn = '';
  const load = loadavg()[0];
  for (let pair = 0; pair < pairs; pair++) {
    for (const side of ['off', 'on'] as const) {
      const out = `runs/${side}-${pair}.jsonl`;
      const started = performance.now();
      const run = await runShears(
        [
          'process',
          '--env',
          'demo',
          '--groups',
          String(groups),
          '--out',
          out,
          '--no-report',
          '--concurrency',
          '8',
          '--progress',
          'none',
          ...(side === 'off' ? ['--no-metrics'] : []),
        ],
        { cwd: dir },
      );
      const seconds = (performance.now() - started) / 1000;
      if (run.code !== 0) throw new Error(`shears process exited ${run.code}: ${run.stderr}`);
      rates[side].push(groups / seconds);
      if (side === 'on') lastOn = join(dir, out);
    }
  }
  const on = median(rates.on);
  const off = median(rates.off);
  emit({
    bench: 'metrics-process-demo',
    groups,
    pairs,
    groupsPerSecondOff: Number(off.toFixed(3)),
    groupsPerSecondOn: Number(on.toFixed(3)),
    slowerPercent: Number((((off - on) / off) * 100).toFixed(2)),
    runsOff: rates.off.map((rate) => Number(rate.toFixed(3))),
    runsOn: rates.on.map((rate) => Number(rate.toFixed(3))),
    target: 'under 2 % slower (issue 16)',
    loadAverageBefore: load,
    loadAverageAfter: loadavg()[0],
  });

  // The direct cost, free of the end-to-end noise: record the run's real groups many times over.
  const records = readFileSync(lastOn, 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
  const meanGroupSeconds = records.reduce((sum, record) => sum + record.wallTimeSeconds, 0) / records.length;
  const writer = createJsonlWriter(join(dir, 'micro.metrics.jsonl'), createRedactor([]), { mode: 'new' });
  const metrics = createRunMetrics({ writer, command: 'process', success: successRule(undefined) });
  const rounds = 200;
  const cpuStarted = process.cpuUsage();
  const wallStarted = performance.now();
  for (let round = 0; round < rounds; round++) for (const record of records) metrics.group(record);
  const cpu = process.cpuUsage(cpuStarted);
  const wallMs = performance.now() - wallStarted;
  metrics.close();
  writer.close();
  const perGroupMs = (cpu.user + cpu.system) / 1000 / (rounds * records.length);
  emit({
    bench: 'metrics-record',
    groups: rounds * records.length,
    rolloutsPerGroup: records[0]?.rollouts.length,
    cpuMsPerGroup: Number(perGroupMs.toFixed(4)),
    wallMsPerGroup: Number((wallMs / (rounds * records.length)).toFixed(4)),
    meanGroupWallSeconds: Number(meanGroupSeconds.toFixed(3)),
    // A group's metrics cost against the wall time one group takes at the measured rate.
    shareOfGroupTimeAtMeasuredRate: Number((perGroupMs / (1000 / on)).toExponential(2)),
    loadAverage: loadavg()[0],
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
