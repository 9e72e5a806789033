// The `local` sandbox backend: a temporary workspace per sandbox on this machine and a persistent
// shell in its own session/process group. NOT isolated: commands run as the current user with
// full access to the host; use it for development and trusted tasks, never for untrusted models.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { SandboxProviderV1, SandboxSpec, SandboxV1, SpawnedProcess, SpawnOptions } from '@shears/core';
import { InvalidArgumentError, SandboxError, throwIfAborted } from '@shears/core';
import { runSandboxSetup } from '@shears/core/internal';
import { z } from 'zod';
import type { ShellSandbox } from '../shell-sandbox.js';
import { createShellSandbox } from '../shell-sandbox.js';
import { SHELL_BOOTSTRAP_SCRIPT } from '../shell-session.js';

/** Host variables a local sandbox inherits by default (everything else, e.g. API keys, stays out). */
export const LOCAL_INHERITED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LC_ALL',
  'TZ',
  'SHELL',
] as const;

export const localSandboxSettingsSchema = z
  .object({
    /** Directory under which per-sandbox workspaces are created (default: the OS temp dir). */
    root: z.string().min(1).optional(),
    /** Host variables to pass through, or `true` for the whole host environment. */
    inheritEnv: z.union([z.boolean(), z.array(z.string())]).optional(),
    /** Extra environment for every sandbox. */
    env: z.record(z.string(), z.string()).optional(),
    /** Output cap per command and stream, in bytes. */
    maxOutputBytes: z.number().int().positive().optional(),
  })
  .strict();
export type LocalSandboxSettings = z.infer<typeof localSandboxSettingsSchema>;

export interface LocalSandbox extends ShellSandbox {
  /** The directory that holds workspace and temp dir; removed on dispose. */
  readonly root: string;
}

/** Reads `/proc/<pid>/environ` of every process and SIGKILLs those carrying one of `markers`. */
async function scanAndKill(markers: readonly string[]): Promise<void> {
  const needles = markers.map((marker) => Buffer.from(`\0${marker}\0`));
  let entries: string[];
  try {
    entries = (await readdir('/proc')).filter(
      (entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid,
    );
  } catch {
    return;
  }
  // Synchronous reads, a slice at a time with a turn of the event loop between slices: a read of
  // /proc/<pid>/environ takes microseconds, and through the promise API (libuv's thread pool, four
  // hand-offs a file) a scan of a few hundred processes cost 4-6x the CPU (12-19 ms against
  // 2-5 ms here) and waited behind every other file operation of the process.
  const killed: string[] = [];
  for (let start = 0; start < entries.length; start += SCAN_SLICE) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const entry of entries.slice(start, start + SCAN_SLICE)) {
      try {
        const environ = Buffer.concat([ZERO, readFileSync(`/proc/${entry}/environ`)]);
        if (needles.some((needle) => environ.includes(needle))) {
          process.kill(Number(entry), 'SIGKILL');
          killed.push(entry);
        }
      } catch {
        // Gone already, or not ours to read.
      }
    }
  }
  // A SIGKILLed process can still be exiting (state D, closing its files) for a moment.
  if (killed.length > 0) await awaitGone(killed);
}

const SCAN_SLICE = 32;

/** Waits (up to a second) until the killed processes are gone or zombies, not still exiting. */
async function awaitGone(pids: readonly string[]): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const running = pids.filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
      } catch {
        return false;
      }
    });
    if (running.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
const ZERO = Buffer.from([0]);

const bashOnPath = new Map<string, string | undefined>();

/** The first executable `bash` in the absolute directories of `path` (cached per PATH). */
function findBash(path: string | undefined): string | undefined {
  const key = path ?? '';
  if (bashOnPath.has(key)) return bashOnPath.get(key);
  let found: string | undefined;
  for (const directory of key.split(':')) {
    if (!isAbsolute(directory)) continue;
    try {
      accessSync(join(directory, 'bash'), constants.X_OK);
      found = join(directory, 'bash');
      break;
    } catch {
      // Not here.
    }
  }
  bashOnPath.set(key, found);
  return found;
}

let waitingMarkers: string[] = [];
let nextScan: Promise<void> | undefined;
let lastScan: Promise<void> = Promise.resolve();

/**
 * Kills every process that carries this sandbox's marker variable (setsid cannot hide them). The
 * sandboxes released together (a whole group's, a step's worth) share one scan of /proc: a scan
 * starts after the one in progress ends and serves every marker asked for before it started, so
 * each caller's processes are still looked for after its request, as before, but 64 releases read
 * /proc once or twice instead of 64 times.
 */
function killMarkedProcesses(marker: string): Promise<void> {
  waitingMarkers.push(marker);
  if (nextScan === undefined) {
    nextScan = lastScan.then(() => {
      const markers = waitingMarkers;
      waitingMarkers = [];
      nextScan = undefined;
      return scanAndKill(markers);
    });
    lastScan = nextScan;
  }
  return nextScan;
}

/**
 * Writes `path` below the sandbox's own `root` without following any symlink on the way: each
 * directory is opened with O_NOFOLLOW relative to the one before (through /proc/self/fd, the
 * openat of Node), so a directory the sandbox's processes replaced by a symlink (its temp dir,
 * say) cannot redirect the write onto the host. Returns false where this does not apply (a path
 * outside `root`, or no /proc), and the caller writes the plain way.
 */
async function writeBelowRoot(root: string, path: string, data: Uint8Array, mode: number | undefined) {
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel) || process.platform !== 'linux') return false;
  const parts = rel.split(sep);
  const name = parts.pop()!;
  let directory = await open(root, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    for (const part of parts) {
      const at = `/proc/self/fd/${directory.fd}/${part}`;
      await mkdir(at).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      const next = await open(at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      await directory.close();
      directory = next;
    }
    const file = await open(
      `/proc/self/fd/${directory.fd}/${name}`,
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
      mode ?? 0o666,
    );
    try {
      await file.writeFile(data);
    } finally {
      await file.close();
    }
  } finally {
    await directory.close();
  }
  return true;
}

export function createLocalSandboxProvider(
  settings: LocalSandboxSettings | Record<string, unknown> = {},
): SandboxProviderV1 {
  const parsed = localSandboxSettingsSchema.safeParse(settings);
  if (!parsed.success) {
    throw new InvalidArgumentError({
      argument: 'settings',
      value: settings,
      message: `Invalid local sandbox settings: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')} (allowed keys: root, inheritEnv, env, maxOutputBytes)`,
    });
  }
  const config = parsed.data;
  const live = new Set<SandboxV1>();
  let closed = false;
  let parentReady: Promise<void> | undefined;

  const baseEnv = (): Record<string, string> => {
    const inherit = config.inheritEnv ?? [...LOCAL_INHERITED_ENV];
    const env: Record<string, string> = {};
    if (inherit === true) Object.assign(env, process.env);
    else if (Array.isArray(inherit)) {
      for (const name of inherit) if (process.env[name] !== undefined) env[name] = process.env[name]!;
    }
    env.PATH ??= '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
    return { ...env, ...config.env };
  };

  return {
    specificationVersion: 'v1',
    id: 'local',
    async acquire(spec: SandboxSpec = {}, options = {}) {
      throwIfAborted(options.signal);
      if (closed) throw new SandboxError({ message: 'The local sandbox provider is closed' });
      const parent = config.root ?? tmpdir();
      // The parent is made once; mkdtemp alone after that (again if someone removed it).
      parentReady ??= mkdir(parent, { recursive: true }).then(
        () => undefined,
        (error: unknown) => {
          parentReady = undefined;
          throw error;
        },
      );
      await parentReady;
      const root = await mkdtemp(join(parent, 'shears-local-')).catch(
        async (error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
          await mkdir(parent, { recursive: true });
          return mkdtemp(join(parent, 'shears-local-'));
        },
      );
      const id = `local-${randomBytes(6).toString('hex')}`;
      const workdir = spec.workdir ?? join(root, 'workspace');
      const tempDir = join(root, 'tmp');
      await mkdir(workdir, { recursive: true });
      await mkdir(tempDir, { recursive: true });
      const marker = `SHEARS_SANDBOX_ID=${id}`;
      const env: Record<string, string> = {
        ...baseEnv(),
        TMPDIR: tempDir,
        ...spec.env,
        SHEARS_SANDBOX_ID: id,
      };
      // Files are written and read without a shell; the shell starts with the first command. Until
      // then no process carries the marker, and dispose has none to look for.
      let shellStarted = false;
      let shells = 0;

      const spawned = new Set<SpawnedProcess>();
      let everSpawned = false;
      const sandbox: LocalSandbox = Object.assign(
        createShellSandbox({
          id,
          backend: 'local',
          workdir,
          tempDir,
          isolated: false,
          maxOutputBytes: config.maxOutputBytes,
          async openTransport() {
            // detached: the shell leads its own session and process group, so nothing it starts
            // shares a group with this Node process.
            shellStarted = true;
            // The session's state lives below the root (removed with it), made here rather than by
            // a `mktemp` process in the shell; bash found on the sandbox's PATH is started as the
            // bootstrap would (`exec bash --noprofile --norc`) without the `sh` before it.
            shells += 1;
            const stateDir = join(root, `.shell-${shells}`);
            await mkdir(stateDir, { mode: 0o700 });
            const bash = findBash(env.PATH);
            const child = spawn(
              bash ?? '/bin/sh',
              bash ? ['--noprofile', '--norc'] : ['-c', SHELL_BOOTSTRAP_SCRIPT],
              { argv0: bash ? 'bash' : 'sh', cwd: workdir, env, detached: true, stdio: 'pipe' },
            );
            child.stdin.on('error', () => undefined);
            await new Promise<void>((resolve, reject) => {
              child.once('spawn', () => resolve());
              child.once('error', (error) =>
                reject(
                  new SandboxError({
                    sandboxId: id,
                    message: `Could not start /bin/sh for local sandbox ${id}: ${error.message}`,
                    cause: error,
                  }),
                ),
              );
            });
            return {
              stateDir,
              stdin: child.stdin,
              stdout: child.stdout,
              stderr: child.stderr,
              killProcessGroup(pgid, signal) {
                process.kill(-pgid, signal);
              },
              close: async () => {
                try {
                  if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
                } catch {
                  // Already gone.
                }
                child.stdin.destroy();
              },
            };
          },
          async readFile(path) {
            try {
              return new Uint8Array(await readFile(path));
            } catch (error) {
              const code = (error as NodeJS.ErrnoException).code;
              throw new SandboxError({
                sandboxId: id,
                message:
                  code === 'ENOENT'
                    ? `No such file in sandbox ${id}: ${path}`
                    : code === 'EISDIR'
                      ? `Is a directory, not a file, in sandbox ${id}: ${path}`
                      : `Could not read ${path} in sandbox ${id}: ${(error as Error).message}`,
                cause: error,
              });
            }
          },
          async writeFile(path, data, fileOptions) {
            try {
              if (!(await writeBelowRoot(root, path, data, fileOptions.mode))) {
                await mkdir(dirname(path), { recursive: true });
                await writeFile(path, data, fileOptions.mode === undefined ? {} : { mode: fileOptions.mode });
              }
            } catch (error) {
              const code = (error as NodeJS.ErrnoException).code;
              throw new SandboxError({
                sandboxId: id,
                message:
                  code === 'ELOOP' || code === 'ENOTDIR'
                    ? `Could not write ${path} in sandbox ${id}: a directory on the way is a symlink or not a directory (writes below the sandbox root never follow symlinks)`
                    : `Could not write ${path} in sandbox ${id}: ${(error as Error).message}`,
                cause: error,
              });
            }
          },
          async dispose() {
            live.delete(sandbox);
            await Promise.all([...spawned].map((child) => child.kill()));
            // A process started by the shell or by spawn (and its children) carries the marker;
            // a sandbox that started neither has none to look for.
            if (shellStarted || everSpawned) await killMarkedProcesses(marker);
            await rm(root, { recursive: true, force: true });
          },
        }),
        {
          root,
          spawn: (command: string, args: readonly string[], spawnOptions: SpawnOptions = {}) => {
            everSpawned = true;
            return spawnLocal({ id, workdir, env, command, args, options: spawnOptions, spawned });
          },
        },
      );
      live.add(sandbox);
      try {
        await runSandboxSetup(sandbox, spec, options);
      } catch (error) {
        await sandbox.dispose();
        throw error;
      }
      return sandbox;
    },
    async close() {
      closed = true;
      await Promise.all([...live].map((sandbox) => sandbox.dispose()));
    },
  };
}

/**
 * `spawn` of the local backend: the process leads its own process group (killed as a group) and
 * carries the sandbox's marker variable, so the sandbox's dispose finds it even if it escaped.
 */
async function spawnLocal(init: {
  id: string;
  workdir: string;
  env: Record<string, string>;
  command: string;
  args: readonly string[];
  options: SpawnOptions;
  spawned: Set<SpawnedProcess>;
}): Promise<SpawnedProcess> {
  const { id, options } = init;
  throwIfAborted(options.signal);
  const cwd =
    options.cwd === undefined
      ? init.workdir
      : isAbsolute(options.cwd)
        ? options.cwd
        : join(init.workdir, options.cwd);
  const child = spawn(init.command, [...init.args], {
    cwd,
    env: { ...init.env, ...options.env, SHEARS_SANDBOX_ID: id },
    detached: true,
    stdio: 'pipe',
  });
  child.stdin.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', (error) =>
      reject(
        new SandboxError({
          sandboxId: id,
          message: `Could not start ${init.command} in local sandbox ${id}: ${error.message}`,
          cause: error,
        }),
      ),
    );
  });
  const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
    child.once('exit', (exitCode, signal) => resolve({ exitCode, signal }));
  });
  let ended = false;
  const kill = async () => {
    if (!ended && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await exited;
  };
  const handle: SpawnedProcess = {
    stdin: Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    stdout: Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
    stderr: Readable.toWeb(child.stderr) as ReadableStream<Uint8Array>,
    exited,
    kill,
  };
  init.spawned.add(handle);
  void exited.then(() => {
    ended = true;
    init.spawned.delete(handle);
  });
  const onAbort = () => void kill();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  void exited.then(() => options.signal?.removeEventListener('abort', onAbort));
  return handle;
}
