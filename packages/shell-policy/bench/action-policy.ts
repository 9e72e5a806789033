// Benchmark of the action policy's per-command check: microseconds (wall and CPU) per
// `checkCommand` over the ordinary-command corpus, under a deny list and under an allow list.
// Prints one JSON line per mode. `BENCH_POLICY_BASELINE=<path to another action-policy module>`
// measures that implementation in the same run, interleaved, for a before/after ratio;
// `BENCH_POLICY_CURRENT=<path>` replaces the source module (e.g. with a bundle built without
// tsx's keep-names helper, which costs more than the parser itself on closure-heavy code).
//   pnpm -F @shears/shell-policy bench
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { ORDINARY_COMMANDS, ORDINARY_PROGRAMS } from '../test/action-policy-corpus.js';

type PolicyFactory = (settings: unknown) => { checkCommand(line: string): { allow: boolean } };

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);

async function load(path: string): Promise<PolicyFactory> {
  const module = (await import(pathToFileURL(path).href)) as { createActionPolicy: PolicyFactory };
  return module.createActionPolicy;
}

function measure(factory: PolicyFactory, settings: unknown): { wall: number; cpu: number; allowed: number } {
  const policy = factory(settings);
  let allowed = 0;
  // Warm up so that V8 has optimised the parser before timing.
  for (let round = 0; round < 20; round += 1) for (const line of ORDINARY_COMMANDS) policy.checkCommand(line);
  const cpuStart = process.cpuUsage();
  const started = performance.now();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const line of ORDINARY_COMMANDS) if (policy.checkCommand(line).allow) allowed += 1;
  }
  const wall = performance.now() - started;
  const cpu = process.cpuUsage(cpuStart);
  const checks = ROUNDS * ORDINARY_COMMANDS.length;
  return {
    wall: (wall * 1000) / checks,
    cpu: (cpu.user + cpu.system) / checks,
    allowed: allowed / ROUNDS,
  };
}

const modes: Record<string, unknown> = {
  deny: { commands: { deny: ['rm', 'curl'] } },
  allow: { commands: { allow: [...ORDINARY_PROGRAMS] } },
};

const current = await load(
  process.env.BENCH_POLICY_CURRENT ?? new URL('../src/action-policy.ts', import.meta.url).pathname,
);
const baselinePath = process.env.BENCH_POLICY_BASELINE;
const baseline = baselinePath ? await load(baselinePath) : undefined;
const round2 = (value: number) => Math.round(value * 100) / 100;

for (const [mode, settings] of Object.entries(modes)) {
  // Interleave three runs of each implementation so that machine load hits both alike.
  const runs: { current: ReturnType<typeof measure>[]; baseline: ReturnType<typeof measure>[] } = {
    current: [],
    baseline: [],
  };
  for (let repeat = 0; repeat < 3; repeat += 1) {
    runs.current.push(measure(current, settings));
    if (baseline) runs.baseline.push(measure(baseline, settings));
  }
  const best = (list: ReturnType<typeof measure>[]) =>
    list.reduce((a, b) => (b.cpu < a.cpu ? b : a), list[0]!);
  const now = best(runs.current);
  const before = baseline ? best(runs.baseline) : undefined;
  console.log(
    JSON.stringify({
      bench: 'action-policy',
      mode,
      metric: 'check',
      unit: 'us',
      commands: ORDINARY_COMMANDS.length,
      rounds: ROUNDS,
      wall_us: round2(now.wall),
      cpu_us: round2(now.cpu),
      allowed: now.allowed,
      ...(before
        ? {
            baseline_wall_us: round2(before.wall),
            baseline_cpu_us: round2(before.cpu),
            baseline_allowed: before.allowed,
            cpu_ratio: round2(now.cpu / before.cpu),
          }
        : {}),
      loadavg: (await import('node:os')).loadavg().map(round2),
    }),
  );
}
