// The part every shell-backed sandbox shares: a persistent ShellSession that is reopened when it
// dies (dropped connection, interrupted command), path resolution against the workdir, and the
// dispose-once bookkeeping. Backends supply the transport and the file operations.
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type { ExecOptions, ExecResult, SandboxV1, SpawnedProcess, SpawnOptions } from '@shears/core';
import { SandboxError } from '@shears/core';
import type { ShellExecOptions, ShellExecResult, ShellSession, ShellTransport } from './shell-session.js';
import { createShellSession, ShellSessionClosedError, shellQuote } from './shell-session.js';

const INLINE_STDIN_LIMIT = 4096;

export interface ShellSandboxOptions {
  id: string;
  backend: string;
  workdir: string;
  tempDir: string;
  isolated: boolean;
  /** Starts a fresh shell (see SHELL_BOOTSTRAP) and returns its streams. */
  openTransport: () => Promise<ShellTransport>;
  /** Shell run in every new session before entering the workdir (e.g. `mkdir -p` it). */
  sessionSetup?: string;
  /** Environment exported in every new session. */
  env?: Record<string, string>;
  maxOutputBytes?: number;
  readFile: (absolutePath: string, options: { signal?: AbortSignal }) => Promise<Uint8Array>;
  writeFile: (
    absolutePath: string,
    data: Uint8Array,
    options: { signal?: AbortSignal; mode?: number },
  ) => Promise<void>;
  /** Backend clean-up after the session is closed (remove the workspace, kill leftovers). */
  dispose: () => Promise<void>;
  /** `SandboxV1.spawn`, when the backend has it; `cwd` arrives resolved against the workdir. */
  spawn?: (
    command: string,
    args: readonly string[],
    options: SpawnOptions & { cwd: string },
  ) => Promise<SpawnedProcess>;
}

/** A sandbox whose commands run in a persistent shell session. */
export interface ShellSandbox extends SandboxV1 {
  /** How many shell sessions were opened (1 unless the session had to be reopened). */
  readonly sessionsOpened: number;
}

export function createShellSandbox(options: ShellSandboxOptions): ShellSandbox {
  let session: ShellSession | undefined;
  let opening: Promise<ShellSession> | undefined;
  let disposed: Promise<void> | undefined;
  let sessionsOpened = 0;

  const open = async (): Promise<ShellSession> => {
    const transport = await options.openTransport();
    const opened = await createShellSession({ transport, maxOutputBytes: options.maxOutputBytes });
    sessionsOpened += 1;
    const exports = Object.entries(options.env ?? {})
      .map(([name, value]) => `export ${name}=${shellQuote(value)}`)
      .join('; ');
    const setup = options.sessionSetup ? `${options.sessionSetup} && ` : '';
    const init = await opened.exec(
      `${exports ? `${exports}; ` : ''}${setup}cd -- ${shellQuote(options.workdir)}`,
    );
    if (init.exitCode !== 0) {
      await opened.close();
      throw new SandboxError({
        sandboxId: options.id,
        message: `Sandbox ${options.id}: could not enter workdir ${options.workdir}: ${init.output.trim()}`,
      });
    }
    return opened;
  };

  const current = async (): Promise<ShellSession> => {
    if (session?.alive) return session;
    opening ??= open().finally(() => {
      opening = undefined;
    });
    session = await opening;
    return session;
  };

  const resolve = (path: string) => (posix.isAbsolute(path) ? path : posix.join(options.workdir, path));

  const assertUsable = (what: string) => {
    if (disposed)
      throw new SandboxError({
        sandboxId: options.id,
        message: `Sandbox ${options.id} is disposed; cannot ${what}`,
      });
  };

  const toExecResult = (result: ShellExecResult): ExecResult => ({
    exitCode: result.exitCode,
    output: result.output,
    stdout: result.stdout,
    stderr: result.stderr,
    timedOut: result.timedOut,
    durationMs: result.durationMs,
  });

  return {
    specificationVersion: 'v1',
    id: options.id,
    backend: options.backend,
    workdir: options.workdir,
    tempDir: options.tempDir,
    isolated: options.isolated,
    get sessionsOpened() {
      return sessionsOpened;
    },
    async exec(command: string, execOptions: ExecOptions = {}) {
      assertUsable('exec');
      if (typeof command !== 'string') {
        throw new SandboxError({
          sandboxId: options.id,
          message: `exec: command must be a string, got ${typeof command}`,
        });
      }
      const shellOptions: ShellExecOptions = {
        ...execOptions,
        cwd: execOptions.cwd === undefined ? undefined : resolve(execOptions.cwd),
      };
      // Inline stdin is written into the script, which bash reads byte by byte; big inputs go
      // through the backend's file API instead (the session removes the file afterwards).
      if (execOptions.stdin !== undefined && execOptions.stdin.length > INLINE_STDIN_LIMIT) {
        const stdinPath = posix.join(options.tempDir, `.shears-stdin-${randomBytes(8).toString('hex')}`);
        const bytes =
          typeof execOptions.stdin === 'string' ? Buffer.from(execOptions.stdin, 'utf8') : execOptions.stdin;
        await options.writeFile(stdinPath, bytes, {});
        shellOptions.stdin = undefined;
        shellOptions.stdinPath = stdinPath;
      }
      // A command that never reached a dead session is retried once on a fresh one.
      for (let attempt = 0; ; attempt += 1) {
        const active = await current();
        try {
          return toExecResult(await active.exec(command, shellOptions));
        } catch (error) {
          if (attempt === 0 && error instanceof ShellSessionClosedError && error.notStarted && !disposed)
            continue;
          throw new SandboxError({
            sandboxId: options.id,
            message: `Sandbox ${options.id}: command failed: ${(error as Error).message}`,
            cause: error,
          });
        }
      }
    },
    async readFile(path, fileOptions = {}) {
      assertUsable('readFile');
      return options.readFile(resolve(path), fileOptions);
    },
    async writeFile(path, data, fileOptions = {}) {
      assertUsable('writeFile');
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      return options.writeFile(resolve(path), bytes, fileOptions);
    },
    ...(options.spawn
      ? {
          async spawn(command: string, args: readonly string[], spawnOptions: SpawnOptions = {}) {
            assertUsable('spawn');
            return options.spawn!(command, args, {
              ...spawnOptions,
              cwd: spawnOptions.cwd === undefined ? options.workdir : resolve(spawnOptions.cwd),
            });
          },
        }
      : {}),
    dispose() {
      disposed ??= (async () => {
        const active = session ?? (await opening?.catch(() => undefined));
        await active?.close().catch(() => undefined);
        await options.dispose();
      })();
      return disposed;
    },
  };
}
