// Test infrastructure: a private Docker daemon for the test run (own socket, data root, exec root
// and pidfile under a per-run directory), the busybox test image, and teardown that removes every
// container and stops the daemon. Under CI=true a daemon that cannot start is a failure; elsewhere
// (no root, no dockerd) the service returns null after a loud warning and docker tests skip.
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureTestImage } from './images.js';

const execFileAsync = promisify(execFile);

export interface DockerdHandle {
  /** `unix:///…/docker.sock` */
  host: string;
  socketPath: string;
  dir: string;
  pid: number;
  stop(): Promise<void>;
}

export interface StartDockerdOptions {
  /** Parent of the per-run directory; /tmp keeps the socket path under the 108-byte limit. */
  baseDir?: string;
  readyTimeoutMs?: number;
}

const DIR_PREFIX = 'shears-dk-';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** GET /_ping over the unix socket; true when the daemon answers OK. */
function pingDocker(socketPath: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', method: 'GET', timeout: timeoutMs }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !isAlive(pid);
}

/**
 * Daemons of earlier runs that crashed before teardown: their directory names the owning test
 * process; when that process is gone, stop the daemon recorded in the pidfile and remove the dir.
 */
async function reapStaleDaemons(baseDir: string): Promise<void> {
  let entries: string[] = [];
  try {
    entries = readdirSync(baseDir).filter((entry) => entry.startsWith(DIR_PREFIX));
  } catch {
    return;
  }
  for (const entry of entries) {
    const owner = Number(entry.slice(DIR_PREFIX.length).split('-')[0]);
    if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue;
    const dir = join(baseDir, entry);
    const pidfile = join(dir, 'docker.pid');
    if (existsSync(pidfile)) {
      const pid = Number(readFileSync(pidfile, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
        process.kill(pid, 'SIGTERM');
        if (!(await waitForExit(pid, 15_000))) process.kill(pid, 'SIGKILL');
      }
    }
    await removeDaemonDir(dir);
  }
}

/** Mount points at or under `dir`, deepest first (from /proc/self/mountinfo; octal escapes undone). */
function mountsUnder(dir: string): string[] {
  let table = '';
  try {
    table = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const points = table
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined)
    .map((point) =>
      point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))),
    )
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/**
 * Remove a daemon's directory. A daemon killed hard leaves its overlay and shm mounts behind,
 * and rm on a mount point fails with EBUSY: those are detached first (umount -l, deepest first).
 * What still cannot be removed is reported and left: the directory's name is unique to its run,
 * so a leftover never blocks the next daemon, and cleanup must not fail the test run.
 */
async function removeDaemonDir(dir: string): Promise<void> {
  for (const point of mountsUnder(dir)) {
    await execFileAsync('umount', ['-l', point]).catch((error: Error) =>
      console.warn(`[test-infra] could not unmount ${point}: ${error.message}`),
    );
  }
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (error) {
    console.warn(`[test-infra] left ${dir} behind: ${(error as Error).message}`);
  }
}

/** Start a private dockerd and wait until it answers; throws with the daemon log on failure. */
export async function startDockerd(options: StartDockerdOptions = {}): Promise<DockerdHandle> {
  const baseDir = options.baseDir ?? '/tmp';
  await reapStaleDaemons(baseDir);
  const dir = join(baseDir, `${DIR_PREFIX}${process.pid}-${Date.now().toString(36)}`);
  mkdirSync(dir, { recursive: true });
  const socketPath = join(dir, 'docker.sock');
  const logPath = join(dir, 'dockerd.log');
  const logFd = openSync(logPath, 'a');
  // No default bridge and no iptables: several test daemons may run at once on one machine and
  // must not fight over docker0 or the host's firewall. Sandboxes default to network "none".
  const child = spawn(
    'dockerd',
    [
      '--host',
      `unix://${socketPath}`,
      '--data-root',
      join(dir, 'data'),
      '--exec-root',
      join(dir, 'exec'),
      '--pidfile',
      join(dir, 'docker.pid'),
      '--bridge',
      'none',
      '--iptables=false',
      '--ip-masq=false',
      '--log-level',
      'warn',
    ],
    { detached: true, stdio: ['ignore', logFd, logFd] },
  );
  closeSync(logFd);
  let spawnError: Error | undefined;
  child.on('error', (error) => {
    spawnError = error;
  });
  child.unref();
  const pid = child.pid ?? -1;

  const stop = async (): Promise<void> => {
    if (pid > 0 && isAlive(pid)) {
      // Remove containers first so the daemon does not keep them for a restart.
      try {
        const ids = (
          await execFileAsync('docker', ['-H', `unix://${socketPath}`, 'ps', '-aq'])
        ).stdout.trim();
        if (ids)
          await execFileAsync('docker', ['-H', `unix://${socketPath}`, 'rm', '-f', ...ids.split(/\s+/)]);
      } catch {
        // the daemon is going away anyway
      }
      process.kill(pid, 'SIGTERM');
      if (!(await waitForExit(pid, 20_000))) process.kill(pid, 'SIGKILL');
    }
    await removeDaemonDir(dir);
  };

  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (spawnError) break;
    if (pid > 0 && !isAlive(pid)) break;
    if (existsSync(socketPath) && (await pingDocker(socketPath))) {
      return { host: `unix://${socketPath}`, socketPath, dir, pid, stop };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const log = existsSync(logPath) ? readFileSync(logPath, 'utf8').slice(-3000) : '';
  await stop().catch(() => undefined);
  throw new Error(
    `dockerd did not become ready${spawnError ? `: ${spawnError.message}` : ''}\n--- dockerd log ---\n${log}`,
  );
}

const isCi = () => process.env.CI === 'true' || process.env.CI === '1';

/**
 * The global-setup service: a daemon plus the busybox image, exported as
 * SHEARS_TEST_DOCKER_HOST / SHEARS_TEST_DOCKER_IMAGE. An already set SHEARS_TEST_DOCKER_HOST
 * is used as is (only the image is built).
 */
export async function startDockerService(): Promise<{
  env: Record<string, string>;
  teardown: () => Promise<void>;
} | null> {
  const preset = process.env.SHEARS_TEST_DOCKER_HOST;
  try {
    if (preset) {
      const image = await ensureTestImage({ host: preset });
      return {
        env: { SHEARS_TEST_DOCKER_HOST: preset, SHEARS_TEST_DOCKER_IMAGE: image },
        teardown: async () => {},
      };
    }
    const canRun = typeof process.getuid === 'function' && process.getuid() === 0;
    if (!canRun && !isCi()) {
      console.warn(
        '\n⚠️  [test-infra] not root: no private dockerd started; Docker sandbox tests will SKIP. Set SHEARS_TEST_DOCKER_HOST to use an existing daemon.\n',
      );
      return null;
    }
    const daemon = await startDockerd();
    try {
      const image = await ensureTestImage({ host: daemon.host });
      return {
        env: { SHEARS_TEST_DOCKER_HOST: daemon.host, SHEARS_TEST_DOCKER_IMAGE: image },
        teardown: daemon.stop,
      };
    } catch (error) {
      await daemon.stop();
      throw error;
    }
  } catch (error) {
    if (isCi()) throw error;
    console.warn(
      `\n⚠️  [test-infra] Docker unavailable, Docker sandbox tests will SKIP: ${(error as Error).message}\n`,
    );
    return null;
  }
}
