// A persistent shell inside a container, driven over one hijacked `docker exec` stream, so a
// command costs a write and a read instead of a `docker exec` round trip. Each command runs in
// its own session (setsid) so a timeout can kill its whole process group; cwd and exported
// variables persist through a small state directory the runner updates after every command.
import { randomBytes } from 'node:crypto';
import type { Duplex, Readable } from 'node:stream';
import type { ExecOptions, ExecResult } from '@shears/core';
import { SandboxError } from '@shears/core';

/** Bytes kept per stream before the middle is dropped (40% head / 60% tail). */
export const DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

export interface ShellStreams {
  /** Writes go to the shell's stdin. */
  input: Duplex;
  stdout: Readable;
  stderr: Readable;
}

export interface DockerShellOptions {
  sandboxId: string;
  /** State directory inside the container (env and cwd snapshots). */
  stateDir: string;
  /** Shell binary that runs each command. */
  shell: string;
  maxOutputBytes?: number;
  /** Kill every process in a group inside the container (a separate exec, used on timeout/abort). */
  killGroup: (pgid: number) => Promise<void>;
  /** Write stdin bytes for a command to a file inside the container. */
  writeStdinFile: (path: string, data: Uint8Array) => Promise<void>;
  now?: () => number;
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** How long a killed command may take to report back before the session is declared dead. */
const KILL_GRACE_MS = 10_000;

const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Head + tail byte buffer: memory stays bounded however much a command prints. */
class CappedBytes {
  private head: Buffer[] = [];
  private headSize = 0;
  private tail: Buffer[] = [];
  private tailSize = 0;
  omitted = 0;
  constructor(
    private readonly headLimit: number,
    private readonly tailLimit: number,
  ) {}
  push(chunk: Buffer): void {
    if (this.headSize < this.headLimit) {
      const take = Math.min(chunk.length, this.headLimit - this.headSize);
      this.head.push(chunk.subarray(0, take));
      this.headSize += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    this.tail.push(chunk);
    this.tailSize += chunk.length;
    while (this.tailSize > this.tailLimit && this.tail.length > 0) {
      const first = this.tail[0] as Buffer;
      const excess = this.tailSize - this.tailLimit;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailSize -= first.length;
        this.omitted += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailSize -= excess;
        this.omitted += excess;
      }
    }
  }
  toBuffer(): Buffer {
    const body = Buffer.concat(this.head);
    if (this.omitted === 0) return Buffer.concat([body, ...this.tail]);
    const note = Buffer.from(`\n\n... [OUTPUT TRUNCATED - ${this.omitted} bytes omitted] ...\n\n`);
    return Buffer.concat([body, note, ...this.tail]);
  }
  /** The last `count` bytes seen (for marker detection), without copying the whole buffer. */
  last(count: number): Buffer {
    const picked: Buffer[] = [];
    let size = 0;
    for (const list of [this.tail, this.head]) {
      for (let index = list.length - 1; index >= 0 && size < count; index -= 1) {
        const chunk = list[index] as Buffer;
        const take = Math.min(chunk.length, count - size);
        picked.unshift(chunk.subarray(chunk.length - take));
        size += take;
      }
    }
    return Buffer.concat(picked);
  }
}

interface Pending {
  command: string;
  options: ExecOptions;
  resolve: (result: ExecResult) => void;
  reject: (error: unknown) => void;
}

interface Running extends Pending {
  id: string;
  startedAt: number;
  stdout: CappedBytes;
  stderr: CappedBytes;
  output: CappedBytes;
  pid?: number;
  exitCode?: number;
  stdoutDone: boolean;
  stderrDone: boolean;
  timedOut: boolean;
  aborted: boolean;
  timer?: NodeJS.Timeout;
  onAbort?: () => void;
}

/** Runs commands one at a time over one shell; further calls queue. */
export class DockerShell {
  private readonly token = randomBytes(8).toString('hex');
  private readonly queue: Pending[] = [];
  private running: Running | undefined;
  private counter = 0;
  private closedError: SandboxError | undefined;
  private readonly maxOutputBytes: number;
  private readonly now: () => number;

  constructor(
    private readonly streams: ShellStreams,
    private readonly options: DockerShellOptions,
  ) {
    this.maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    this.now = options.now ?? Date.now;
    streams.stdout.on('data', (chunk: Buffer) => this.onData('stdout', chunk));
    streams.stderr.on('data', (chunk: Buffer) => this.onData('stderr', chunk));
    const onGone = (reason: string) => () =>
      this.fail(
        new SandboxError({
          message: `Sandbox ${options.sandboxId}: shell session ended (${reason}); the container was stopped or removed`,
          sandboxId: options.sandboxId,
        }),
      );
    streams.input.on('end', onGone('stream ended'));
    streams.input.on('close', onGone('stream closed'));
    streams.input.on('error', (error: Error) =>
      this.fail(
        new SandboxError({
          message: `Sandbox ${options.sandboxId}: shell stream failed: ${error.message}`,
          sandboxId: options.sandboxId,
          cause: error,
        }),
      ),
    );
  }

  get busy(): boolean {
    return this.running !== undefined || this.queue.length > 0;
  }

  get closed(): boolean {
    return this.closedError !== undefined;
  }

  /** Write the initial state: cwd, exported variables. Resolves once the shell answered. */
  async init(workdir: string, env: Record<string, string>): Promise<void> {
    const exports = Object.entries(env)
      .map(([key, value]) => {
        if (!NAME_PATTERN.test(key))
          throw new SandboxError({
            message: `Invalid environment variable name "${key}"`,
            sandboxId: this.options.sandboxId,
          });
        return `export ${key}=${quote(value)}; `;
      })
      .join('');
    const dir = quote(this.options.stateDir);
    const setup = `mkdir -p ${dir} ${quote(workdir)} && cd ${quote(workdir)} && ${exports}export -p > ${dir}/env && pwd > ${dir}/cwd`;
    const result = await this.exec(setup, { raw: true } as ExecOptions);
    if (result.exitCode !== 0) {
      throw new SandboxError({
        message: `Sandbox ${this.options.sandboxId}: shell set-up failed (exit ${result.exitCode}): ${result.output.trim()}`,
        sandboxId: this.options.sandboxId,
      });
    }
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.closedError) return Promise.reject(this.closedError);
    return new Promise<ExecResult>((resolve, reject) => {
      this.queue.push({ command, options, resolve, reject });
      this.pump();
    });
  }

  /** Reject the running and queued commands; later calls fail with the same error. */
  fail(error: SandboxError): void {
    if (this.closedError) return;
    this.closedError = error;
    const running = this.running;
    this.running = undefined;
    if (running) {
      this.clearTimers(running);
      running.reject(error);
    }
    for (const pending of this.queue.splice(0)) pending.reject(error);
    this.streams.input.destroy();
  }

  private clearTimers(running: Running): void {
    if (running.timer) clearTimeout(running.timer);
    if (running.onAbort) running.options.signal?.removeEventListener('abort', running.onAbort);
  }

  private pump(): void {
    if (this.running || this.closedError) return;
    const next = this.queue.shift();
    if (!next) return;
    if (next.options.signal?.aborted) {
      next.resolve(
        this.result(next, {
          exitCode: 130,
          output: '[Command interrupted]',
          stdout: '',
          stderr: '',
          timedOut: false,
          startedAt: this.now(),
        }),
      );
      this.pump();
      return;
    }
    void this.start(next).catch((error) => {
      const running = this.running;
      this.running = undefined;
      if (running) this.clearTimers(running);
      next.reject(error);
      this.pump();
    });
  }

  private async start(pending: Pending): Promise<void> {
    this.counter += 1;
    const id = `${this.counter}`;
    const headBytes = Math.floor(this.maxOutputBytes * 0.4);
    const running: Running = {
      ...pending,
      id,
      startedAt: this.now(),
      stdout: new CappedBytes(headBytes, this.maxOutputBytes - headBytes),
      stderr: new CappedBytes(headBytes, this.maxOutputBytes - headBytes),
      output: new CappedBytes(headBytes, this.maxOutputBytes - headBytes),
      stdoutDone: false,
      stderrDone: false,
      timedOut: false,
      aborted: false,
    };
    this.running = running;
    let stdinPath: string | undefined;
    if (pending.options.stdin !== undefined) {
      stdinPath = `${this.options.stateDir}/stdin-${id}`;
      const data =
        typeof pending.options.stdin === 'string'
          ? new TextEncoder().encode(pending.options.stdin)
          : pending.options.stdin;
      await this.options.writeStdinFile(stdinPath, data);
      if (this.running !== running) return; // failed meanwhile
    }
    const script = this.buildScript(running, stdinPath);
    if (pending.options.timeoutMs !== undefined && pending.options.timeoutMs > 0) {
      running.timer = setTimeout(() => this.interrupt(running, 'timeout'), pending.options.timeoutMs);
    }
    if (pending.options.signal) {
      running.onAbort = () => this.interrupt(running, 'abort');
      pending.options.signal.addEventListener('abort', running.onAbort, { once: true });
    }
    this.streams.input.write(script);
  }

  private interrupt(running: Running, reason: 'timeout' | 'abort'): void {
    if (this.running !== running) return;
    if (reason === 'timeout') running.timedOut = true;
    else running.aborted = true;
    const kill = () => {
      if (running.pid === undefined || this.running !== running) return;
      // Best effort: with a timeout the in-shell watchdog kills the group anyway, and an exec can
      // fail when the command exhausted the pids limit (a fork bomb). The backstop below decides.
      this.options.killGroup(running.pid).catch(() => undefined);
    };
    if (running.pid !== undefined) kill();
    else {
      // The start marker has not arrived yet; retry shortly.
      const retry = setInterval(() => {
        if (this.running !== running) clearInterval(retry);
        else if (running.pid !== undefined) {
          clearInterval(retry);
          kill();
        }
      }, 20);
      retry.unref?.();
    }
    const backstop = setTimeout(() => {
      if (this.running !== running) return;
      this.fail(
        new SandboxError({
          message: `Sandbox ${this.options.sandboxId}: a ${reason === 'timeout' ? 'timed-out' : 'cancelled'} command could not be killed within ${KILL_GRACE_MS} ms`,
          sandboxId: this.options.sandboxId,
        }),
      );
    }, KILL_GRACE_MS);
    backstop.unref?.();
  }

  private buildScript(running: Running, stdinPath: string | undefined): string {
    const { options, command } = running;
    const marker = `${this.token}${running.id}`;
    const raw = (options as { raw?: boolean }).raw === true;
    // The runner: restore state, apply per-command overrides, run, save state. Only builtins and
    // redirections here, so a command costs one fork+exec (setsid) beyond the command itself.
    const lines: string[] = [];
    if (!raw) {
      lines.push(
        '__d=$1; . "$__d/env" >/dev/null 2>&1; IFS= read -r __cwd < "$__d/cwd"; cd "$__cwd" 2>/dev/null; unset __cwd',
      );
      if (options.cwd !== undefined) lines.push(`cd -- ${quote(options.cwd)} || exit 126`);
      for (const [key, value] of Object.entries(options.env ?? {})) {
        if (!NAME_PATTERN.test(key))
          throw new SandboxError({
            message: `Invalid environment variable name "${key}" in exec options`,
            sandboxId: this.options.sandboxId,
          });
        lines.push(
          `__shears_had_${key}=\${${key}+1}; __shears_old_${key}=\${${key}-}; export ${key}=${quote(value)}`,
        );
      }
    }
    lines.push('eval "$2"');
    lines.push('__ec=$?');
    if (!raw) {
      for (const key of Object.keys(options.env ?? {})) {
        lines.push(
          `if [ -n "$__shears_had_${key}" ]; then export ${key}="$__shears_old_${key}"; else unset ${key}; fi; unset __shears_had_${key} __shears_old_${key}`,
        );
      }
      lines.push('unset __d; export -p > "$1/env" 2>/dev/null');
      if (options.cwd === undefined) lines.push('pwd > "$1/cwd" 2>/dev/null');
    }
    lines.push('exit $__ec');
    const runner = lines.join('\n');
    const input = stdinPath ? quote(stdinPath) : '/dev/null';
    const timeoutMs = options.timeoutMs;
    const watchdog =
      timeoutMs !== undefined && timeoutMs > 0 ? (Math.ceil(timeoutMs / 10) / 100).toFixed(2) : undefined;
    return [
      `__shears_cmd=${quote(command)}`,
      `setsid ${this.options.shell} -c ${quote(runner)} sh ${quote(this.options.stateDir)} "$__shears_cmd" < ${input} &`,
      '__shears_pid=$!',
      // Watchdog started before the command can exhaust the pids limit; `kill` is a builtin, so it
      // needs no fork when the deadline comes. It runs in its own session so it can be cleaned up.
      watchdog
        ? `setsid ${this.options.shell} -c ${quote(`sleep ${watchdog}; kill -KILL -- -$1`)} sh "$__shears_pid" </dev/null >/dev/null 2>&1 & __shears_wd=$!`
        : ':',
      `printf '\\036S${marker}:%s\\036' "$__shears_pid" >&2`,
      'wait "$__shears_pid"; __shears_ec=$?',
      watchdog ? 'kill -KILL -- -"$__shears_wd" 2>/dev/null; wait "$__shears_wd" 2>/dev/null' : ':',
      stdinPath ? `rm -f ${quote(stdinPath)}` : ':',
      `printf '\\036E${marker}:%s\\036' "$__shears_ec"; printf '\\036E${marker}\\036' >&2`,
      '',
    ].join('\n');
  }

  private onData(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    const running = this.running;
    if (!running) return; // output of a background process between commands
    running[stream].push(chunk);
    running.output.push(chunk);
    const marker = `${this.token}${running.id}`;
    if (stream === 'stderr' && running.pid === undefined) {
      const text = running.stderr.last(4096).toString('latin1');
      const match = new RegExp(`\\x1eS${marker}:(\\d+)\\x1e`).exec(text);
      if (match) running.pid = Number(match[1]);
    }
    const tail = running[stream].last(128).toString('latin1');
    if (stream === 'stdout' && !running.stdoutDone) {
      const match = new RegExp(`\\x1eE${marker}:(\\d+)\\x1e$`).exec(tail);
      if (match) {
        running.stdoutDone = true;
        running.exitCode = Number(match[1]);
      }
    }
    if (stream === 'stderr' && !running.stderrDone && tail.endsWith(`\x1eE${marker}\x1e`))
      running.stderrDone = true;
    if (running.stdoutDone && running.stderrDone) this.finish(running);
  }

  private finish(running: Running): void {
    this.running = undefined;
    this.clearTimers(running);
    const marker = `${this.token}${running.id}`;
    const strip = new RegExp(`\\x1e[SE]${marker}(?::\\d+)?\\x1e`, 'g');
    const decode = (bytes: CappedBytes) => new TextDecoder().decode(bytes.toBuffer()).replace(strip, '');
    let exitCode = running.exitCode ?? -1;
    let output = decode(running.output);
    if (running.timedOut) {
      exitCode = 124;
      const seconds = (running.options.timeoutMs ?? 0) / 1000;
      output = `${output}${output ? '\n' : ''}[Command timed out after ${seconds}s]`;
    } else if (running.aborted) {
      exitCode = 130;
      output = `${output}${output ? '\n' : ''}[Command interrupted]`;
    }
    running.resolve(
      this.result(running, {
        exitCode,
        output,
        stdout: decode(running.stdout),
        stderr: decode(running.stderr),
        timedOut: running.timedOut,
        startedAt: running.startedAt,
      }),
    );
    this.pump();
  }

  private result(
    _pending: Pending,
    values: {
      exitCode: number;
      output: string;
      stdout: string;
      stderr: string;
      timedOut: boolean;
      startedAt: number;
    },
  ): ExecResult {
    return {
      exitCode: values.exitCode,
      output: values.output,
      stdout: values.stdout,
      stderr: values.stderr,
      timedOut: values.timedOut,
      durationMs: this.now() - values.startedAt,
    };
  }
}
