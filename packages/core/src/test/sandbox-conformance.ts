// Conformance suite for the Sandbox contract: every backend (local, docker, ssh, third-party)
// runs it unchanged. It checks what a rollout relies on: exit codes, separated output, timeouts
// that kill children, shell-like cwd/env persistence, binary-safe files, unicode and invalid
// UTF-8 output, serialised concurrent commands, idempotent dispose, clear file errors, and
// `spec.files` written and `spec.setup` run in order before acquire returns (a failing command
// fails acquire, naming it), and the optional `spawn` (streaming stdio, cwd/env, kill, killed
// with the sandbox).
// Known gaps are declared skips with a reason, never silent.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxProviderV1, SandboxSpec, SandboxV1 } from '../contracts/sandbox.js';
import { SandboxError } from '../errors.js';

export const SANDBOX_CONFORMANCE_CASES = [
  'exit-codes',
  'stdout-stderr',
  'timeout-kills-children',
  'cwd-env-persistence',
  'per-command-cwd-env',
  'stdin',
  'binary-file-round-trip',
  'write-file-nested',
  'unicode-output',
  'invalid-utf8-output',
  'concurrent-commands',
  'separate-sandboxes',
  'dispose-twice',
  'read-missing-file',
  'setup-commands',
  'spawn',
  'spec-files',
] as const;
export type SandboxConformanceCase = (typeof SANDBOX_CONFORMANCE_CASES)[number];

export interface SandboxConformanceOptions {
  /** Spec passed to every `acquire` (image, workdir, ...). */
  spec?: SandboxSpec;
  /** Declared gaps: case → reason. Each becomes a visible skip. */
  skip?: Partial<Record<SandboxConformanceCase, string>>;
  /** When set, the whole suite is skipped with this reason (e.g. no daemon outside CI). */
  unavailable?: string;
  /** Per-test timeout (default 60 s; container backends may need more). */
  testTimeoutMs?: number;
}

/** Shell snippet: prints `gone` if the pid no longer runs (zombies awaiting a reaper count as gone). */
function goneCheck(pidExpression: string): string {
  return `p=${pidExpression}; s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); if [ -z "$s" ] || [ "$s" = Z ]; then echo gone; else echo "alive:$s"; fi`;
}

export function describeSandboxConformance(
  name: string,
  makeProvider: () => SandboxProviderV1 | Promise<SandboxProviderV1>,
  options: SandboxConformanceOptions = {},
): void {
  const suite = options.unavailable ? describe.skip : describe;
  suite(`SandboxV1 conformance: ${name}${options.unavailable ? ` (skipped: ${options.unavailable})` : ''}`, () => {
    let provider: SandboxProviderV1 | undefined;
    const acquired: SandboxV1[] = [];
    const timeout = options.testTimeoutMs ?? 60_000;

    beforeAll(async () => {
      provider = await makeProvider();
    }, 300_000);
    afterEach(async () => {
      await Promise.all(acquired.splice(0).map((sandbox) => sandbox.dispose()));
    });
    afterAll(async () => {
      await provider?.close();
    }, 120_000);

    const acquire = async () => {
      const sandbox = await provider!.acquire(options.spec);
      acquired.push(sandbox);
      return sandbox;
    };

    const test = (id: SandboxConformanceCase, title: string, body: () => Promise<void>) => {
      const reason = options.skip?.[id];
      if (reason) it.skip(`${title} [known gap: ${reason}]`, body);
      else it(title, body, timeout);
    };

    test(
      'exit-codes',
      'reports exit codes: 0, a chosen code, false, and 127 for a missing command',
      async () => {
        const sandbox = await acquire();
        expect(sandbox.specificationVersion).toBe('v1');
        expect((await sandbox.exec('true')).exitCode).toBe(0);
        expect((await sandbox.exec('exit 42')).exitCode).toBe(42);
        expect((await sandbox.exec('false')).exitCode).toBe(1);
        const missing = await sandbox.exec('shears-no-such-command-xyz');
        expect(missing.exitCode).toBe(127);
        expect(missing.output).toMatch(/not found/);
        expect((await sandbox.exec('echo after')).stdout).toBe('after\n');
      },
    );

    test('stdout-stderr', 'separates stdout from stderr and shows both in output', async () => {
      const sandbox = await acquire();
      const result = await sandbox.exec('echo to-out; echo to-err >&2');
      expect(result.stdout).toBe('to-out\n');
      expect(result.stderr).toBe('to-err\n');
      expect(result.output).toContain('to-out\n');
      expect(result.output).toContain('to-err\n');
      expect(result.timedOut).toBe(false);
      expect(result.durationMs).toBeGreaterThanOrEqual(0);
    });

    test(
      'timeout-kills-children',
      "a timeout ends with exit code 124 and kills the command's children",
      async () => {
        const sandbox = await acquire();
        const result = await sandbox.exec('sleep 120 & echo $! > child.pid; echo started; sleep 120', {
          timeoutMs: 700,
        });
        expect(result.timedOut).toBe(true);
        expect(result.exitCode).toBe(124);
        expect(result.output).toContain('started');
        expect(result.output).toMatch(/\[Command timed out after 0\.7s\]$/);
        const check = await sandbox.exec(`sleep 0.3; ${goneCheck('$(cat child.pid)')}`);
        expect(check.stdout.trim()).toBe('gone');
        expect((await sandbox.exec('echo usable')).stdout).toBe('usable\n');
      },
    );

    test(
      'cwd-env-persistence',
      'keeps cwd and exported variables between commands, starting in the workdir',
      async () => {
        const sandbox = await acquire();
        expect((await sandbox.exec('pwd')).stdout.trim()).toBe(sandbox.workdir);
        await sandbox.exec('mkdir -p sub/dir && cd sub/dir && export SHEARS_CONFORMANCE="a b"');
        const result = await sandbox.exec('pwd; echo "$SHEARS_CONFORMANCE"');
        expect(result.stdout).toBe(`${sandbox.workdir}/sub/dir\na b\n`);
        await sandbox.exec('exit 3');
        expect((await sandbox.exec('pwd')).stdout.trim()).toBe(`${sandbox.workdir}/sub/dir`);
      },
    );

    test(
      'per-command-cwd-env',
      'runs one command in another cwd with extra env, without changing the session',
      async () => {
        const sandbox = await acquire();
        await sandbox.exec('mkdir -p other');
        const result = await sandbox.exec('pwd; echo "$ONE_SHOT"', {
          cwd: 'other',
          env: { ONE_SHOT: 'yes' },
        });
        expect(result.stdout).toBe(`${sandbox.workdir}/other\nyes\n`);
        expect((await sandbox.exec('pwd; echo "[$ONE_SHOT]"')).stdout).toBe(`${sandbox.workdir}\n[]\n`);
      },
    );

    test('stdin', 'passes stdin to the command', async () => {
      const sandbox = await acquire();
      expect((await sandbox.exec('cat', { stdin: 'line 1\nline 2\n' })).stdout).toBe('line 1\nline 2\n');
      expect((await sandbox.exec('cat')).stdout).toBe('');
      const big = new Uint8Array(randomBytes(200_000));
      expect((await sandbox.exec('wc -c', { stdin: big })).stdout.trim()).toBe('200000');
    });

    test(
      'binary-file-round-trip',
      'round-trips 1 MB of random bytes through writeFile/readFile and the shell',
      async () => {
        const sandbox = await acquire();
        const data = new Uint8Array(randomBytes(1024 * 1024));
        await sandbox.writeFile('random.bin', data);
        expect((await sandbox.exec('wc -c < random.bin')).stdout.trim()).toBe(String(data.length));
        const back = await sandbox.readFile('random.bin');
        expect(back.length).toBe(data.length);
        expect(Buffer.from(back).equals(Buffer.from(data))).toBe(true);
        await sandbox.exec('cp random.bin copy.bin');
        expect(
          Buffer.from(await sandbox.readFile(`${sandbox.workdir}/copy.bin`)).equals(Buffer.from(data)),
        ).toBe(true);
      },
    );

    test('write-file-nested', 'writeFile creates parent directories and accepts strings', async () => {
      const sandbox = await acquire();
      await sandbox.writeFile('deep/er/note.txt', 'héllo\n');
      expect((await sandbox.exec('cat deep/er/note.txt')).stdout).toBe('héllo\n');
      expect(new TextDecoder().decode(await sandbox.readFile('deep/er/note.txt'))).toBe('héllo\n');
    });

    test('unicode-output', 'returns unicode output intact', async () => {
      const sandbox = await acquire();
      const text = 'héllo wörld ✓ 日本語 🎉';
      await sandbox.writeFile('unicode.txt', `${text}\n`);
      expect((await sandbox.exec('cat unicode.txt')).stdout).toBe(`${text}\n`);
    });

    test('invalid-utf8-output', 'decodes invalid UTF-8 output with replacement characters', async () => {
      const sandbox = await acquire();
      const result = await sandbox.exec("printf 'ok\\377\\376end\\n'");
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toBe('ok\uFFFD\uFFFDend\n');
    });

    test('concurrent-commands', 'runs concurrent exec calls without mixing their output', async () => {
      const sandbox = await acquire();
      const results = await Promise.all(
        [0, 1, 2, 3, 4].map((index) =>
          sandbox.exec(`echo start-${index}; sleep 0.05; echo end-${index}; exit ${index}`),
        ),
      );
      results.forEach((result, index) => {
        expect(result.stdout).toBe(`start-${index}\nend-${index}\n`);
        expect(result.exitCode).toBe(index);
      });
    });

    test('separate-sandboxes', 'gives each sandbox its own workspace', async () => {
      const first = await acquire();
      const second = await acquire();
      expect(first.id).not.toBe(second.id);
      await first.writeFile('mine.txt', 'first');
      expect((await second.exec('test -e mine.txt && echo shared || echo separate')).stdout).toBe(
        'separate\n',
      );
    });

    test('dispose-twice', 'dispose() twice is harmless and later use fails clearly', async () => {
      const sandbox = await provider!.acquire(options.spec);
      await sandbox.exec('echo hi');
      await sandbox.dispose();
      await expect(sandbox.dispose()).resolves.toBeUndefined();
      await expect(sandbox.exec('echo again')).rejects.toThrow(/dispos/i);
    });

    test('read-missing-file', 'readFile of a missing path fails with an error naming the path', async () => {
      const sandbox = await acquire();
      await expect(sandbox.readFile('no/such/file.txt')).rejects.toThrow(
        /no such file.*no\/such\/file\.txt/i,
      );
    });

    test(
      'setup-commands',
      'runs spec.setup in order before acquire returns; a failing command fails acquire, naming it, and stops the rest',
      async () => {
        const own = options.spec?.setup ?? [];
        const withSetup = (setup: string[]): SandboxSpec => ({ ...options.spec, setup: [...own, ...setup] });
        const ready = await provider!.acquire(
          withSetup(['printf one > setup.txt', 'printf two >> setup.txt']),
        );
        acquired.push(ready);
        expect(new TextDecoder().decode(await ready.readFile('setup.txt'))).toBe('onetwo');

        const failing = ['printf ran > first.txt', 'echo setup-broke; exit 7', 'printf never > third.txt'];
        const error = await provider!.acquire(withSetup(failing)).then(
          (sandbox) => {
            acquired.push(sandbox);
            return undefined;
          },
          (caught: unknown) => caught,
        );
        expect(SandboxError.isInstance(error)).toBe(true);
        const message = (error as Error).message;
        expect(message).toContain(
          `setup command ${own.length + 2} of ${own.length + 3} failed (exit 7): echo setup-broke; exit 7`,
        );
        expect(message).toContain('setup-broke');
        // The provider still hands out sandboxes afterwards.
        await acquire();
      },
    );

    test(
      'spawn',
      'spawn: streaming stdin/stdout/stderr, cwd and env, kill, and killed with the sandbox',
      async () => {
        const sandbox = await acquire();
        if (!sandbox.spawn)
          throw new Error('this backend has no spawn(); declare the gap with skip: { spawn: reason }');
        await sandbox.exec('mkdir -p sub');
        const child = await sandbox.spawn(
          '/bin/sh',
          ['-c', 'read line; echo "got:$line:$SPAWN_VAR"; pwd; echo oops >&2; exec sleep 300'],
          { cwd: 'sub', env: { SPAWN_VAR: 'v1' } },
        );
        const readUntil = async (stream: ReadableStream<Uint8Array>, needle: string) => {
          const reader = stream.getReader();
          const decoder = new TextDecoder();
          let text = '';
          while (!text.includes(needle)) {
            const { value, done } = await reader.read();
            if (done) break;
            text += decoder.decode(value, { stream: true });
          }
          reader.releaseLock();
          return text;
        };
        const writer = child.stdin.getWriter();
        await writer.write(new TextEncoder().encode('hello\n'));
        const out = await readUntil(child.stdout, '/sub\n');
        expect(out).toContain('got:hello:v1\n');
        expect(out).toMatch(/\/sub\n$/);
        expect(await readUntil(child.stderr, 'oops')).toContain('oops');
        await child.kill();
        const exit = await child.exited;
        expect(exit.exitCode === 0).toBe(false);
        // A second process dies with the sandbox.
        const other = await sandbox.spawn('/bin/sh', ['-c', 'exec sleep 300']);
        await sandbox.dispose();
        const ended = await other.exited;
        expect(ended.exitCode === 0).toBe(false);
      },
    );
    test(
      'spec-files',
      'writes spec.files (text and bytes, nested paths) before spec.setup runs, with no shell',
      async () => {
        const bytes = new Uint8Array([0, 1, 2, 253, 254, 255, 10, 13]);
        const sandbox = await provider!.acquire({
          ...options.spec,
          files: { 'data/in/input.txt': 'héllo wörld\n', 'data/blob.bin': bytes },
          setup: [...(options.spec?.setup ?? []), 'wc -w < data/in/input.txt > count.txt'],
        });
        acquired.push(sandbox);
        expect(new TextDecoder().decode(await sandbox.readFile('data/in/input.txt'))).toBe('héllo wörld\n');
        expect([...(await sandbox.readFile('data/blob.bin'))]).toEqual([...bytes]);
        expect(new TextDecoder().decode(await sandbox.readFile('count.txt')).trim()).toBe('2');
      },
    );
  });
}
