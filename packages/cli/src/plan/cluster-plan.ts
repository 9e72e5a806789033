// The `cluster` section (`--cluster ray://HOST:PORT`): where `shears serve` and `shears train` run
// their env workers (and `train` its trainer) when they are placed by Ray. Resolved with the rest
// of the plan, so a malformed address or a command that has no cluster mode is refused before
// anything starts.
import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';
import type { RunCommand } from './output-plan.js';

export interface ClusterPlan {
  engine: 'ray';
  /** `HOST:PORT` of the head's GCS, as `ray.init(address=…)` takes it. */
  address: string;
  host: string;
  port: number;
  workers: number;
  maxRestarts: number;
  workerCpus: number;
  workerResources: Record<string, number>;
  /** The resource of nodes with a Docker daemon (cluster.docker_resource). */
  dockerResource: string;
  /** The Python that runs the driver (absolute when given as a path). */
  python: string;
  /** How each node starts `shears`; undefined: this Node.js and this CLI's bin. */
  shearsCommand: readonly string[] | undefined;
  /** `train`: the most env workers while the trainer waits on data; undefined: `workers`, fixed. */
  maxWorkers: number | undefined;
  /** `train`: what the trainer asks Ray for (memory in bytes). */
  trainer: { cpus: number; gpus: number; memory: number; resources: Record<string, number> };
}

const ADDRESS = /^(?:ray:\/\/)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

export function resolveCluster(
  config: ShearsConfig,
  options: { command: RunCommand; cwd: string },
): ClusterPlan | undefined {
  const cluster = config.cluster;
  if (!cluster) return undefined;
  if (options.command !== 'serve' && options.command !== 'train')
    throw new ConfigError({
      message: `cluster: \`shears ${options.command}\` has no cluster mode; only \`shears serve\` and \`shears train\` run on a Ray cluster (docs/run-on-a-cluster.md). Remove the cluster section to run on this machine.`,
      issues: [{ path: 'cluster', message: `not read by shears ${options.command}`, value: cluster.address }],
    });
  const match = ADDRESS.exec(cluster.address);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port < 1 || port > 65535)
    throw new ConfigError({
      message: `cluster.address: expected ray://HOST:PORT (the address and port of \`ray start --head --port PORT\`), got ${JSON.stringify(cluster.address)}`,
      issues: [{ path: 'cluster.address', message: 'not ray://HOST:PORT', value: cluster.address }],
    });
  if (options.command === 'serve' && cluster.max_workers !== undefined)
    throw new ConfigError({
      message: `cluster.max_workers: sizes the env workers to keep a trainer fed, which \`shears train --cluster\` starts; \`shears serve\` runs cluster.workers (${cluster.workers}) workers. Remove cluster.max_workers, or run shears train`,
      issues: [
        { path: 'cluster.max_workers', message: 'only read by shears train', value: cluster.max_workers },
      ],
    });
  if (options.command === 'serve' && cluster.trainer !== undefined)
    throw new ConfigError({
      message:
        'cluster.trainer: what the trainer asks Ray for, read by `shears train --cluster`; `shears serve` places no trainer. Remove cluster.trainer, or run shears train',
      issues: [{ path: 'cluster.trainer', message: 'only read by shears train', value: cluster.trainer }],
    });
  const trainer = cluster.trainer ?? { cpus: 1, gpus: 0, memory_gb: 0, resources: {} };
  if (cluster.max_workers !== undefined && cluster.max_workers < cluster.workers)
    throw new ConfigError({
      message: `cluster.max_workers (${cluster.max_workers}) is below cluster.workers (${cluster.workers}), the number the run starts with; raise it or remove it`,
      issues: [{ path: 'cluster.max_workers', message: 'below cluster.workers', value: cluster.max_workers }],
    });
  const host = match[1]!;
  const python = cluster.python;
  return {
    engine: cluster.engine,
    address: `${host}:${port}`,
    host: host.replace(/^\[|\]$/g, ''),
    port,
    workers: cluster.workers,
    maxRestarts: cluster.max_restarts,
    workerCpus: cluster.worker_cpus,
    workerResources: cluster.worker_resources,
    dockerResource: cluster.docker_resource,
    python: python.includes('/') && !isAbsolute(python) ? resolve(options.cwd, python) : python,
    shearsCommand: cluster.shears_command,
    maxWorkers: cluster.max_workers,
    trainer: {
      cpus: trainer.cpus,
      gpus: trainer.gpus,
      memory: Math.round(trainer.memory_gb * 2 ** 30),
      resources: trainer.resources,
    },
  };
}
