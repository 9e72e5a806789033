// The `local` sandbox backend: a temporary workspace per sandbox on this machine and a persistent
// shell in its own session/process group. NOT isolated: commands run as the current user with
// full access to the host; use it for development and trusted tasks, never for untrusted models.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { SandboxProviderV1, SandboxSpec, SandboxV1 } from '@shears/core';
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
  // A few reads in flight at once: one after the other, each waits its turn in libuv's thread
  // pool behind every other file operation of the process (the env workers' own), and a scan of a
  // few hundred processes took most of a rollout's time under load.
  let next = 0;
  const reader = async () => {
    while (next < entries.length) {
      const entry = entries[next++]!;
      try {
        const environ = Buffer.concat([Buffer.from([0]), await readFile(`/proc/${entry}/environ`)]);
        if (needles.some((needle) => environ.includes(needle))) process.kill(Number(entry), 'SIGKILL');
      } catch {
        // Gone already, or not ours to read.
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, reader));
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
      await mkdir(parent, { recursive: true });
      const root = await mkdtemp(join(parent, 'shears-local-'));
      const id = `local-${randomBytes(6).toString('hex')}`;
      const workdir = spec.workdir ?? join(root, 'workspace');
      const tempDir = join(root, 'tmp');
      await mkdir(workdir, { recursive: true });
      await mkdir(tempDir, { recursive: true });
      const marker = `SHEARS_SANDBOX_ID=${id}`;
      const env = { ...baseEnv(), TMPDIR: tempDir, ...spec.env, SHEARS_SANDBOX_ID: id };

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
            const child = spawn('/bin/sh', ['-c', SHELL_BOOTSTRAP_SCRIPT], {
              cwd: workdir,
              env,
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
                    message: `Could not start /bin/sh for local sandbox ${id}: ${error.message}`,
                    cause: error,
                  }),
                ),
              );
            });
            return {
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
            await killMarkedProcesses(marker);
            await rm(root, { recursive: true, force: true });
          },
        }),
        { root },
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
