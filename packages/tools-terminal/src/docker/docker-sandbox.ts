// One Docker sandbox: a container owned by one rollout, the package's persistent shell session
// over one hijacked `docker exec` stream (no exec round trip per command), and files through the
// archive API. Any failure of the container surfaces as a SandboxError, which the
// group runner counts as an infrastructure failure rather than a model mistake.
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import type {
  ExecOptions,
  ExecResult,
  SandboxV1,
  SpawnedExit,
  SpawnedProcess,
  SpawnOptions,
} from '@shears/core';
import { InvalidArgumentError, NoSuchEntryError, SandboxError } from '@shears/core';
import { sleep } from '@shears/core/http';
import type Dockerode from 'dockerode';
import { createShellSandbox, type ShellSandbox } from '../shell-sandbox.js';
import { SHELL_BOOTSTRAP, type ShellTransport } from '../shell-session.js';
import { createTar, parseTar } from './tar.js';

interface DockerSandboxInit {
  id: string;
  docker: Dockerode;
  container: Dockerode.Container;
  /** URL of the Docker host the container runs on. */
  hostUrl: string;
  workdir: string;
  tempDir: string;
  maxOutputBytes?: number;
  /** Called once when the sandbox is disposed (the provider removes the container). */
  onDispose: (sandbox: DockerSandbox) => Promise<void>;
  now?: () => number;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer | string>)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

function statusOf(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null
    ? ((error as { statusCode?: number }).statusCode ?? undefined)
    : undefined;
}

export class DockerSandbox implements SandboxV1 {
  readonly specificationVersion = 'v1' as const;
  readonly backend = 'docker';
  readonly isolated = true;
  readonly id: string;
  readonly workdir: string;
  readonly tempDir: string;
  readonly container: Dockerode.Container;
  /** URL of the Docker host the container runs on (placement is by load across hosts). */
  readonly hostUrl: string;
  /** Epoch ms of the last call; the provider's reaper disposes sandboxes idle for too long. */
  lastActivity: number;
  /** Calls (exec, readFile, writeFile) still running; the reaper never disposes a busy sandbox. */
  private inFlight = 0;
  private shell: ShellSandbox | undefined;
  /** False once the current exec stream ended (in a pool: the container died). */
  private streamOpen = false;
  private disposed: Promise<void> | undefined;
  private deadError: SandboxError | undefined;
  private readonly init: DockerSandboxInit;
  private readonly now: () => number;
  /** The environment every shell session exports (given to spawned processes too). */
  private sessionEnv: Record<string, string> = {};

  constructor(init: DockerSandboxInit) {
    this.init = init;
    this.id = init.id;
    this.workdir = init.workdir;
    this.tempDir = init.tempDir;
    this.container = init.container;
    this.hostUrl = init.hostUrl;
    this.now = init.now ?? Date.now;
    this.lastActivity = this.now();
  }

  /** True while a command or file transfer is running (a long command is not idleness). */
  get busy(): boolean {
    return this.inFlight > 0;
  }

  get isDisposed(): boolean {
    return this.disposed !== undefined;
  }

  /** False once disposed, or once the container or its shell session has gone away. */
  get alive(): boolean {
    return (
      this.disposed === undefined &&
      this.deadError === undefined &&
      this.shell !== undefined &&
      this.streamOpen
    );
  }

  /** Start the persistent shell (one hijacked exec) so the first command pays no set-up. */
  async open(env: Record<string, string>): Promise<void> {
    this.sessionEnv = env;
    this.shell = createShellSandbox({
      id: this.id,
      backend: 'docker',
      workdir: this.workdir,
      tempDir: this.tempDir,
      isolated: true,
      env,
      ...(this.init.maxOutputBytes !== undefined ? { maxOutputBytes: this.init.maxOutputBytes } : {}),
      openTransport: () => this.openTransport(),
      readFile: (path, options) => this.archiveRead(path, options),
      writeFile: (path, data, options) => this.archiveWrite(path, data, options),
      dispose: () => this.init.onDispose(this),
    });
    const ready = await this.shell.exec(`mkdir -p -- '${this.tempDir.replace(/'/g, `'\\''`)}'`);
    if (ready.exitCode !== 0) {
      throw new SandboxError({
        message: `Sandbox ${this.id}: could not create ${this.tempDir}: ${ready.output.trim()}`,
        sandboxId: this.id,
      });
    }
  }

  /** One `docker exec` of the shell bootstrap with stdin attached; stdout/stderr demultiplexed. */
  private async openTransport(): Promise<ShellTransport> {
    if (this.deadError) throw this.deadError;
    let stream: import('node:stream').Duplex;
    try {
      const exec = await this.container.exec({
        Cmd: [...SHELL_BOOTSTRAP],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        WorkingDir: '/',
      });
      stream = (await exec.start({ hijack: true, stdin: true })) as unknown as import('node:stream').Duplex;
    } catch (error) {
      // Typically 409 (container not running) or 404 (removed): the container is gone for good.
      this.markDead(`the container is gone (${(error as Error).message})`);
      throw this.deadError;
    }
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    this.init.docker.modem.demuxStream(stream, stdout, stderr);
    this.streamOpen = true;
    const ended = () => {
      this.streamOpen = false;
      stdout.end();
      stderr.end();
    };
    stream.on('end', ended);
    stream.on('close', ended);
    stream.on('error', (error: Error) => {
      stdout.destroy(error);
      stderr.destroy(error);
    });
    return {
      stdin: stream,
      stdout,
      stderr,
      close: () => {
        stream.end();
        stream.destroy();
      },
    };
  }

  private assertUsable(): void {
    if (this.deadError) throw this.deadError;
    if (this.disposed)
      throw new SandboxError({ message: `Sandbox ${this.id} was disposed`, sandboxId: this.id });
  }

  /**
   * Marks the sandbox dead when its container is no longer running (or no longer exists). The
   * exec stream can end a moment before Docker reports a killed container as stopped, so a
   * container still "running" is asked again a few times (at most about half a second).
   */
  private async checkContainer(): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      if (attempt > 0) await sleep(100);
      try {
        const info = await this.container.inspect();
        if (!info.State?.Running) {
          this.markDead(`the container is gone (${info.State?.Status ?? 'not running'})`);
          return;
        }
      } catch (error) {
        if (statusOf(error) === 404) this.markDead('the container is gone (removed)');
        return;
      }
    }
  }

  /** Mark the sandbox as dead (container gone); every later call fails with this error. */
  markDead(reason: string): void {
    if (this.deadError) return;
    this.deadError = new SandboxError({ message: `Sandbox ${this.id}: ${reason}`, sandboxId: this.id });
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (typeof command !== 'string') {
      throw new InvalidArgumentError({
        argument: 'command',
        value: command,
        message: `Invalid command: expected string, got ${typeof command}`,
      });
    }
    this.assertUsable();
    this.lastActivity = this.now();
    const shell = this.shell;
    if (!shell)
      throw new SandboxError({ message: `Sandbox ${this.id} has no shell session`, sandboxId: this.id });
    this.inFlight += 1;
    try {
      return await shell.exec(command, options);
    } catch (error) {
      // The shell went away mid-command: find out at once whether the container went with it, so
      // callers (the terminal tool's retries) learn the sandbox is dead instead of trying again.
      if (!this.deadError && !this.disposed) await this.checkContainer();
      throw this.wrap(error, `exec failed`);
    } finally {
      this.inFlight -= 1;
      this.lastActivity = this.now();
    }
  }

  private resolvePath(path: string): string {
    if (typeof path !== 'string' || path === '')
      throw new InvalidArgumentError({
        argument: 'path',
        value: path,
        message: 'File path must be a non-empty string',
      });
    return posix.resolve(this.workdir, path);
  }

  private wrap(error: unknown, what: string): unknown {
    if (InvalidArgumentError.isInstance(error)) return error;
    if (this.deadError) return this.deadError;
    if (SandboxError.isInstance(error)) return error;
    return new SandboxError({
      message: `Sandbox ${this.id}: ${what}: ${(error as Error)?.message ?? String(error)}`,
      sandboxId: this.id,
      cause: error,
    });
  }

  async readFile(path: string, options: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    this.assertUsable();
    this.lastActivity = this.now();
    this.inFlight += 1;
    try {
      return await this.archiveRead(this.resolvePath(path), options, path);
    } finally {
      this.inFlight -= 1;
      this.lastActivity = this.now();
    }
  }

  private async archiveRead(
    absolutePath: string,
    options: { signal?: AbortSignal },
    path = absolutePath,
  ): Promise<Uint8Array> {
    let target = absolutePath;
    // Follow symlinks by hand: the archive API returns the link itself, not its target.
    for (let hops = 0; hops < 16; hops += 1) {
      options.signal?.throwIfAborted();
      let archive: Buffer;
      try {
        archive = await readAll(await this.container.getArchive({ path: target }));
      } catch (error) {
        if (statusOf(error) === 404) {
          throw Object.assign(new NoSuchEntryError({ kind: 'file', id: path, available: [] }), {
            message: `No such file in sandbox ${this.id}: ${path}`,
          });
        }
        throw this.wrap(error, `readFile ${path}`);
      }
      const entries = await parseTar(archive, `archive of ${path} from sandbox ${this.id}`);
      const entry = entries[0];
      if (!entry)
        throw new SandboxError({
          message: `Sandbox ${this.id}: empty archive for ${path}`,
          sandboxId: this.id,
        });
      if (entry.type === 'directory')
        throw new InvalidArgumentError({
          argument: 'path',
          value: path,
          message: `${path} is a directory, not a file`,
        });
      if (entry.type === 'symlink') {
        target = posix.resolve(posix.dirname(target), entry.linkname);
        continue;
      }
      return new Uint8Array(entry.data.buffer, entry.data.byteOffset, entry.data.byteLength);
    }
    throw new SandboxError({
      message: `Sandbox ${this.id}: too many symlinks resolving ${path}`,
      sandboxId: this.id,
    });
  }

  async writeFile(
    path: string,
    data: Uint8Array | string,
    options: { signal?: AbortSignal; mode?: number } = {},
  ): Promise<void> {
    this.assertUsable();
    this.lastActivity = this.now();
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    this.inFlight += 1;
    try {
      return await this.archiveWrite(this.resolvePath(path), bytes, options, path);
    } finally {
      this.inFlight -= 1;
      this.lastActivity = this.now();
    }
  }

  private async archiveWrite(
    target: string,
    bytes: Uint8Array,
    options: { signal?: AbortSignal; mode?: number },
    path = target,
  ): Promise<void> {
    const archive = await createTar([
      { path: posix.basename(target), data: bytes, mode: options.mode ?? 0o644 },
    ]);
    const directory = posix.dirname(target);
    const put = async () => {
      options.signal?.throwIfAborted();
      await readAll(
        (await this.container.putArchive(archive, { path: directory })) as unknown as NodeJS.ReadableStream,
      );
    };
    try {
      await put();
    } catch (error) {
      if (statusOf(error) !== 404) throw this.wrap(error, `writeFile ${path}`);
      // The parent directory does not exist yet: create it (one exec) and retry once.
      try {
        const exec = await this.container.exec({
          Cmd: ['mkdir', '-p', '--', directory],
          AttachStdout: true,
          AttachStderr: true,
        });
        await readAll(await exec.start({ hijack: true, stdin: false }));
        await put();
      } catch (retryError) {
        throw this.wrap(retryError, `writeFile ${path}`);
      }
    }
  }

  /**
   * A process with streaming stdio: its own `docker exec` (stdin attached, stdout/stderr
   * demultiplexed). A small sh wrapper records its pid in the temp dir so `kill()` can end it
   * with a second exec; removing the container (dispose) ends it in any case.
   */
  async spawn(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<SpawnedProcess> {
    this.assertUsable();
    this.lastActivity = this.now();
    const pidFile = `${this.tempDir}/spawn-${randomBytes(6).toString('hex')}.pid`;
    const env = { ...this.sessionEnv, ...options.env };
    let exec: Dockerode.Exec;
    let stream: import('node:stream').Duplex;
    try {
      exec = await this.container.exec({
        Cmd: ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"', pidFile, command, ...args],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        WorkingDir: options.cwd === undefined ? this.workdir : posix.resolve(this.workdir, options.cwd),
        Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
      });
      stream = (await exec.start({ hijack: true, stdin: true })) as unknown as import('node:stream').Duplex;
    } catch (error) {
      throw this.wrap(error, `could not start ${command}`);
    }
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    this.init.docker.modem.demuxStream(stream, stdout, stderr);
    stream.on('error', () => undefined);
    const exited = new Promise<SpawnedExit>((resolve) => {
      let settled = false;
      const ended = () => {
        if (settled) return;
        settled = true;
        stdout.end();
        stderr.end();
        exec
          .inspect()
          .then((info) => resolve({ exitCode: info.ExitCode ?? null, signal: null }))
          .catch(() => resolve({ exitCode: null, signal: 'SIGKILL' }));
      };
      stream.on('end', ended);
      stream.on('close', ended);
    });
    let ended = false;
    void exited.then(() => {
      ended = true;
    });
    const kill = async () => {
      if (!ended && !this.disposed && !this.deadError) {
        try {
          const killer = await this.container.exec({
            Cmd: ['/bin/sh', '-c', 'kill -9 "$(cat "$0")" 2>/dev/null; rm -f "$0"', pidFile],
            AttachStdout: true,
            AttachStderr: true,
          });
          await readAll(await killer.start({ hijack: true, stdin: false }));
        } catch {
          // The container is gone: so is the process.
        }
      }
      stream.destroy();
      await exited;
    };
    const onAbort = () => void kill();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    void exited.then(() => options.signal?.removeEventListener('abort', onAbort));
    const stdin = new Writable({
      write: (chunk, _encoding, callback) => {
        stream.write(chunk, callback);
      },
      final: (callback) => {
        stream.end();
        callback();
      },
    });
    stdin.on('error', () => undefined);
    return {
      stdin: Writable.toWeb(stdin) as WritableStream<Uint8Array>,
      stdout: Readable.toWeb(stdout) as ReadableStream<Uint8Array>,
      stderr: Readable.toWeb(stderr) as ReadableStream<Uint8Array>,
      exited,
      kill,
    };
  }

  dispose(): Promise<void> {
    // The shell sandbox closes the session, then calls onDispose (which removes the container).
    this.disposed ??= this.shell ? this.shell.dispose() : this.init.onDispose(this);
    return this.disposed;
  }
}
