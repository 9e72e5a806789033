// A persistent shell session over any duplex byte streams: one long-lived `bash` (or `sh` where
// there is no bash, e.g. busybox images) runs one command at a time, so a command costs no process
// spawn or channel round trip. Local (child_process), SSH (ssh2 exec channel) and Docker
// (`docker exec` attach stream) sandboxes all drive it through the same `ShellTransport`.
//
// Wire protocol (everything the session writes goes to the shell's stdin as shell script):
//
// 1. The transport starts `SHELL_BOOTSTRAP` (`sh -c '<exec bash, else exec sh>'`), so bash reads
//    its script from stdin. The session writes a prologue that moves the shell's own stderr to
//    fd 3 and sends fd 2 to /dev/null (job-control chatter such as "Terminated" never reaches the
//    output), creates a private state directory (`mktemp -d`, or takes the empty one the
//    transport made: `ShellTransport.stateDir`), picks a mode — `job` (bash with
//    `set -m`: each command is a job in its own process group), `setsid` (sh + setsid(1)) or
//    `plain` (no process groups; a timeout kills only the command's shell) — and prints
//    `__SHEARS_<nonce>_READY <mode> <dir>__\n` on stdout.
// 2. Each command N is one line: `__shears_x N '<job script>' '<timeout seconds>' '<stdin file>'`.
//    The job runs in a subshell (own process group), stdin from /dev/null or the stdin file,
//    stdout to the shell's stdout, stderr to fd 3. Its first action prints the start markers
//    `__SHEARS_<nonce>_S<N> <pgid>__\n` (stdout) and `__SHEARS_<nonce>_S<N>__\n` (stderr); bytes
//    before them are leftovers of earlier background processes and are dropped.
// 3. The job `eval`s the command. On exit (normal, `exit n`, or error) an EXIT trap writes
//    `export -p` and `pwd` to the state directory; the parent shell sources them after `wait`,
//    which is how exported variables and the cwd persist while the command itself cannot kill
//    the session (`exit 3` ends only the job). Unexported variables and `unset` do not persist.
// 4. With a timeout, a watchdog (own process group) sleeps, touches a flag file, sends SIGTERM to
//    the job's process group, then SIGKILL a second later: children die with the command.
// 5. The parent prints `__SHEARS_<nonce>_E<N>__\n` on stderr and
//    `__SHEARS_<nonce>_E<N> <exit code> <timed out 0|1>__\n` on stdout. The command's output is
//    everything between the start and end markers of each stream. The nonce is random per
//    session, so command output cannot forge a marker by accident.
//
// Output is kept as bytes, capped (40% head / 60% tail) and decoded as UTF-8 with replacement
// characters at the end, so binary and invalid UTF-8 output are safe. Commands are serialised:
// concurrent `exec` calls queue.
import { randomBytes } from 'node:crypto';
import { SandboxError } from '@shears/core';

/** Starts the best available shell reading its script from stdin (pass to `sh -c`). */
export const SHELL_BOOTSTRAP_SCRIPT =
  'if command -v bash >/dev/null 2>&1; then exec bash --noprofile --norc; fi; exec sh';
/** argv form of the bootstrap, for child_process and `docker exec`. */
export const SHELL_BOOTSTRAP: readonly string[] = ['sh', '-c', SHELL_BOOTSTRAP_SCRIPT];
/** Single-string form, for transports that take a command line (ssh exec channels). */
export const SHELL_BOOTSTRAP_COMMAND = `sh -c '${SHELL_BOOTSTRAP_SCRIPT}'`;

/** The default output cap per stream, in bytes. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1_000_000;

/** A readable byte stream: Node streams, ssh2 channels and docker attach streams all fit. */
export interface ShellReadable {
  on(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** The byte streams of a started shell process plus a way to stop it. */
export interface ShellTransport {
  stdin: { write(chunk: string | Uint8Array): unknown };
  stdout: ShellReadable;
  /** Absent when the transport merges stderr into stdout (output is then not separated). */
  stderr?: ShellReadable;
  /** Stop the shell and everything it started, as far as the transport can. */
  close(): void | Promise<void>;
  /**
   * Sends a signal to a process group inside the sandbox (out of band: a direct kill, a second
   * ssh channel, a `docker exec kill`). With it, timeouts and aborts are enforced from outside
   * and cost nothing per command; without it, an in-shell watchdog process enforces timeouts and
   * an abort ends the whole session.
   */
  killProcessGroup?(pgid: number, signal: 'SIGTERM' | 'SIGKILL'): void | Promise<void>;
  /**
   * An empty private directory the transport made for this session's state. The session then
   * starts no `mktemp` process and leaves the directory's removal to the backend; without it, the
   * shell makes one with `mktemp -d` and removes it when it exits.
   */
  stateDir?: string;
}

export type ShellMode = 'job' | 'setsid' | 'plain';

export interface ShellSessionOptions {
  transport: ShellTransport;
  /** Cap per collected stream (stdout, stderr, output), 40% head / 60% tail. */
  maxOutputBytes?: number;
  /** How long to wait for the shell to report ready. Default 20 s. */
  startupTimeoutMs?: number;
  /**
   * Extra time past a command's timeout before the session gives up on the in-shell watchdog and
   * declares itself dead. Default 10 s.
   */
  watchdogGraceMs?: number;
  /** Random source for the marker nonce (tests). */
  randomBytes?: (size: number) => Uint8Array;
  /** Runs once the session is known to be dead (shell exited, stream ended, hard timeout). */
  onClose?: (reason: string) => void;
}

export interface ShellExecOptions {
  timeoutMs?: number;
  /** Directory for this command only (absolute, or relative to the session cwd). */
  cwd?: string;
  /** Environment for this command only. */
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  /**
   * A file inside the sandbox to use as stdin instead of `stdin` (removed afterwards). Large
   * inputs go this way: bash reads its script from a pipe one byte at a time.
   */
  stdinPath?: string;
  signal?: AbortSignal;
}

export interface ShellExecResult {
  exitCode: number;
  output: string;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** The command was cancelled through its AbortSignal (exit code 130). */
  interrupted: boolean;
  durationMs: number;
}

export interface ShellSession {
  readonly mode: ShellMode;
  /** The session's private state directory inside the sandbox. */
  readonly stateDir: string;
  readonly alive: boolean;
  exec(command: string, options?: ShellExecOptions): Promise<ShellExecResult>;
  close(): Promise<void>;
}

/** Raised when a command never started because the session was already dead; safe to retry. */
export class ShellSessionClosedError extends SandboxError {
  readonly notStarted: boolean;
  constructor(message: string, notStarted: boolean, cause?: unknown) {
    super({ message, cause });
    this.notStarted = notStarted;
  }
}

/** Quotes a string for POSIX sh (single quotes; embedded quotes become '\''). */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The timeout message of hermes-agent (`[Command timed out after 5s]`). */
export function formatTimeoutSeconds(timeoutMs: number): string {
  const seconds = Math.round(timeoutMs) / 1000;
  return `${Number.isInteger(seconds) ? seconds : Number(seconds.toFixed(3))}`;
}

/** Keeps the first 40% and last 60% of a byte stream without holding all of it. */
export class CappedBytes {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  total = 0;

  constructor(readonly maxBytes: number) {
    this.headLimit = Math.floor(maxBytes * 0.4);
    this.tailLimit = maxBytes - this.headLimit;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    let rest = chunk;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(rest.length, this.headLimit - this.headBytes);
      this.head.push(rest.subarray(0, take));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(rest);
    this.tailBytes += rest.length;
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= this.tailLimit) {
      this.tailBytes -= this.tail.shift()!.length;
    }
  }

  /** Decoded text; invalid UTF-8 becomes U+FFFD; a truncation notice replaces the middle. */
  text(): string {
    const decoder = () => new TextDecoder('utf-8', { fatal: false });
    if (this.total <= this.maxBytes) return decoder().decode(Buffer.concat([...this.head, ...this.tail]));
    const tail = Buffer.concat(this.tail);
    const kept = tail.subarray(Math.max(0, tail.length - this.tailLimit));
    const omitted = this.total - this.headBytes - kept.length;
    return (
      decoder().decode(Buffer.concat(this.head)) +
      `\n\n... [OUTPUT TRUNCATED - ${omitted} bytes omitted out of ${this.total} total] ...\n\n` +
      decoder().decode(kept)
    );
  }
}

type StreamPhase = 'start' | 'run' | 'done';

interface RunningCommand {
  seq: number;
  phases: { stdout: StreamPhase; stderr: StreamPhase };
  stdout: CappedBytes;
  stderr: CappedBytes;
  output: CappedBytes;
  pgid: number | undefined;
  onPgid?: (pgid: number) => void;
  exitCode: number | undefined;
  timedOut: boolean;
  settle: (error?: Error) => void;
}

const PROLOGUE = (nonce: string, merged: boolean, stateDir: string | undefined) => `exec 3>&2 2>/dev/null
${
  stateDir === undefined
    ? `__shears_d=$(mktemp -d 2>/dev/null) || { __shears_d=/tmp/shears-shell-$$; mkdir -p "$__shears_d"; }
trap 'rm -rf "$__shears_d"' EXIT`
    : `__shears_d=${shellQuote(stateDir)}`
}
export PWD
if [ -n "$BASH_VERSION" ] && set -m; then __shears_m=job; elif command -v setsid >/dev/null 2>&1; then __shears_m=setsid; else __shears_m=plain; fi
__shears_x() {
  if [ "$__shears_m" = setsid ]; then setsid sh -c "$2" <"$4" 2>&3 3>&- & else ( eval "$2" ) <"$4" 2>&3 3>&- & fi
  __shears_p=$!
  __shears_w=
  if [ -n "$3" ]; then
    __shears_k="sleep $3; : > '$__shears_d/t$1'; kill -TERM -$__shears_p || kill -TERM $__shears_p; sleep 1; kill -KILL -$__shears_p || kill -KILL $__shears_p"
    if [ "$__shears_m" = setsid ]; then setsid sh -c "$__shears_k" </dev/null >/dev/null 2>&1 3>&- & else ( eval "$__shears_k" ) </dev/null >/dev/null 2>&1 3>&- & fi
    __shears_w=$!
  fi
  wait $__shears_p
  __shears_c=$?
  __shears_t=0
  if [ -n "$__shears_w" ]; then
    kill -KILL -$__shears_w || kill -KILL $__shears_w; wait $__shears_w
    [ -e "$__shears_d/t$1" ] && __shears_t=1 && rm -f "$__shears_d/t$1"
  fi
  [ "$4" = /dev/null ] || rm -f "$4"
}
__shears_y() {
  cd -- "$PWD"
${merged ? '' : `  printf '__SHEARS_${nonce}_E%s__\\n' "$1" >&3\n`}  printf '__SHEARS_${nonce}_E%s %s %s__\\n' "$1" "$__shears_c" "$__shears_t"
}
printf '__SHEARS_${nonce}_READY %s %s__\\n' "$__shears_m" "$__shears_d"
`;

/** Builds the job script for one command (runs in a subshell or `sh -c`). */
function jobScript(
  nonce: string,
  seq: number,
  command: string,
  options: ShellExecOptions,
  stateDir: string,
  merged: boolean,
): string {
  const lines: string[] = [
    `printf '__SHEARS_${nonce}_S${seq} %s__\\n' "\${BASHPID:-$$}"${merged ? '' : `; printf '__SHEARS_${nonce}_S${seq}__\\n' >&2`}`,
  ];
  const restore: string[] = [];
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (!ENV_NAME.test(name)) {
      throw new SandboxError({
        message: `Invalid environment variable name ${JSON.stringify(name)} (expected [A-Za-z_][A-Za-z0-9_]*)`,
      });
    }
    // Per-command variables must not leak into the persisted state unless the command changed them.
    lines.push(
      `__shears_h_${name}=\${${name}+1}; __shears_o_${name}=\${${name}-}; export ${name}=${shellQuote(value)}`,
    );
    restore.push(
      `if [ "\${${name}-}" = ${shellQuote(value)} ]; then if [ -n "$__shears_h_${name}" ]; then export ${name}="$__shears_o_${name}"; else unset ${name}; fi; fi`,
    );
  }
  // The exported PWD carries the cwd; a per-command cwd is undone before saving.
  if (options.cwd !== undefined) restore.push('cd -- "$__shears_pwd0"');
  lines.push(
    `__shears_s() { ${restore.join('; ')}${restore.length ? '; ' : ''}export -p > ${shellQuote(`${stateDir}/e`)}; }`,
  );
  lines.push(`trap '__shears_s' EXIT`);
  if (options.cwd !== undefined)
    lines.push(`__shears_pwd0=$PWD; cd -- ${shellQuote(options.cwd)} || exit 126`);
  lines.push(`eval ${shellQuote(command)}`);
  lines.push(`__shears_c=$?; trap - EXIT; __shears_s; exit $__shears_c`);
  return lines.join('\n');
}

/** printf-with-octal-escapes writer: binary safe in bash and busybox sh, no external tools. */
function printfBytes(data: Uint8Array, file: string): string {
  const parts: string[] = [];
  const chunk = 2048;
  for (let offset = 0; offset < data.length || offset === 0; offset += chunk) {
    let escaped = '';
    for (const byte of data.subarray(offset, offset + chunk))
      escaped += `\\${byte.toString(8).padStart(3, '0')}`;
    parts.push(`printf '${escaped}' ${offset === 0 ? '>' : '>>'} ${shellQuote(file)}`);
    if (data.length === 0) break;
  }
  return parts.join('\n');
}

function toBuffer(chunk: Buffer | string): Buffer {
  return typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
}

/**
 * Starts a session on a freshly started shell (see `SHELL_BOOTSTRAP`) and resolves once the
 * shell reported ready.
 */
export async function createShellSession(options: ShellSessionOptions): Promise<ShellSession> {
  const transport = options.transport;
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const graceMs = options.watchdogGraceMs ?? 10_000;
  const nonce = Buffer.from((options.randomBytes ?? randomBytes)(9)).toString('hex');
  const merged = transport.stderr === undefined;

  let alive = true;
  let closeReason = '';
  let mode: ShellMode = 'plain';
  let stateDir = '';
  let seq = 0;
  let running: RunningCommand | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const pending: { stdout: Buffer; stderr: Buffer } = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };

  let readyResolve!: () => void;
  let readyReject!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    readyResolve = resolve;
    readyReject = reject;
  });
  let isReady = false;
  const readyPrefix = Buffer.from(`__SHEARS_${nonce}_READY `);

  const markDead = (reason: string) => {
    if (!alive) return;
    alive = false;
    closeReason = reason;
    readyReject(new SandboxError({ message: `Shell session failed to start: ${reason}` }));
    running?.settle(new ShellSessionClosedError(`Shell session ended during a command: ${reason}`, false));
    options.onClose?.(reason);
  };

  const finishIfDone = () => {
    const command = running;
    if (!command) return;
    if (command.phases.stdout === 'done' && (merged || command.phases.stderr === 'done')) command.settle();
  };

  const consume = (stream: 'stdout' | 'stderr', chunk: Buffer) => {
    let buffer: Buffer = pending[stream].length > 0 ? Buffer.concat([pending[stream], chunk]) : chunk;
    pending[stream] = Buffer.alloc(0);
    if (!isReady) {
      if (stream !== 'stdout') return;
      const index = buffer.indexOf(readyPrefix);
      const end = index >= 0 ? buffer.indexOf('__\n', index) : -1;
      if (index < 0 || end < 0) {
        pending.stdout =
          index >= 0
            ? buffer.subarray(index)
            : buffer.subarray(Math.max(0, buffer.length - readyPrefix.length));
        return;
      }
      const [reportedMode, ...dir] = buffer
        .subarray(index + readyPrefix.length, end)
        .toString('utf8')
        .split(' ');
      mode = reportedMode as ShellMode;
      stateDir = dir.join(' ');
      isReady = true;
      readyResolve();
      buffer = buffer.subarray(end + 3);
    }
    const command = running;
    // Nothing runs: late output of background processes; drop it.
    if (!command) return;
    while (buffer.length > 0) {
      const phase = command.phases[stream];
      if (phase === 'done') return;
      if (phase === 'start') {
        const marker = Buffer.from(`__SHEARS_${nonce}_S${command.seq}`);
        const index = buffer.indexOf(marker);
        const end = index >= 0 ? buffer.indexOf('__\n', index + marker.length) : -1;
        if (index < 0 || end < 0) {
          pending[stream] =
            index >= 0 ? buffer.subarray(index) : buffer.subarray(Math.max(0, buffer.length - marker.length));
          return;
        }
        const rest = buffer
          .subarray(index + marker.length, end)
          .toString('utf8')
          .trim();
        if (stream === 'stdout' && rest) {
          command.pgid = Number(rest);
          command.onPgid?.(command.pgid);
        }
        command.phases[stream] = 'run';
        buffer = buffer.subarray(end + 3);
        continue;
      }
      const endMarker = Buffer.from(`__SHEARS_${nonce}_E${command.seq}`);
      const index = buffer.indexOf(endMarker);
      if (index < 0) {
        const keep = Math.min(buffer.length, endMarker.length);
        const commit = buffer.subarray(0, buffer.length - keep);
        commitBytes(command, stream, commit);
        pending[stream] = buffer.subarray(buffer.length - keep);
        return;
      }
      const end = buffer.indexOf('__\n', index + endMarker.length);
      commitBytes(command, stream, buffer.subarray(0, index));
      if (end < 0) {
        pending[stream] = buffer.subarray(index);
        return;
      }
      const trailer = buffer
        .subarray(index + endMarker.length, end)
        .toString('utf8')
        .trim();
      if (trailer) {
        const [code, timedOut] = trailer.split(' ');
        command.exitCode = Number(code);
        command.timedOut = timedOut === '1';
        command.phases.stdout = 'done';
        if (merged) command.phases.stderr = 'done';
      } else {
        command.phases[stream] = 'done';
      }
      buffer = buffer.subarray(end + 3);
      if (command.phases[stream] === 'done') {
        finishIfDone();
        return;
      }
    }
  };

  const commitBytes = (command: RunningCommand, stream: 'stdout' | 'stderr', bytes: Buffer) => {
    if (bytes.length === 0) return;
    command[stream].push(bytes);
    command.output.push(bytes);
  };

  transport.stdout.on('data', (chunk) => consume('stdout', toBuffer(chunk)));
  transport.stdout.on('end', () => markDead('the shell closed its stdout'));
  transport.stdout.on('close', () => markDead('the shell stream closed'));
  transport.stdout.on('error', (error) => markDead(`stream error: ${error.message}`));
  transport.stderr?.on('data', (chunk) => consume('stderr', toBuffer(chunk)));
  transport.stderr?.on('error', (error) => markDead(`stream error: ${error.message}`));

  // A write to a dead shell fails asynchronously (EPIPE); it must not become an unhandled error.
  const stdinEvents = transport.stdin as {
    on?: (event: 'error', listener: (error: Error) => void) => unknown;
  };
  stdinEvents.on?.('error', (error) => markDead(`writing to the shell failed: ${error.message}`));
  const write = (text: string) => {
    try {
      transport.stdin.write(text);
    } catch (cause) {
      markDead(`writing to the shell failed: ${(cause as Error).message}`);
    }
  };

  write(PROLOGUE(nonce, merged, transport.stateDir));
  const startupTimeoutMs = options.startupTimeoutMs ?? 20_000;
  let startupTimer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      new Promise<never>((_, reject) => {
        startupTimer = setTimeout(
          () =>
            reject(
              new SandboxError({
                message: `Shell session did not report ready within ${startupTimeoutMs} ms`,
              }),
            ),
          startupTimeoutMs,
        );
      }),
    ]);
  } catch (error) {
    alive = false;
    await transport.close();
    throw error;
  } finally {
    clearTimeout(startupTimer);
  }

  const close = async (reason = 'closed') => {
    const wasAlive = alive;
    markDead(reason);
    if (wasAlive) write('exit 0\n');
    await transport.close();
  };

  const runOne = async (command: string, execOptions: ShellExecOptions): Promise<ShellExecResult> => {
    if (!alive) throw new ShellSessionClosedError(`Shell session is closed (${closeReason})`, true);
    if (execOptions.signal?.aborted) return abortedResult(0);
    const startedAt = performance.now();
    seq += 1;
    const mySeq = seq;
    let stdinFile = '/dev/null';
    let preamble = '';
    if (execOptions.stdinPath !== undefined) {
      stdinFile = execOptions.stdinPath;
    } else if (execOptions.stdin !== undefined) {
      stdinFile = `${stateDir}/i${mySeq}`;
      const bytes =
        typeof execOptions.stdin === 'string' ? Buffer.from(execOptions.stdin, 'utf8') : execOptions.stdin;
      preamble = `${printfBytes(bytes, stdinFile)}\n`;
    }
    const script = jobScript(nonce, mySeq, command, execOptions, stateDir, merged);
    const timeout =
      execOptions.timeoutMs !== undefined ? formatTimeoutSeconds(Math.max(1, execOptions.timeoutMs)) : '';
    // In plain mode the reported pid is the shell's own: never signal that group from outside.
    const killFromOutside = transport.killProcessGroup !== undefined && mode !== 'plain';

    let settleOuter!: (error?: Error) => void;
    const done = new Promise<void>((resolve, reject) => {
      settleOuter = (error) => (error ? reject(error) : resolve());
    });
    const record: RunningCommand = {
      seq: mySeq,
      phases: { stdout: 'start', stderr: merged ? 'done' : 'start' },
      stdout: new CappedBytes(maxOutputBytes),
      stderr: new CappedBytes(maxOutputBytes),
      output: new CappedBytes(maxOutputBytes),
      pgid: undefined,
      exitCode: undefined,
      timedOut: false,
      settle: (error) => settleOuter(error),
    };
    running = record;
    pending.stdout = Buffer.alloc(0);
    pending.stderr = Buffer.alloc(0);

    let hardTimer: NodeJS.Timeout | undefined;
    let timeoutTimer: NodeJS.Timeout | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let interrupted = false;
    let hardTimedOut = false;
    let outsideTimedOut = false;
    const signalGroup = (pgid: number, signal: 'SIGTERM' | 'SIGKILL') => {
      Promise.resolve()
        .then(() => transport.killProcessGroup!(pgid, signal))
        .catch(() => undefined);
    };
    const killCommand = () => {
      const fire = (pgid: number) => {
        signalGroup(pgid, 'SIGTERM');
        killTimer = setTimeout(() => signalGroup(pgid, 'SIGKILL'), 1000);
      };
      if (record.pgid !== undefined) fire(record.pgid);
      else record.onPgid = fire;
    };
    const onAbort = () => {
      if (interrupted || outsideTimedOut) return;
      interrupted = true;
      if (killFromOutside) killCommand();
      // The shell is blocked in `wait`; without an out-of-band kill the only portable way to stop
      // the command is to end the session. The sandbox opens a fresh one.
      else void close('command interrupted');
    };
    execOptions.signal?.addEventListener('abort', onAbort, { once: true });
    if (execOptions.timeoutMs !== undefined) {
      if (killFromOutside) {
        timeoutTimer = setTimeout(() => {
          if (interrupted) return;
          outsideTimedOut = true;
          killCommand();
        }, execOptions.timeoutMs);
      }
      hardTimer = setTimeout(
        () => {
          hardTimedOut = true;
          void close(`the command outlived its timeout by ${graceMs} ms (kill failed)`);
        },
        execOptions.timeoutMs + 1000 + graceMs,
      );
    }
    // `.` runs at top level: bash's `declare -x` lines would make function-local variables.
    write(
      `${preamble}__shears_x ${mySeq} ${shellQuote(script)} ${shellQuote(killFromOutside ? '' : timeout)} ${shellQuote(stdinFile)}; [ -f "$__shears_d/e" ] && . "$__shears_d/e"; __shears_y ${mySeq}\n`,
    );
    try {
      await done;
    } catch (error) {
      if (!interrupted && !hardTimedOut) throw error;
    } finally {
      clearTimeout(hardTimer);
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      execOptions.signal?.removeEventListener('abort', onAbort);
      if (running === record) running = undefined;
    }
    const durationMs = performance.now() - startedAt;
    const timedOut = record.timedOut || hardTimedOut || outsideTimedOut;
    let output = record.output.text();
    let exitCode = record.exitCode ?? -1;
    if (interrupted && !timedOut) {
      output = output ? `${output}\n[Command interrupted]` : '[Command interrupted]';
      exitCode = 130;
    } else if (timedOut) {
      const message = `[Command timed out after ${timeout}s]`;
      output = output ? `${output}\n${message}` : message;
      exitCode = 124;
    }
    return {
      exitCode,
      output,
      stdout: record.stdout.text(),
      stderr: merged ? '' : record.stderr.text(),
      timedOut,
      interrupted: interrupted && !timedOut,
      durationMs,
    };
  };

  function abortedResult(durationMs: number): ShellExecResult {
    return {
      exitCode: 130,
      output: '[Command interrupted]',
      stdout: '',
      stderr: '',
      timedOut: false,
      interrupted: true,
      durationMs,
    };
  }

  return {
    get mode() {
      return mode;
    },
    get stateDir() {
      return stateDir;
    },
    get alive() {
      return alive;
    },
    exec(command, execOptions = {}) {
      if (typeof command !== 'string') {
        return Promise.reject(
          new SandboxError({ message: `exec: command must be a string, got ${typeof command}` }),
        );
      }
      const result = queue.then(() => runOne(command, execOptions));
      queue = result.catch(() => undefined);
      return result;
    },
    close: () => close(),
  };
}
