// bench/swe: per-rollout time split for the SWE env at G=8 in Docker — sandbox set-up (container
// create+start from the task image), agent (the loop with the demo policy behind the scripted
// server, tools running in the container) and grading (read the rollout's change through the
// daemon, apply it in a fresh container of the task image from the grading pool, run the tests,
// stop and remove the container). Prints one JSON line with the load average around the run.
// Needs a Docker daemon: SHEARS_TEST_DOCKER_HOST or DOCKER_HOST.
// Usage: tsx bench/swe.ts [--groups 4] [--group-size 8] [--grading-pool 1]
import { loadavg } from 'node:os';
import { createConcurrencyLimiter, type EnvV1, runGroup, type SandboxProviderV1 } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createDockerSandboxProvider } from '@shears/tools-terminal';
import {
  bundledTaskPackDir,
  createDockerClient,
  createSweDemoPolicy,
  createSweEnv,
  loadTaskPack,
  SWE_WORKDIR,
  type SweItem,
} from '../src/index.js';

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

const groups = option('groups', 4);
const groupSize = option('group-size', 8);
const gradingPool = option('grading-pool', 1);
const host = process.env.SHEARS_TEST_DOCKER_HOST ?? process.env.DOCKER_HOST;
if (!host) throw new Error('bench/swe needs a Docker daemon: set SHEARS_TEST_DOCKER_HOST or DOCKER_HOST');

const docker = await createDockerClient(host);
const tasks = loadTaskPack(bundledTaskPackDir());
const env = createSweEnv({ tasks, docker, grading: { poolSize: gradingPool } });
const setupStarted = performance.now();
await env.setup({ logger: { debug() {}, info() {}, warn() {}, error() {} } });
const imagesSeconds = (performance.now() - setupStarted) / 1000;
const policy = await createSweDemoPolicy({
  tasks: [...env.prepared.values()].map(({ task, prepared }) => ({ task, prepared })),
});
const scripted = await createScriptedServer({ policy: (request) => policy(request as never) });
const server = createScriptedServerClient({ baseUrl: scripted.url, model: 'swe-demo' });
const docker0 = createDockerSandboxProvider({ hosts: [host], workdir: SWE_WORKDIR });

const acquireMs: number[] = [];
const gradeMs: number[] = [];
const phases = new Map<string, number[]>();
const wallMs: number[] = [];
const timedProvider: SandboxProviderV1 = {
  specificationVersion: 'v1',
  id: 'timed-docker',
  async acquire(spec, options) {
    const started = performance.now();
    const sandbox = await docker0.acquire(spec, options);
    acquireMs.push(performance.now() - started);
    return sandbox;
  },
  close: () => docker0.close(),
};
const timedEnv: EnvV1<SweItem> = {
  ...env,
  async computeReward(item, rollout, context) {
    const started = performance.now();
    try {
      const reward = await env.computeReward(item, rollout, context);
      const timings =
        (reward.details?.grading as { timings?: Record<string, number> } | undefined)?.timings ?? {};
      for (const [name, value] of Object.entries(timings))
        phases.set(name, [...(phases.get(name) ?? []), value]);
      return reward;
    } finally {
      gradeMs.push(performance.now() - started);
    }
  },
};

const limiter = createConcurrencyLimiter(groupSize);
const rewards: number[] = [];
const load1Start = loadavg()[0]!;
const started = performance.now();
for (let index = 0; index < groups; index++) {
  const item = (await env.nextItem())!;
  const group = await runGroup({
    env: timedEnv,
    item,
    server,
    sandboxes: timedProvider,
    groupSize,
    limiter,
    allEqualScores: 'keep',
  });
  for (const rollout of group.rollouts) {
    wallMs.push(rollout.wallTimeSeconds * 1000);
    if (rollout.reward !== null) rewards.push(rollout.reward);
  }
}
const totalSeconds = (performance.now() - started) / 1000;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : sorted[Math.floor(sorted.length / 2)]!;
};
const medianAcquire = median(acquireMs);
const medianGrade = median(gradeMs);
const medianWall = median(wallMs);
console.log(
  JSON.stringify({
    bench: 'swe',
    groups,
    groupSize,
    gradingPool,
    rollouts: wallMs.length,
    imageSetupSeconds: Number(imagesSeconds.toFixed(2)),
    sandboxSetupMsP50: Math.round(medianAcquire),
    gradingMsP50: Math.round(medianGrade),
    agentMsP50: Math.round(Math.max(0, medianWall - medianAcquire - medianGrade)),
    rolloutWallMsP50: Math.round(medianWall),
    meanReward: Number(
      (rewards.reduce((sum, value) => sum + value, 0) / Math.max(1, rewards.length)).toFixed(3),
    ),
    rolloutsPerMinute: Number(((wallMs.length / totalSeconds) * 60).toFixed(1)),
    gradingPhasesMsP50: Object.fromEntries(
      [...phases].map(([name, values]) => [name, Math.round(median(values))]),
    ),
    load1Start: Number(load1Start.toFixed(2)),
    load1End: Number(loadavg()[0]!.toFixed(2)),
  }),
);
await timedProvider.close();
await scripted.close();
await env.close?.();
