// The `cluster` section (`--cluster ray://HOST:PORT`): where `shears serve` runs its env workers
// when they are placed by Ray. Resolved with the rest of the plan, so a malformed address or a
// command that has no cluster mode is refused before anything starts.
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
}

const ADDRESS = /^(?:ray:\/\/)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

export function resolveCluster(
  config: ShearsConfig,
  options: { command: RunCommand; cwd: string },
): ClusterPlan | undefined {
  const cluster = config.cluster;
  if (!cluster) return undefined;
  if (options.command !== 'serve')
    throw new ConfigError({
      message: `cluster: \`shears ${options.command}\` has no cluster mode; only \`shears serve\` places its env workers on a Ray cluster so far (docs/run-on-a-cluster.md). Remove the cluster section to run on this machine.`,
      issues: [{ path: 'cluster', message: `not read by shears ${options.command}`, value: cluster.address }],
    });
  const match = ADDRESS.exec(cluster.address);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port < 1 || port > 65535)
    throw new ConfigError({
      message: `cluster.address: expected ray://HOST:PORT (the address and port of \`ray start --head --port PORT\`), got ${JSON.stringify(cluster.address)}`,
      issues: [{ path: 'cluster.address', message: 'not ray://HOST:PORT', value: cluster.address }],
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
  };
}
