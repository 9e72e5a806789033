// A minimal local sandbox provider for kernel tests: each sandbox is a fresh temp directory
// (workspace + scratch dir), commands run through `bash -c` in their own process group so a
// timeout kills the whole group (exit 124). It counts live sandboxes so tests can assert that
// nothing is left behind. Not isolated; the real backends live in @shears/tools-terminal.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type {
  ExecOptions,
  ExecResult,
  SandboxProviderV1,
  SandboxSpec,
  SandboxV1,
} from '../contracts/sandbox.js';
import { AbortedError, SandboxError } from '../errors.js';
import { runSandboxSetup } from '../sandbox-setup.js';

export interface TempSandboxProviderOptions {
  /** Parent directory of the sandboxes (default: the OS temp dir). */
  root?: string;
  /** Default command timeout (default 60 s). */
  defaultTimeoutMs?: number;
  /** Prefix of the temp directories (default `shears-sandbox-`). */
  prefix?: string;
}

export interface TempSandboxProvider extends SandboxProviderV1 {
  /** Sandboxes acquired and not yet disposed. */
  readonly liveCount: number;
  /** Directories of live sandboxes. */
  liveDirectories(): string[];
  /** Total sandboxes ever acquired. */
  readonly acquiredCount: number;
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

export function createTempSandboxProvider(options: TempSandboxProviderOptions = {}): TempSandboxProvider {
  const live = new Map<string, { directory: string; dispose: () => Promise<void> }>();
  let acquired = 0;
  let counter = 0;

  async function acquire(
    spec: SandboxSpec = {},
    acquireOptions: { signal?: AbortSignal } = {},
  ): Promise<SandboxV1> {
    if (acquireOptions.signal?.aborted) throw new AbortedError({ cause: acquireOptions.signal.reason });
    const root = options.root ?? tmpdir();
    await mkdir(root, { recursive: true });
    const directory = await mkdtemp(join(root, options.prefix ?? 'shears-sandbox-'));
    const workdir = join(directory, 'work');
    const tempDir = join(directory, 'tmp');
    await mkdir(workdir, { recursive: true });
    await mkdir(tempDir, { recursive: true });
    const id = `temp-${process.pid}-${++counter}`;
    const running = new Set<number>();
    let disposed = false;
    const resolvePath = (path: string) => (isAbsolute(path) ? path : resolve(workdir, path));

    const exec = (command: string, execOptions: ExecOptions = {}): Promise<ExecResult> => {
      if (disposed)
        return Promise.reject(new SandboxError({ message: `Sandbox ${id} is disposed`, sandboxId: id }));
      if (execOptions.signal?.aborted)
        return Promise.reject(new AbortedError({ cause: execOptions.signal.reason }));
      const started = performance.now();
      const timeoutMs = execOptions.timeoutMs ?? options.defaultTimeoutMs ?? 60_000;
      return new Promise<ExecResult>((resolvePromise, reject) => {
        const child = spawn('bash', ['-c', command], {
          cwd: execOptions.cwd ? resolvePath(execOptions.cwd) : workdir,
          env: { ...process.env, HOME: workdir, TMPDIR: tempDir, ...spec.env, ...execOptions.env },
          detached: true,
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        const pid = child.pid;
        if (pid !== undefined) running.add(pid);
        let stdout = '';
        let stderr = '';
        let output = '';
        let timedOut = false;
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          output += chunk;
        });
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
          output += chunk;
        });
        child.stdin.on('error', () => {});
        if (execOptions.stdin !== undefined) child.stdin.end(execOptions.stdin);
        else child.stdin.end();
        const timer = setTimeout(() => {
          timedOut = true;
          killGroup(pid);
        }, timeoutMs);
        const onAbort = () => killGroup(pid);
        execOptions.signal?.addEventListener('abort', onAbort, { once: true });
        child.on('error', (error) => {
          clearTimeout(timer);
          if (pid !== undefined) running.delete(pid);
          execOptions.signal?.removeEventListener('abort', onAbort);
          reject(
            new SandboxError({
              message: `Sandbox ${id} could not run bash: ${error.message}`,
              sandboxId: id,
              cause: error,
            }),
          );
        });
        child.on('close', (code, signalName) => {
          clearTimeout(timer);
          if (pid !== undefined) running.delete(pid);
          execOptions.signal?.removeEventListener('abort', onAbort);
          if (execOptions.signal?.aborted) {
            reject(new AbortedError({ cause: execOptions.signal.reason }));
            return;
          }
          resolvePromise({
            exitCode: timedOut ? 124 : (code ?? (signalName ? 128 + 9 : 1)),
            output,
            stdout,
            stderr,
            timedOut,
            durationMs: performance.now() - started,
          });
        });
      });
    };

    const dispose = async () => {
      if (disposed) return;
      disposed = true;
      for (const pid of running) killGroup(pid);
      running.clear();
      live.delete(id);
      await rm(directory, { recursive: true, force: true });
    };

    const sandbox: SandboxV1 = {
      specificationVersion: 'v1',
      id,
      backend: 'temp',
      workdir,
      tempDir,
      isolated: false,
      exec,
      async readFile(path) {
        return new Uint8Array(await readFile(resolvePath(path)));
      },
      async writeFile(path, data, writeOptions) {
        const target = resolvePath(path);
        await mkdir(dirname(target), { recursive: true });
        await writeFile(
          target,
          data,
          writeOptions?.mode !== undefined ? { mode: writeOptions.mode } : undefined,
        );
      },
      dispose,
    };
    live.set(id, { directory, dispose });
    acquired++;
    try {
      await runSandboxSetup(sandbox, spec, acquireOptions);
    } catch (error) {
      await dispose();
      throw error;
    }
    return sandbox;
  }

  return {
    specificationVersion: 'v1',
    id: 'temp',
    acquire,
    get liveCount() {
      return live.size;
    },
    get acquiredCount() {
      return acquired;
    },
    liveDirectories() {
      return [...live.values()].map((entry) => entry.directory);
    },
    async close() {
      await Promise.all([...live.values()].map((entry) => entry.dispose()));
    },
  };
}
