// `shears serve --cluster ray://HOST:PORT` and `shears train --cluster …`: the run's driver
// (trainers/shears_cluster, a small Python program) is started here and places the trajectory API
// on the head node, `train`'s trainer on a node with the resources it asks for, and
// cluster.workers `shears serve` processes on the nodes, restarting them when they die. This
// side checks what it can before anything starts (the head answers, the settings a cluster run
// cannot use), writes the launch spec and the workers' config, and streams the driver's output
// (every worker's lines, prefixed by worker) to the terminal.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigError } from '@shears/core';
import type { ClusterPlan } from '../plan/cluster-plan.js';
import type { RunPlan } from '../plan/run-plan.js';

/** What the driver writes at the end (`<out>.cluster.json`). */
export interface ClusterSummary {
  api: { url: string; node: { node_id: string; address: string | null; resources: string[] } };
  workers: Array<{
    worker: string;
    incarnations: Array<{
      pid: number;
      node_id: string;
      address: string | null;
      resources: string[];
      sent: number;
      env_id: number | null;
      exit_code: number | null;
      died?: string;
    }>;
  }>;
  /** `train`: where the trainer ran and how it ended. */
  trainer?: {
    pid: number;
    node_id: string;
    address: string | null;
    resources: string[];
    asked: Record<string, number>;
    exit_code: number | null;
    policy_url?: string;
    died?: string;
    stopped?: string;
  };
  /** `train` with cluster.max_workers: each change of the number of env workers. */
  resizes?: Array<{ seconds: number; workers: number; why: string }>;
  restarts: number;
  batches_served: number;
  groups_sent: number;
  groups_received: number;
  sequences_received: number;
  sequences_served: number;
  queued_at_end: number;
  seconds: number;
}

/** Whether something accepts TCP connections at host:port (the head's GCS), within `timeoutMs`. */
export async function reachable(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (problem: string | undefined) => {
      socket.destroy();
      done(problem);
    };
    socket.setTimeout(timeoutMs, () => finish(`no answer within ${timeoutMs} ms`));
    socket.once('connect', () => finish(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) => finish(error.code ?? error.message));
  });
}

/** This Node.js and this CLI's bin (dist/bin.js; from source, through tsx). */
function defaultShearsCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  const built = here.endsWith('.js');
  const bin = resolve(dirname(here), '..', built ? 'bin.js' : 'bin.ts');
  if (built) return [process.execPath, bin];
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return [process.execPath, '--conditions=@shears/source', '--import', tsx, bin];
}

/** What the driver places as the trainer (`train`), its command rewritten for a node. */
interface TrainerLaunch {
  command: string[];
  cwd: string;
  env: Record<string, string>;
  cpus: number;
  gpus: number;
  memory: number;
  resources: Record<string, number>;
  serves_policy: boolean;
}

/**
 * `train`'s trainer as the driver places it: refuses what a cluster run cannot honour (a vLLM
 * weight sync on this machine, a trajectory API the user runs). The colocated reference trainer's
 * policy server listens on every interface of its node, on a port the OS picks there.
 */
function trainerLaunch(plan: RunPlan, cluster: ClusterPlan): TrainerLaunch {
  const train = plan.train!;
  if (train.weightSync)
    throw new ConfigError({
      message:
        "train.weight_sync: a cluster run does not sync a vLLM server yet (it would restart it on this machine, not on the trainer's node); remove train.weight_sync, or use the colocated reference trainer (train.reference.colocated)",
      issues: [{ path: 'train.weight_sync', message: 'not with cluster', value: train.weightSync.mode }],
    });
  if (train.workers !== 1)
    throw new ConfigError({
      message: `train.workers (${train.workers}): on a cluster the env workers are cluster.workers (${cluster.workers}), each a \`shears serve\` on a node; set --cluster.workers ${train.workers} instead`,
      issues: [{ path: 'train.workers', message: 'cluster.workers on a cluster', value: train.workers }],
    });
  if (!train.apiServer)
    throw new ConfigError({
      message:
        'train.start_api: false: on a cluster the driver starts the trajectory API on the head node; remove train.start_api: false (the env workers and the trainer are pointed at it)',
      issues: [{ path: 'train.start_api', message: 'the driver starts the API', value: false }],
    });
  const command = [...train.trainer.command];
  const servesPolicy = plan.config.train.reference?.colocated === true;
  if (servesPolicy) {
    const port = command.indexOf('--serve-port');
    if (port >= 0) command[port + 1] = '0';
    command.push('--serve-host', '0.0.0.0');
  }
  return {
    command,
    cwd: train.trainer.cwd,
    env: { ...train.trainer.env },
    ...cluster.trainer,
    serves_policy: servesPolicy,
  };
}

export async function runClusterServe(plan: RunPlan, cluster: ClusterPlan): Promise<number> {
  const { code, summary } = await runCluster(plan, cluster);
  if (code === 0 && summary)
    plan.session.io.stdout(
      `served ${summary.groups_received} groups from ${summary.workers.length} env workers on the Ray cluster at ${cluster.address} (${summary.restarts} restarts); summary in ${plan.output.out}.cluster.json\n`,
    );
  return code;
}

/** `shears train --cluster`: the trainer, the API and the env workers placed by the driver. */
export async function runClusterTrain(plan: RunPlan, cluster: ClusterPlan): Promise<number> {
  const trainer = trainerLaunch(plan, cluster);
  const { code, summary } = await runCluster(plan, cluster, trainer);
  if (summary?.trainer) {
    const where = summary.trainer;
    plan.session.io.stdout(
      `train: trainer ${where.exit_code === 0 ? 'finished' : 'stopped'} on ${where.address} (${where.resources.join(', ') || 'no custom resources'}); ${summary.groups_received} groups from ${summary.workers.length} env workers, ${summary.batches_served} batches to the trainer, ${summary.restarts} worker restarts; summary in ${plan.output.out}.cluster.json\n`,
    );
  }
  return code;
}

async function runCluster(
  plan: RunPlan,
  cluster: ClusterPlan,
  trainer?: TrainerLaunch,
): Promise<{ code: number; summary: ClusterSummary | undefined }> {
  const { io } = plan.session;
  const problem = await reachable(cluster.host, cluster.port, 5000);
  if (problem)
    throw new ConfigError({
      message: `cluster.address: no Ray head answers at ${cluster.address} (${problem}); start one with \`ray start --head --port ${cluster.port}\` or point --cluster at a running head`,
      issues: [{ path: 'cluster.address', message: `unreachable: ${problem}`, value: cluster.address }],
    });
  const out = plan.output.out;
  const runDir = `${out}.cluster`;
  mkdirSync(runDir, { recursive: true });
  // The workers read the same validated config, without the cluster and train sections (they run
  // on a node; `train`'s workers are pointed at its trainer by the driver).
  const { cluster: _cluster, train: _train, ...workerConfig } = plan.config;
  const configPath = join(runDir, 'serve-config.json');
  writeFileSync(configPath, `${JSON.stringify(workerConfig, null, 2)}\n`, { mode: 0o600 });
  const database =
    plan.config.api.database === ':memory:' ? ':memory:' : resolve(plan.cwd, plan.config.api.database);
  const summaryPath = `${out}.cluster.json`;
  const spec = {
    address: cluster.address,
    workers: cluster.workers,
    shears: cluster.shearsCommand ?? defaultShearsCommand(),
    serve_args: ['serve', '--config', configPath, '--progress', 'lines'],
    api_args: [
      'api',
      '--config',
      configPath,
      '--api.host',
      '0.0.0.0',
      '--api.port',
      '0',
      '--api.database',
      database,
    ],
    // The processes run in this folder (the same path on every node), so the config's relative
    // paths (plugins, models, tokenizer) mean what they mean here; their outputs go to runDir.
    cwd: plan.cwd,
    out_dir: runDir,
    summary: summaryPath,
    max_groups: plan.feed?.maxGroups ?? null,
    max_restarts: cluster.maxRestarts,
    worker_cpus: cluster.workerCpus,
    worker_resources: cluster.workerResources,
    // Docker sandboxes: the workers go only where a node says it has a Docker daemon.
    docker_resource: plan.sandbox.provider === 'docker' ? cluster.dockerResource : null,
    env: {},
    drain_timeout_s: plan.control.drainTimeoutMs / 1000,
    trainer: trainer ?? null,
    scaling:
      trainer && cluster.maxWorkers !== undefined && cluster.maxWorkers > cluster.workers
        ? { max_workers: cluster.maxWorkers, batch_size: plan.config.api.batch_size }
        : null,
  };
  const specPath = join(runDir, 'launch.json');
  writeFileSync(specPath, `${JSON.stringify(spec, null, 2)}\n`, { mode: 0o600 });

  const child = spawn(cluster.python, ['-m', 'shears_cluster', specPath], {
    cwd: plan.cwd,
    env: { ...io.env, PYTHONUNBUFFERED: '1' } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const forward = (stream: NodeJS.ReadableStream) => {
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) io.stderr(`${plan.session.redact(line)}\n`);
    });
    stream.on('end', () => {
      if (pending) io.stderr(`${plan.session.redact(pending)}\n`);
    });
  };
  forward(child.stdout!);
  forward(child.stderr!);
  // Ctrl-C: the driver stops the workers and the API (Ray ends its actors with it).
  const stop = () => child.kill('SIGINT');
  plan.session.signal.addEventListener('abort', stop, { once: true });
  const code = await new Promise<number>((done) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      io.stderr(
        `error: cannot start the cluster driver with ${cluster.python} (${error.code ?? error.message}); set cluster.python to a Python with ray and shears_cluster (\`shears prepare --cluster ray\`)\n`,
      );
      done(1);
    });
    child.once('close', (exitCode, signal) => done(exitCode ?? (signal ? 1 : 0)));
  });
  plan.session.signal.removeEventListener('abort', stop);
  const summary =
    code === 0 || trainer ? (readSummary(summaryPath) as ClusterSummary | undefined) : undefined;
  return { code, summary };
}

function readSummary(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined; // the driver stopped before it wrote one (its error is above)
  }
}
