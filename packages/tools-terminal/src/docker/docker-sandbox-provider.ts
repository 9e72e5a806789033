// The `docker` sandbox provider: one container per rollout, locked down (limits on memory, CPUs
// and pids; no network unless asked; no privileges; all capabilities dropped), labelled so a
// reaper can remove leftovers, a warm pool of pre-started containers per image, and placement
// over several Docker hosts by load. dockerode is imported only when the provider is first used.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { SandboxProviderV1, SandboxSpec, SandboxV1 } from '@shears/core';
import { InvalidArgumentError, SandboxError } from '@shears/core';
import { importOptionalPackage, requireOptionalPackage, runSandboxSetup } from '@shears/core/internal';
import type Dockerode from 'dockerode';
import { z } from 'zod';
import { SANDBOX_BASE_IMAGE } from './base-image.js';
import { type DockerHost, dockerHostSchema, pickHost, resolveDockerConnection } from './docker-hosts.js';
import { DockerSandbox } from './docker-sandbox.js';

export const LABELS = {
  managed: 'shears.managed',
  ownerPid: 'shears.owner.pid',
  hostId: 'shears.owner.host',
  providerId: 'shears.provider.id',
  createdAt: 'shears.created-at',
  sandboxId: 'shears.sandbox.id',
} as const;

const limitsSchema = z
  .object({
    memoryMb: z.number().positive().optional(),
    cpus: z.number().positive().optional(),
    pids: z.number().int().positive().optional(),
    diskMb: z.number().positive().optional(),
  })
  .strict();

export const dockerSandboxSettingsSchema = z
  .object({
    /** Docker hosts; default: $DOCKER_HOST, else the local socket. */
    hosts: z
      .array(z.union([z.string().min(1), dockerHostSchema]))
      .min(1)
      .optional(),
    /** Image for sandboxes whose spec names none. */
    image: z.string().min(1).default(SANDBOX_BASE_IMAGE),
    workdir: z.string().startsWith('/').default('/workspace'),
    /** Scratch directory inside the container (persisted tool results go here). */
    tempDir: z.string().startsWith('/').default('/tmp/shears'),
    limits: limitsSchema.default({ memoryMb: 2048, cpus: 1, pids: 512 }),
    /**
     * How `limits.diskMb` is enforced. `writable-layer`: a size limit on the container's writable
     * layer (`--storage-opt size=`), which Docker supports on overlay2 over xfs mounted with pquota,
     * btrfs, zfs and devicemapper; on any other driver acquire is refused with the reason.
     * `tmpfs`: a read-only root filesystem, with the workdir and the scratch folder on tmpfs volumes
     * of `diskMb` each (memory on the Docker host; the image's workdir content is copied in).
     */
    diskLimitMode: z.enum(['writable-layer', 'tmpfs']).default('writable-layer'),
    /** Network for sandboxes whose spec says nothing: off by default. */
    network: z.enum(['none', 'bridge']).default('none'),
    /** `network: 'host'` is refused unless this is set. */
    allowHostNetwork: z.boolean().default(false),
    /** Capabilities added back after dropping ALL (e.g. CHOWN, DAC_OVERRIDE, FOWNER, SETUID, SETGID). */
    capAdd: z.array(z.string().regex(/^[A-Z_]+$/)).default([]),
    /** Pre-started containers kept ready per image; 0 disables the pool. */
    poolSize: z.number().int().min(0).default(0),
    /** Images to warm when the provider starts (default: `image` when poolSize > 0). */
    warmImages: z.array(z.string().min(1)).optional(),
    /** A sandbox with no call for this long is disposed by the reaper. */
    idleTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(30 * 60_000),
    /** At start-up remove containers labelled by processes of this host that no longer exist. */
    reapOnStart: z.boolean().default(true),
    /** Identifies this machine in labels (owner pids only mean something on the same host). */
    hostId: z.string().min(1).optional(),
    /** Per-stream output kept per command before the middle is dropped. */
    maxOutputBytes: z.number().int().positive().optional(),
    /** Extra labels on every container. */
    labels: z.record(z.string(), z.string()).default({}),
    /**
     * Host folders mounted into every container, `host-path:container-path[:ro]` (Docker's bind
     * syntax; absolute paths only). Meant for narrow channels such as the folder holding the agent
     * gateway's unix socket, which lets a container with network `none` reach it; a host folder
     * mounted here is as reachable from the sandbox as the sandbox's own files.
     */
    binds: z
      .array(
        z
          .string()
          .regex(
            /^\/[^:]*:\/[^:]*(:(ro|rw))?$/,
            'expected "/host/path:/container/path" with an optional ":ro" or ":rw"',
          ),
      )
      .default([]),
  })
  .strict();

export type DockerSandboxSettings = z.input<typeof dockerSandboxSettingsSchema>;
type ResolvedSettings = z.output<typeof dockerSandboxSettingsSchema>;

interface HostState {
  host: DockerHost;
  docker: Dockerode;
  /** Live sandboxes placed here: in use, pooled or being created. */
  load: number;
  healthy: boolean;
  reaped: boolean;
  /** The daemon's storage driver, asked once (only when a disk limit is set). */
  storage?: Promise<StorageDriverInfo>;
}

export interface StorageDriverInfo {
  /** `overlay2`, `btrfs`, `zfs`, `devicemapper`, `vfs`, `fuse-overlayfs`, … */
  driver: string;
  /** What the driver's data sits on (`extfs`, `xfs`, …), from `docker info`; undefined when not reported. */
  backingFilesystem: string | undefined;
}

/**
 * Whether Docker can limit a container's writable layer on this storage driver. overlay2 needs xfs
 * mounted with `pquota`, which `docker info` does not report: the daemon itself refuses the
 * create when the option is missing, and that refusal is turned into the same explanation.
 */
export function supportsWritableLayerLimit(info: StorageDriverInfo): boolean {
  if (['btrfs', 'zfs', 'devicemapper', 'windowsfilter'].includes(info.driver)) return true;
  return info.driver === 'overlay2' && info.backingFilesystem === 'xfs';
}

function describeStorage(info: StorageDriverInfo): string {
  return info.backingFilesystem ? `${info.driver} on ${info.backingFilesystem}` : info.driver;
}

/** The directories a tmpfs-mode sandbox may write: the workdir and the top folder of the scratch dir. */
export function tmpfsTargets(workdir: string, tempDir: string): string[] {
  const scratch = tempDir.startsWith('/tmp/') || tempDir === '/tmp' ? '/tmp' : tempDir;
  const inside = (path: string, parent: string) => path === parent || path.startsWith(`${parent}/`);
  if (inside(scratch, workdir)) return [workdir];
  if (inside(workdir, scratch)) return [scratch];
  return [workdir, scratch];
}

interface ContainerConfig {
  image: string;
  workdir: string;
  memoryMb: number | undefined;
  cpus: number | undefined;
  pids: number | undefined;
  diskMb: number | undefined;
  network: 'none' | 'bridge' | 'host';
  labels: Record<string, string>;
}

interface PoolEntry {
  sandbox: DockerSandbox;
  host: HostState;
}

export interface DockerSandboxProvider extends SandboxProviderV1 {
  /** Wait until every pool is filled (useful before a benchmark or a run). */
  warm(): Promise<void>;
  /** Sandboxes handed out and not yet disposed. */
  readonly activeCount: number;
  /** Run the reaper once now: idle sandboxes and containers of dead owners. Returns how many containers were removed. */
  reap(): Promise<number>;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function parseSettings(settings: unknown): ResolvedSettings {
  const parsed = dockerSandboxSettingsSchema.safeParse(settings ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'settings';
    throw new InvalidArgumentError({
      argument: `docker.${where}`,
      value: settings,
      message: `Invalid docker sandbox settings at "${where}": ${issue?.message ?? parsed.error.message}`,
    });
  }
  // Host URLs are checked now (no I/O) so a typo fails at start-up, not at the first acquire.
  for (const host of parsed.data.hosts ?? []) resolveDockerConnection(host);
  return parsed.data;
}

/** Create the docker sandbox provider. Nothing connects to Docker until the first acquire. */
/** What needs dockerode, for the error and the doctor line when it is not installed. */
export const DOCKERODE_USE = { usedBy: 'the docker sandbox', field: 'sandbox.provider' };

export function createDockerSandboxProvider(settings: DockerSandboxSettings = {}): DockerSandboxProvider {
  const config = parseSettings(settings);
  // dockerode is an optional peer dependency: say so now, before a run starts, not at the first sandbox.
  requireOptionalPackage('dockerode', import.meta.url, DOCKERODE_USE);
  const providerId = randomBytes(6).toString('hex');
  const hostId = config.hostId ?? hostname();
  let hostsPromise: Promise<HostState[]> | undefined;
  const active = new Set<DockerSandbox>();
  const pools = new Map<string, PoolEntry[]>();
  const filling = new Map<string, number>();
  const placements = new Map<DockerSandbox, HostState>();
  const background = new Set<Promise<unknown>>();
  let reaperTimer: NodeJS.Timeout | undefined;
  let closed = false;

  const track = <T>(promise: Promise<T>): Promise<T> => {
    background.add(promise);
    void promise.finally(() => background.delete(promise)).catch(() => undefined);
    return promise;
  };

  const hosts = (): Promise<HostState[]> => {
    hostsPromise ??= (async () => {
      const DockerCtor: typeof Dockerode = (
        await importOptionalPackage('dockerode', () => import('dockerode'), DOCKERODE_USE)
      ).default;
      const entries = config.hosts ?? [process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock'];
      const states = entries.map((entry) => {
        const host = dockerHostSchema.parse(typeof entry === 'string' ? { url: entry } : entry);
        return {
          host,
          docker: new DockerCtor(resolveDockerConnection(host) as Dockerode.DockerOptions),
          load: 0,
          healthy: true,
          reaped: false,
        } as HostState;
      });
      startReaper();
      return states;
    })();
    return hostsPromise;
  };

  const resolveConfig = (spec: SandboxSpec): ContainerConfig => {
    const network = spec.network ?? config.network;
    if (network === 'host' && !config.allowHostNetwork) {
      throw new InvalidArgumentError({
        argument: 'spec.network',
        value: network,
        message:
          'Sandbox network "host" is refused by the docker provider (allowed: none, bridge; set allowHostNetwork to permit it)',
      });
    }
    if (!['none', 'bridge', 'host'].includes(network)) {
      throw new InvalidArgumentError({
        argument: 'spec.network',
        value: network,
        message: `Unknown sandbox network "${String(network)}" (allowed: none, bridge)`,
      });
    }
    const workdir = spec.workdir ?? config.workdir;
    if (!workdir.startsWith('/'))
      throw new InvalidArgumentError({
        argument: 'spec.workdir',
        value: workdir,
        message: `Sandbox workdir must be absolute, got "${workdir}"`,
      });
    const limits = { ...config.limits, ...spec.limits };
    return {
      image: spec.image ?? config.image,
      workdir,
      memoryMb: limits.memoryMb,
      cpus: limits.cpus,
      pids: limits.pids,
      diskMb: limits.diskMb,
      network,
      labels: { ...config.labels, ...spec.labels },
    };
  };

  const poolKey = (container: ContainerConfig) => JSON.stringify(container);

  const storageOf = (host: HostState): Promise<StorageDriverInfo> => {
    if (!host.storage) {
      const asked = host.docker.info().then((info: { Driver?: string; DriverStatus?: unknown }) => {
        const status = Array.isArray(info.DriverStatus) ? (info.DriverStatus as unknown[]) : [];
        const backing = status.find(
          (entry): entry is [string, string] => Array.isArray(entry) && entry[0] === 'Backing Filesystem',
        );
        return { driver: String(info.Driver ?? 'unknown'), backingFilesystem: backing?.[1] };
      });
      host.storage = asked;
      asked.catch(() => {
        if (host.storage === asked) host.storage = undefined;
      });
    }
    return host.storage;
  };

  const refuseDisk = (host: HostState, diskMb: number, why: string, cause?: unknown): InvalidArgumentError =>
    new InvalidArgumentError({
      argument: 'limits.diskMb',
      value: diskMb,
      message: `limits.diskMb (${diskMb} MB) cannot be enforced on ${host.host.url}: ${why}`,
      ...(cause !== undefined ? { cause } : {}),
    });

  const writableLayerAdvice =
    "Docker limits a container's writable layer only on overlay2 over xfs mounted with pquota, btrfs, zfs and devicemapper. Set diskLimitMode: 'tmpfs' (read-only root filesystem, workdir and /tmp on size-limited tmpfs volumes) or remove limits.diskMb.";

  /** The HostConfig fields that enforce `limits.diskMb`, or a refusal in words. */
  const diskHostConfig = async (
    host: HostState,
    container: ContainerConfig,
  ): Promise<Partial<Dockerode.HostConfig>> => {
    const diskMb = container.diskMb;
    if (diskMb === undefined) return {};
    // A writable bind is a folder on the host's disk that no container limit covers.
    const writable = config.binds.filter((bind) => !bind.endsWith(':ro'));
    if (writable.length > 0)
      throw refuseDisk(
        host,
        diskMb,
        `binds ${writable.map((bind) => `"${bind}"`).join(', ')} would be written on the host's disk outside any limit (mount them ":ro")`,
      );
    // Volumes the image declares would be anonymous volumes on the host's disk, outside any limit.
    const image = (await host.docker
      .getImage(container.image)
      .inspect()
      .catch(() => undefined)) as { Config?: { Volumes?: Record<string, unknown> | null } } | undefined;
    const declared = Object.keys(image?.Config?.Volumes ?? {});
    if (declared.length > 0)
      throw refuseDisk(
        host,
        diskMb,
        `image "${container.image}" declares volumes (${declared.join(', ')}), which Docker keeps on the host's disk outside any size limit`,
      );
    if (config.diskLimitMode === 'tmpfs') {
      const size = `size=${Math.ceil(diskMb)}m`;
      return {
        ReadonlyRootfs: true,
        Mounts: tmpfsTargets(container.workdir, config.tempDir).map((target) => ({
          Type: 'volume' as const,
          Source: '', // anonymous: removed with the container
          Target: target,
          VolumeOptions: {
            // Docker's copy of the image's content would be lost when the tmpfs is unmounted after it.
            NoCopy: true,
            Labels: {},
            DriverConfig: {
              Name: 'local',
              Options: {
                type: 'tmpfs',
                device: 'tmpfs',
                o: target === container.workdir ? size : `${size},mode=1777`,
              },
            },
          },
        })),
      };
    }
    const storage = await storageOf(host);
    if (!supportsWritableLayerLimit(storage))
      throw refuseDisk(
        host,
        diskMb,
        `its storage driver is ${describeStorage(storage)}. ${writableLayerAdvice}`,
      );
    return { StorageOpt: { size: `${Math.ceil(diskMb)}M` } };
  };

  /**
   * A tmpfs volume starts empty (Docker's copy of the image's content into a new volume is lost
   * when a tmpfs volume is unmounted after the copy), so the image's workdir is copied in from a
   * created, never started, container of the same image.
   */
  const copyImageWorkdir = async (
    host: HostState,
    container: ContainerConfig,
    target: Dockerode.Container,
  ) => {
    const source = await host.docker.createContainer({
      Image: container.image,
      Cmd: ['/bin/sh'],
      Labels: {
        [LABELS.managed]: 'true',
        [LABELS.ownerPid]: String(process.pid),
        [LABELS.hostId]: hostId,
        [LABELS.providerId]: providerId,
        [LABELS.createdAt]: new Date().toISOString(),
      },
      NetworkDisabled: true,
      HostConfig: { NetworkMode: 'none', LogConfig: { Type: 'none', Config: {} } },
    });
    try {
      // The workdir is a volume itself (its content goes in), or lies inside one (the folder goes in).
      const workdir = container.workdir.replace(/\/+$/, '') || '/';
      const isMount = tmpfsTargets(container.workdir, config.tempDir).includes(container.workdir);
      let archive: NodeJS.ReadableStream;
      try {
        archive = await source.getArchive({ path: isMount ? `${workdir}/.` : workdir });
      } catch (error) {
        if ((error as { statusCode?: number }).statusCode === 404) return; // nothing at workdir in the image
        throw error;
      }
      const into = isMount ? workdir : workdir.slice(0, workdir.lastIndexOf('/')) || '/';
      const response = (await target.putArchive(archive, { path: into })) as unknown;
      if (response && typeof (response as NodeJS.ReadableStream).resume === 'function')
        for await (const _ of response as AsyncIterable<unknown>);
    } finally {
      await source.remove({ force: true, v: true }).catch(() => undefined);
    }
  };

  const createSandbox = async (
    host: HostState,
    container: ContainerConfig,
    env: Record<string, string>,
  ): Promise<DockerSandbox> => {
    const id = `docker-${randomBytes(6).toString('hex')}`;
    const memoryBytes = container.memoryMb ? Math.floor(container.memoryMb * 1024 * 1024) : undefined;
    let created: Dockerode.Container | undefined;
    try {
      const disk = await diskHostConfig(host, container);
      created = await host.docker.createContainer({
        Image: container.image,
        name: `shears-${id}`,
        Cmd: ['/bin/sh', '-c', 'while :; do sleep 3600; done'],
        WorkingDir: container.workdir,
        Labels: {
          ...container.labels,
          [LABELS.managed]: 'true',
          [LABELS.ownerPid]: String(process.pid),
          [LABELS.hostId]: hostId,
          [LABELS.providerId]: providerId,
          [LABELS.createdAt]: new Date().toISOString(),
          [LABELS.sandboxId]: id,
        },
        NetworkDisabled: container.network === 'none',
        HostConfig: {
          NetworkMode: container.network,
          Privileged: false,
          CapDrop: ['ALL'],
          CapAdd: config.capAdd,
          SecurityOpt: ['no-new-privileges'],
          Init: true,
          ...(memoryBytes ? { Memory: memoryBytes, MemorySwap: memoryBytes } : {}),
          ...(container.cpus ? { NanoCpus: Math.round(container.cpus * 1e9) } : {}),
          ...(container.pids ? { PidsLimit: container.pids } : {}),
          // The main process's output would go to a log file on the host's disk that nothing
          // limits, and any process in the container can write there through /proc/1/fd/1.
          LogConfig: { Type: 'none', Config: {} },
          ...disk,
          AutoRemove: false,
          ...(config.binds.length > 0 ? { Binds: [...config.binds] } : {}),
        },
      });
      await created.start();
      if (disk.Mounts) await copyImageWorkdir(host, container, created);
      const sandbox = new DockerSandbox({
        id,
        docker: host.docker,
        container: created,
        hostUrl: host.host.url,
        workdir: container.workdir,
        tempDir: config.tempDir,
        ...(config.maxOutputBytes !== undefined ? { maxOutputBytes: config.maxOutputBytes } : {}),
        onDispose: (disposed) => removeSandbox(disposed),
      });
      placements.set(sandbox, host);
      await sandbox.open(env);
      host.healthy = true;
      return sandbox;
    } catch (error) {
      if (created) await created.remove({ force: true, v: true }).catch(() => undefined);
      if (InvalidArgumentError.isInstance(error)) throw error;
      const message = (error as Error)?.message ?? String(error);
      if (container.diskMb !== undefined && /storage-?opt|pquota|quota/i.test(message))
        throw refuseDisk(
          host,
          container.diskMb,
          `the daemon refused the size limit (${message}). ${writableLayerAdvice}`,
          error,
        );
      if ((error as { statusCode?: number }).statusCode === 404 && /image/i.test(message)) {
        throw new SandboxError({
          message: `Docker image "${container.image}" not found on ${host.host.url} (build or pull it first)`,
          sandboxId: id,
          cause: error,
        });
      }
      if (!SandboxError.isInstance(error))
        host.healthy = /ECONNREFUSED|ENOENT|EHOSTUNREACH|ETIMEDOUT/.test(message) ? false : host.healthy;
      throw SandboxError.isInstance(error)
        ? error
        : new SandboxError({
            message: `Could not start docker sandbox on ${host.host.url}: ${message}`,
            sandboxId: id,
            cause: error,
          });
    }
  };

  const removeSandbox = async (sandbox: DockerSandbox): Promise<void> => {
    active.delete(sandbox);
    const host = placements.get(sandbox);
    placements.delete(sandbox);
    if (host) host.load = Math.max(0, host.load - 1);
    try {
      await sandbox.container.remove({ force: true, v: true });
    } catch (error) {
      const status = (error as { statusCode?: number }).statusCode;
      // 404: already gone; 409: removal already in progress. Both are fine for a dispose.
      if (status !== 404 && status !== 409)
        throw new SandboxError({
          message: `Could not remove sandbox ${sandbox.id}: ${(error as Error).message}`,
          sandboxId: sandbox.id,
          cause: error,
        });
    }
  };

  const place = async (): Promise<HostState> => {
    const states = await hosts();
    const index = pickHost(
      states.map((state) => ({
        weight: state.host.weight,
        maxSandboxes: state.host.maxSandboxes,
        load: state.load,
        healthy: state.healthy,
      })),
    );
    const chosen = states[index];
    if (!chosen)
      throw new SandboxError({
        message: `Every docker host is at its maxSandboxes limit (${states.map((state) => `${state.host.url}: ${state.load}`).join(', ')})`,
      });
    // Count the sandbox before any await, so concurrent acquires see each other's placement.
    chosen.load += 1;
    if (config.reapOnStart && !chosen.reaped) {
      chosen.reaped = true;
      await reapDeadOwners(chosen).catch(() => undefined);
    }
    return chosen;
  };

  const fillPool = (container: ContainerConfig): void => {
    if (closed || config.poolSize === 0) return;
    const key = poolKey(container);
    const ready = pools.get(key)?.length ?? 0;
    const pending = filling.get(key) ?? 0;
    for (let missing = config.poolSize - ready - pending; missing > 0; missing -= 1) {
      filling.set(key, (filling.get(key) ?? 0) + 1);
      track(
        (async () => {
          let host: HostState | undefined;
          try {
            host = await place();
            const sandbox = await createSandbox(host, container, {});
            if (closed) {
              await sandbox.dispose();
              return;
            }
            const list = pools.get(key) ?? [];
            list.push({ sandbox, host });
            pools.set(key, list);
          } catch {
            // A failed refill is retried on the next acquire; the error surfaces there if it persists.
            if (host) host.load = Math.max(0, host.load - 1);
          } finally {
            filling.set(key, (filling.get(key) ?? 1) - 1);
          }
        })(),
      );
    }
  };

  const takeFromPool = async (container: ContainerConfig): Promise<DockerSandbox | undefined> => {
    const list = pools.get(poolKey(container));
    while (list && list.length > 0) {
      const entry = list.shift() as PoolEntry;
      fillPool(container);
      if (!entry.sandbox.alive) {
        void entry.sandbox.dispose().catch(() => undefined);
        continue;
      }
      return entry.sandbox;
    }
    if (config.poolSize > 0) fillPool(container);
    return undefined;
  };

  const applySpecToPooled = async (sandbox: DockerSandbox, spec: SandboxSpec): Promise<void> => {
    const env = Object.entries(spec.env ?? {});
    if (env.length === 0) return;
    const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;
    for (const [key] of env) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
        throw new InvalidArgumentError({
          argument: 'spec.env',
          value: key,
          message: `Invalid environment variable name "${key}"`,
        });
    }
    const result = await sandbox.exec(env.map(([key, value]) => `export ${key}=${quote(value)}`).join('; '));
    if (result.exitCode !== 0)
      throw new SandboxError({
        message: `Sandbox ${sandbox.id}: could not apply env: ${result.output}`,
        sandboxId: sandbox.id,
      });
  };

  /** Remove containers whose owner process on this host is gone (crashed runs). */
  const reapDeadOwners = async (state: HostState): Promise<number> => {
    const containers = await state.docker.listContainers({
      all: true,
      filters: { label: [`${LABELS.managed}=true`, `${LABELS.hostId}=${hostId}`] },
    });
    let removed = 0;
    for (const info of containers) {
      const owner = Number(info.Labels?.[LABELS.ownerPid]);
      if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue;
      await state.docker
        .getContainer(info.Id)
        .remove({ force: true, v: true })
        .then(() => {
          removed += 1;
        })
        .catch(() => undefined);
    }
    return removed;
  };

  const reapOnce = async (): Promise<number> => {
    let removed = 0;
    const cutoff = Date.now() - config.idleTimeoutMs;
    for (const sandbox of [...active]) {
      // A sandbox running a command is in use however long ago the command started.
      if (!sandbox.busy && sandbox.lastActivity < cutoff) {
        sandbox.markDead(`disposed by the reaper after ${config.idleTimeoutMs} ms without activity`);
        await sandbox.dispose().catch(() => undefined);
        removed += 1;
      }
    }
    const states = hostsPromise ? await hostsPromise : [];
    const known = new Set<string>([...active].map((sandbox) => sandbox.id));
    for (const list of pools.values()) for (const entry of list) known.add(entry.sandbox.id);
    for (const state of states) {
      removed += await reapDeadOwners(state).catch(() => 0);
      // Containers of this provider that it no longer tracks (e.g. a create that failed midway).
      const mine = await state.docker
        .listContainers({ all: true, filters: { label: [`${LABELS.providerId}=${providerId}`] } })
        .catch(() => []);
      for (const info of mine) {
        const sandboxId = info.Labels?.[LABELS.sandboxId];
        const ageMs = Date.now() - Date.parse(info.Labels?.[LABELS.createdAt] ?? '');
        if (sandboxId && !known.has(sandboxId) && ageMs > 60_000) {
          await state.docker
            .getContainer(info.Id)
            .remove({ force: true, v: true })
            .catch(() => undefined);
          removed += 1;
        }
      }
    }
    return removed;
  };

  function startReaper(): void {
    const every = Math.max(1000, Math.min(60_000, Math.floor(config.idleTimeoutMs / 4)));
    reaperTimer = setInterval(() => void track(reapOnce()).catch(() => undefined), every);
    reaperTimer.unref();
  }

  return {
    specificationVersion: 'v1',
    id: 'docker',
    get activeCount() {
      return active.size;
    },
    async acquire(spec: SandboxSpec = {}, options: { signal?: AbortSignal } = {}): Promise<SandboxV1> {
      if (closed) throw new SandboxError({ message: 'The docker sandbox provider is closed' });
      options.signal?.throwIfAborted();
      const container = resolveConfig(spec);
      let sandbox = await takeFromPool(container);
      if (sandbox) {
        await applySpecToPooled(sandbox, spec).catch(async (error) => {
          await sandbox?.dispose().catch(() => undefined);
          throw error;
        });
      } else {
        // A host that cannot be reached is marked unhealthy and the sandbox goes to the next one.
        const attempts = (await hosts()).length;
        for (let attempt = 1; !sandbox; attempt += 1) {
          const host = await place();
          try {
            sandbox = await createSandbox(host, container, spec.env ?? {});
          } catch (error) {
            host.load = Math.max(0, host.load - 1);
            if (host.healthy || attempt >= attempts) throw error;
          }
        }
      }
      active.add(sandbox);
      try {
        await runSandboxSetup(sandbox, spec, options);
        options.signal?.throwIfAborted();
      } catch (error) {
        await sandbox.dispose().catch(() => undefined);
        throw error;
      }
      return sandbox;
    },
    async warm(): Promise<void> {
      if (config.poolSize === 0) return;
      await hosts();
      for (const image of config.warmImages ?? [config.image]) fillPool(resolveConfig({ image }));
      while (background.size > 0) await Promise.allSettled([...background]);
    },
    reap: () => reapOnce(),
    async close(): Promise<void> {
      closed = true;
      if (reaperTimer) clearInterval(reaperTimer);
      await Promise.allSettled([...background]);
      const pooled = [...pools.values()].flat().map((entry) => entry.sandbox);
      pools.clear();
      await Promise.allSettled([...pooled, ...active].map((sandbox) => sandbox.dispose()));
    },
  };
}
