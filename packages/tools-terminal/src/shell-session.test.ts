import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { ShellSession, ShellTransport } from './shell-session.js';
import {
  CappedBytes,
  createShellSession,
  SHELL_BOOTSTRAP,
  SHELL_BOOTSTRAP_SCRIPT,
  shellQuote,
} from './shell-session.js';

const children: ChildProcessWithoutNullStreams[] = [];
const sessions: ShellSession[] = [];

afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
  for (const child of children.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {}
  }
});

function start(
  argv: readonly string[],
  options: { outsideKill?: boolean; merged?: boolean; byteByByte?: boolean } = {},
): ShellTransport {
  const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: 'pipe' });
  children.push(child);
  let stdout: NodeJS.ReadableStream = child.stdout;
  if (options.byteByByte) {
    // Re-chunk into single bytes so every marker straddles chunk boundaries.
    const split = new PassThrough();
    child.stdout.on('data', (chunk: Buffer) => {
      for (const byte of chunk) split.write(Buffer.from([byte]));
    });
    child.stdout.on('end', () => split.end());
    stdout = split;
  }
  return {
    stdin: child.stdin,
    stdout: stdout as ShellTransport['stdout'],
    stderr: options.merged ? undefined : child.stderr,
    close: () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    },
    ...(options.outsideKill === false
      ? {}
      : { killProcessGroup: (pgid: number, signal: NodeJS.Signals) => void process.kill(-pgid, signal) }),
  };
}

async function open(
  argv: readonly string[],
  options: Parameters<typeof start>[1] & { maxOutputBytes?: number } = {},
) {
  const session = await createShellSession({
    transport: start(argv, options),
    maxOutputBytes: options.maxOutputBytes,
  });
  sessions.push(session);
  return session;
}

describe('createShellSession over bash', () => {
  it('separates stdout and stderr, reports exit codes, and survives `exit`', async () => {
    const session = await open(SHELL_BOOTSTRAP);
    expect(session.mode).toBe('job');
    const result = await session.exec('echo out; echo err >&2; exit 7');
    expect(result).toMatchObject({ exitCode: 7, stdout: 'out\n', stderr: 'err\n', timedOut: false });
    expect(result.output).toContain('out\n');
    expect(result.output).toContain('err\n');
    expect((await session.exec('echo still here')).stdout).toBe('still here\n');
  });

  it('keeps cwd and exported variables; per-command cwd and env do not stick', async () => {
    const session = await open(SHELL_BOOTSTRAP);
    await session.exec('cd /tmp && export GREETING="hello world"');
    expect((await session.exec('pwd; echo "$GREETING"')).stdout).toBe('/tmp\nhello world\n');
    expect((await session.exec('pwd; echo "$ONLY_ONCE"', { cwd: '/', env: { ONLY_ONCE: 'x' } })).stdout).toBe(
      '/\nx\n',
    );
    expect((await session.exec('pwd; echo "[$ONLY_ONCE]"')).stdout).toBe('/tmp\n[]\n');
  });

  it('feeds stdin bytes to the command', async () => {
    const session = await open(SHELL_BOOTSTRAP);
    const bytes = new Uint8Array([0, 1, 39, 92, 255, 10]);
    const result = await session.exec('od -An -tu1 | tr -s " "', { stdin: bytes });
    expect(result.stdout.trim()).toBe('0 1 39 92 255 10');
  });

  it('still parses markers when every byte arrives in its own chunk', async () => {
    const session = await open(SHELL_BOOTSTRAP, { byteByByte: true });
    const result = await session.exec('printf abc; printf def >&2; exit 2');
    expect(result).toMatchObject({ exitCode: 2, stdout: 'abc', stderr: 'def' });
  });

  it('times out with the in-shell watchdog when the transport cannot kill from outside', async () => {
    const session = await open(SHELL_BOOTSTRAP, { outsideKill: false });
    const result = await session.exec('echo started; sleep 30 & sleep 30', { timeoutMs: 300 });
    expect(result.exitCode).toBe(124);
    expect(result.timedOut).toBe(true);
    expect(result.output).toBe('started\n\n[Command timed out after 0.3s]');
    expect((await session.exec('echo next')).stdout).toBe('next\n');
  });

  it('interrupts a command through its AbortSignal with exit code 130', async () => {
    const session = await open(SHELL_BOOTSTRAP);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const result = await session.exec('sleep 30', { signal: controller.signal });
    expect(result).toMatchObject({ exitCode: 130, interrupted: true });
    expect(result.output).toContain('[Command interrupted]');
    expect((await session.exec('echo alive')).stdout).toBe('alive\n');
  });

  it('caps output to 40% head and 60% tail', async () => {
    const session = await open(SHELL_BOOTSTRAP, { maxOutputBytes: 1000 });
    const result = await session.exec("head -c 5000 /dev/zero | tr '\\0' a; printf END");
    expect(result.stdout.startsWith('a'.repeat(400))).toBe(true);
    expect(result.stdout).toContain('[OUTPUT TRUNCATED - 4003 bytes omitted out of 5003 total]');
    expect(result.stdout.endsWith(`${'a'.repeat(597)}END`)).toBe(true);
  });

  it('works on a transport that merges stderr into stdout', async () => {
    // Merged at the source (as a PTY or a docker TTY would), so order within the stream is real.
    const session = await open(['sh', '-c', `exec 2>&1; ${SHELL_BOOTSTRAP_SCRIPT}`], { merged: true });
    const result = await session.exec('echo a; echo b >&2; exit 4');
    expect(result.exitCode).toBe(4);
    expect(result.output).toContain('a\n');
    expect(result.output).toContain('b\n');
    expect(result.stderr).toBe('');
  });

  it('reports a closed session on the next command after the shell dies', async () => {
    const session = await open(SHELL_BOOTSTRAP);
    const pid = Number((await session.exec('echo $$')).stdout);
    process.kill(pid, 'SIGKILL');
    await expect(session.exec('true')).rejects.toThrow(/closed|ended/);
    expect(session.alive).toBe(false);
  });
});

describe.skipIf(!existsSync('/bin/busybox') && !existsSync('/usr/bin/busybox'))(
  'createShellSession over busybox sh',
  () => {
    const busybox = existsSync('/bin/busybox') ? '/bin/busybox' : '/usr/bin/busybox';

    it('runs in setsid mode with persistence, exit codes and group-killing timeouts', async () => {
      const session = await open([busybox, 'sh'], { outsideKill: false });
      expect(session.mode).toBe('setsid');
      expect(await session.exec('echo x; echo y >&2; exit 5')).toMatchObject({
        exitCode: 5,
        stdout: 'x\n',
        stderr: 'y\n',
      });
      await session.exec('cd /tmp; export K=v');
      expect((await session.exec('pwd; echo $K')).stdout).toBe('/tmp\nv\n');
      const marker = `/tmp/shears-bb-${process.pid}`;
      const result = await session.exec(`(sleep 30; touch ${marker}) & echo $! > ${marker}.pid; sleep 30`, {
        timeoutMs: 300,
      });
      expect(result.exitCode).toBe(124);
      const child = Number((await session.exec(`cat ${marker}.pid; rm -f ${marker}.pid`)).stdout);
      // A killed child may linger as a zombie until init reaps it; zombies count as gone.
      const state = await session.exec(`cut -d' ' -f3 /proc/${child}/stat 2>/dev/null || echo gone`);
      expect(['gone\n', 'Z\n']).toContain(state.stdout);
    });
  },
);

describe('CappedBytes and shellQuote', () => {
  it('decodes invalid UTF-8 with replacement characters', () => {
    const capped = new CappedBytes(100);
    capped.push(Buffer.from([0x68, 0xff, 0x69]));
    expect(capped.text()).toBe('h\uFFFDi');
  });

  it('quotes single quotes for sh', async () => {
    const session = await open(SHELL_BOOTSTRAP);
    const tricky = `it's "quoted" $HOME \`x\` \\ ;|&`;
    expect((await session.exec(`printf %s ${shellQuote(tricky)}`)).stdout).toBe(tricky);
  });
});
