// Docker host addresses (unix socket, tcp, https, ssh URLs) → dockerode connection options, and
// placement of new sandboxes across several hosts by load: the first step past one machine.
import { InvalidArgumentError } from '@shears/core';
import { z } from 'zod';

export const dockerHostSchema = z
  .object({
    /** `unix:///var/run/docker.sock`, `tcp://10.0.0.5:2375`, `https://host:2376`, `ssh://user@host[:22]`. */
    url: z.string().min(1),
    /** Relative capacity; a host with weight 2 takes twice the sandboxes of a host with weight 1. */
    weight: z.number().positive().default(1),
    /** Hard cap on live sandboxes on this host. */
    maxSandboxes: z.number().int().positive().optional(),
    /** TLS material (PEM text) for `https://` hosts. */
    tls: z
      .object({ ca: z.string().optional(), cert: z.string().optional(), key: z.string().optional() })
      .strict()
      .optional(),
    /** ssh2 connect options for `ssh://` hosts (privateKey, agent, ...). */
    ssh: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export type DockerHostSettings = z.input<typeof dockerHostSchema>;
export type DockerHost = z.output<typeof dockerHostSchema>;

/** The subset of dockerode's constructor options this backend produces. */
export interface DockerConnectionOptions {
  socketPath?: string;
  host?: string;
  port?: number;
  protocol?: 'http' | 'https' | 'ssh';
  username?: string;
  ca?: string;
  cert?: string;
  key?: string;
  sshOptions?: Record<string, unknown>;
}

const SUPPORTED = 'unix:///path/to/docker.sock, tcp://host:port, https://host:port, ssh://user@host[:port]';

/** Turn one host URL into dockerode options; a clear error names the accepted forms. */
export function resolveDockerConnection(host: DockerHostSettings | string): DockerConnectionOptions {
  const settings = typeof host === 'string' ? { url: host } : host;
  const raw = settings.url.trim();
  if (raw.startsWith('/')) return { socketPath: raw };
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new InvalidArgumentError({
      argument: 'hosts[].url',
      value: raw,
      message: `Docker host "${raw}" is not a URL (accepted: ${SUPPORTED})`,
      cause,
    });
  }
  const port = url.port === '' ? undefined : Number(url.port);
  switch (url.protocol) {
    case 'unix:': {
      const path = decodeURIComponent(url.pathname);
      if (!path.startsWith('/')) {
        throw new InvalidArgumentError({
          argument: 'hosts[].url',
          value: raw,
          message: `Docker host "${raw}" has no absolute socket path (e.g. unix:///var/run/docker.sock)`,
        });
      }
      return { socketPath: path };
    }
    case 'tcp:':
    case 'http:':
      return { protocol: 'http', host: url.hostname, port: port ?? 2375 };
    case 'https:':
      return { protocol: 'https', host: url.hostname, port: port ?? 2376, ...settings.tls };
    case 'ssh:':
      return {
        protocol: 'ssh',
        host: url.hostname,
        port: port ?? 22,
        ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
        sshOptions: {
          ...(process.env.SSH_AUTH_SOCK ? { agent: process.env.SSH_AUTH_SOCK } : {}),
          ...settings.ssh,
        },
      };
    default:
      throw new InvalidArgumentError({
        argument: 'hosts[].url',
        value: raw,
        message: `Docker host "${raw}" uses unsupported scheme "${url.protocol}" (accepted: ${SUPPORTED})`,
      });
  }
}

export interface PlacementCandidate {
  weight: number;
  maxSandboxes?: number | undefined;
  /** Live sandboxes (in use, pooled or being created) on this host. */
  load: number;
  /** Hosts marked unhealthy are skipped while a healthy one remains. */
  healthy: boolean;
}

/**
 * Pick the host index with the smallest load/weight among hosts under their cap. Ties go to the
 * earlier host so placement is deterministic. Returns -1 when every host is full.
 */
export function pickHost(candidates: readonly PlacementCandidate[]): number {
  let best = -1;
  let bestScore = Number.POSITIVE_INFINITY;
  let bestHealthy = false;
  candidates.forEach((candidate, index) => {
    if (candidate.maxSandboxes !== undefined && candidate.load >= candidate.maxSandboxes) return;
    const score = (candidate.load + 1) / candidate.weight;
    const better =
      (candidate.healthy && !bestHealthy) || (candidate.healthy === bestHealthy && score < bestScore);
    if (better) {
      best = index;
      bestScore = score;
      bestHealthy = candidate.healthy;
    }
  });
  return best;
}
