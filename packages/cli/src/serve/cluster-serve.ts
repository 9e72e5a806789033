// `shears serve --cluster ray://HOST:PORT`: the run's driver (trainers/shears_cluster, a small
// Python program) is started here and places the trajectory API on the head node and
// cluster.workers `shears serve` processes on the nodes, restarting them when they die. This
// side checks what it can before anything starts (the head answers), writes the launch spec and
// the workers' config, and streams the driver's output (every worker's lines, prefixed by worker)
// to the terminal.
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
  restarts: number;
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

export async function runClusterServe(plan: RunPlan, cluster: ClusterPlan): Promise<number> {
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
  // The workers read the same validated config, without the cluster section (they run on a node).
  const { cluster: _cluster, ...workerConfig } = plan.config;
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
    cwd: runDir,
    summary: summaryPath,
    max_groups: plan.feed?.maxGroups ?? null,
    max_restarts: cluster.maxRestarts,
    worker_cpus: cluster.workerCpus,
    worker_resources: cluster.workerResources,
    // Docker sandboxes: the workers go only where a node says it has a Docker daemon.
    docker_resource: plan.sandbox.provider === 'docker' ? cluster.dockerResource : null,
    env: {},
    drain_timeout_s: plan.control.drainTimeoutMs / 1000,
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
  if (code === 0) {
    const summary = JSON.parse(readFileSync(summaryPath, 'utf8')) as ClusterSummary;
    io.stdout(
      `served ${summary.groups_received} groups from ${summary.workers.length} env workers on the Ray cluster at ${cluster.address} (${summary.restarts} restarts); summary in ${summaryPath}\n`,
    );
  }
  return code;
}
