// Test infrastructure: a real Ray cluster on this machine, a head and worker nodes each started
// with `ray start --block` (so each node is one process tree, stopped or killed by PID like dockerd
// and sshd), each with its own temp dir and custom resources so placement is visible. One cluster
// per test file: starting a node takes seconds to tens of seconds on a loaded 2-core machine.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RayNodeOptions {
  /** A name for messages and for killNode (`head`, `nodeA`). */
  name: string;
  cpus: number;
  /** Custom resources, e.g. { nodeA: 1 }. */
  resources?: Record<string, number>;
}

export interface RayNode {
  name: string;
  /** The `ray start --block` process: the node's processes (raylet, workers) are its descendants. */
  pid: number;
  /** Every live process of the node (the `ray start` process and its descendants). */
  processes(): number[];
}

export interface RayCluster {
  /** `127.0.0.1:PORT`, the head's GCS. */
  address: string;
  /** The interpreter whose `ray` started the cluster (the driver must run the same Ray). */
  python: string;
  nodes: RayNode[];
  /** SIGKILLs every process of the node at once: a node lost, not a node shut down. */
  killNode(name: string): void;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** The descendants of `pid` (and `pid`), read from /proc. */
export function processTree(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      const parent = Number(fields[1]);
      parents.set(parent, [...(parents.get(parent) ?? []), Number(entry)]);
    } catch {}
  }
  const tree: number[] = [];
  const alive = (id: number) => {
    try {
      const stat = readFileSync(`/proc/${id}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
    } catch {
      return false;
    }
  };
  const visit = (id: number) => {
    if (alive(id)) tree.push(id);
    for (const child of parents.get(id) ?? []) visit(child);
  };
  visit(pid);
  return tree;
}

async function startNode(options: {
  ray: string;
  node: RayNodeOptions;
  head: boolean;
  port: number;
  tempDir: string;
}): Promise<{ child: ChildProcess; output: () => string }> {
  const { node } = options;
  const args = [
    'start',
    '--block',
    ...(options.head
      ? ['--head', '--port', String(options.port), '--include-dashboard=false']
      : ['--address', `127.0.0.1:${options.port}`]),
    '--node-ip-address',
    '127.0.0.1',
    '--num-cpus',
    String(node.cpus),
    '--resources',
    JSON.stringify(node.resources ?? {}),
    '--object-store-memory',
    String(80 * 1024 * 1024),
    '--disable-usage-stats',
    '--temp-dir',
    options.tempDir,
  ];
  const child = spawn(options.ray, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      RAY_USAGE_STATS_ENABLED: '0',
      // The raylet waits for its agents' port files; on a loaded 2-core machine they take longer
      // than the default 30 s... and the node aborts. A slow start is not a failure here.
      RAY_agent_register_timeout_ms: '180000',
    },
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const started = await new Promise<boolean>((resolve) => {
    const timer = setInterval(() => {
      if (output.includes('Ray runtime started')) finish(true);
    }, 200);
    const finish = (value: boolean) => {
      clearInterval(timer);
      resolve(value);
    };
    child.once('exit', () => finish(false));
    setTimeout(() => finish(false), 150_000);
  });
  if (!started) {
    try {
      process.kill(child.pid!, 'SIGTERM');
    } catch {}
    throw new Error(`ray node ${node.name} did not start:\n${output.slice(-3000)}`);
  }
  return { child, output: () => output };
}

/**
 * Starts a head (no CPUs: nothing but what is pinned to it runs there) and `workers`, one after
 * the other (two nodes registering at once time out on a loaded machine).
 */
export async function startRayCluster(options: {
  python: string;
  head?: RayNodeOptions;
  workers: RayNodeOptions[];
}): Promise<RayCluster> {
  const ray = join(options.python, '..', 'ray');
  if (!existsSync(ray))
    throw new Error(`${ray} not found: install ray==2.58.0 into that venv (scripts/setup-python.sh)`);
  const root = await mkdtemp(join(tmpdir(), 'shears-ray-'));
  const port = await freePort();
  const started: Array<{ name: string; child: ChildProcess }> = [];
  const tree = (pid: number) => () => processTree(pid);
  const stop = async () => {
    // Workers first, then the head; SIGTERM is `ray start --block`'s graceful stop of its node.
    for (const { child } of [...started].reverse()) {
      const pids = processTree(child.pid!);
      try {
        process.kill(child.pid!, 'SIGTERM');
      } catch {}
      const until = Date.now() + 20_000;
      while (Date.now() < until && pids.some((pid) => processTree(pid).length > 0))
        await new Promise((resolve) => setTimeout(resolve, 200));
      for (const pid of pids)
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
    }
    await rm(root, { recursive: true, force: true }).catch(() => {});
  };
  try {
    const head = options.head ?? { name: 'head', cpus: 0, resources: { head: 1 } };
    for (const [index, node] of [head, ...options.workers].entries()) {
      // `ray start` gives a node 30 s (not configurable) to appear in the GCS; on a loaded 2-core
      // machine that sometimes is not enough, and the same start succeeds when tried again.
      for (let attempt = 1; ; attempt++) {
        try {
          const { child } = await startNode({
            ray,
            node,
            head: index === 0,
            port,
            tempDir: join(root, `${node.name}-${attempt}`),
          });
          started.push({ name: node.name, child });
          break;
        } catch (error) {
          if (attempt === 3 || !/timed out during startup/.test((error as Error).message)) throw error;
          console.warn(`ray node ${node.name}: start timed out on a loaded machine, trying again`);
        }
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    address: `127.0.0.1:${port}`,
    python: options.python,
    nodes: started.map(({ name, child }) => ({ name, pid: child.pid!, processes: tree(child.pid!) })),
    killNode(name) {
      const node = started.find((entry) => entry.name === name);
      if (!node)
        throw new Error(`no ray node ${name} (have: ${started.map((entry) => entry.name).join(', ')})`);
      for (const pid of processTree(node.child.pid!))
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
    },
    stop,
  };
}
