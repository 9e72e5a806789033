// Attacks on the file tools' confinement, run on every backend next to the conformance suite.
// Each one escaped, leaked or hung on the shell-resolution tools these replaced (issue 21):
// a directory swapped for a symlink while a call runs, a hard link to an outside file,
// RIPGREP_CONFIG_PATH and PATH exported in the agent's shell, a temp dir replaced by a symlink,
// FIFOs and devices, and a 2 GB sparse file. The racing tests count the calls that succeeded, so
// they cannot pass by refusing everything.
import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import { fileToolRunner } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileTools, type FileToolsSettings } from '../src/index.js';

export interface ConfinementAttackHooks {
  acquire(): Promise<SandboxV1>;
  release?(sandbox: SandboxV1): Promise<void>;
}

export interface ConfinementAttackOptions {
  /** Run the racing tests (a background process swapping a directory and a symlink). */
  race?: boolean;
  /** Racing calls per tool (default 200). */
  iterations?: number;
}

const createTools = (settings?: Record<string, unknown>) => createFileTools(settings as FileToolsSettings);

/** Fails instead of hanging: the old tools blocked on a FIFO until the rollout was aborted. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function describeConfinementAttacks(
  name: string,
  hooks: ConfinementAttackHooks | undefined,
  skipReason?: string,
  options: ConfinementAttackOptions = {},
): void {
  describe.skipIf(!hooks)(
    `file-tool confinement attacks on ${name}${skipReason ? ` (${skipReason})` : ''}`,
    () => {
      let sandbox: SandboxV1;
      let run: ReturnType<typeof fileToolRunner>;
      let ws: string;
      let outside: string;
      const secret = `SECRET-${randomUUID()}`;
      const sh = async (command: string) => {
        const result = await sandbox.exec(command, { cwd: sandbox.workdir, timeoutMs: 60_000 });
        if (result.exitCode !== 0)
          throw new Error(`setup command failed (${result.exitCode}): ${command}\n${result.output}`);
        return result.stdout;
      };

      beforeAll(async () => {
        sandbox = await hooks!.acquire();
        run = fileToolRunner(createTools, sandbox);
        ws = sandbox.workdir.replace(/\/+$/, '');
        // Beside the workspace, on the same file system (hard links need that).
        outside = posix.join(posix.dirname(ws), `outside-${randomUUID().slice(0, 8)}`);
        await sh(`mkdir -p '${outside}' && printf '%s\\n' '${secret}' > '${outside}/f.txt'`);
        // Pin the roots the way a rollout's first call does.
        await run('read_file', { path: 'missing-on-purpose.txt' });
      });
      afterAll(async () => {
        if (!sandbox) return;
        await sandbox.exec(`rm -rf '${outside}'`).catch(() => undefined);
        await (hooks!.release ? hooks!.release(sandbox) : sandbox.dispose());
      });

      const outsideUntouched = async () => {
        expect(await sh(`ls -A '${outside}'`)).toBe('f.txt\n');
        expect(await sh(`cat '${outside}/f.txt'`)).toBe(`${secret}\n`);
      };

      it('refuses a hard link to a file outside the workspace, saying what to do', async () => {
        await sh(`ln '${outside}/f.txt' hardlink.txt`);
        try {
          const read = await run('read_file', { path: 'hardlink.txt' });
          expect(read.json.error).toMatch(/has 2 hard links.*replace it with a copy/);
          expect(read.text).not.toContain(secret);
          const search = await run('search_files', { pattern: 'SECRET' });
          expect(search.text).not.toContain(secret);
          expect(search.json.total_count).toBe(0);
          const count = await run('search_files', { pattern: 'SECRET', output_mode: 'count' });
          expect(count.json.total_count).toBe(0);
          const patch = await run('patch', { path: 'hardlink.txt', old_string: 'SECRET', new_string: 'x' });
          expect(patch.json.error).toMatch(/hard links/);
          await outsideUntouched();
          // Writing replaces the name in the workspace and leaves the other name's file alone.
          const write = await run('write_file', { path: 'hardlink.txt', content: 'new\n' });
          expect(write.json.bytes_written).toBe(4);
          expect((await run('read_file', { path: 'hardlink.txt' })).json.content).toBe('     1|new');
          await outsideUntouched();
        } finally {
          await sh('rm -f hardlink.txt');
        }
      });

      it('reads no configuration from the agent shell: RIPGREP_CONFIG_PATH and PATH', async () => {
        const evil = `${outside}-bin`;
        await sh(
          `mkdir -p '${evil}' && ln -s '${outside}' followme && printf -- '--follow\\n' > '${evil}/rgrc'`,
        );
        for (const tool of ['cat', 'head', 'sed', 'rg', 'grep', 'stat', 'readlink'])
          await sh(
            `printf '#!/bin/sh\\necho ${secret}\\n' > '${evil}/${tool}' && chmod +x '${evil}/${tool}'`,
          );
        await sh('printf "plain text\\n" > plain.txt');
        // Exported in the persistent shell, as an agent's terminal call would.
        const path = (await sandbox.exec('printf %s "$PATH"')).stdout;
        await sandbox.exec(`export RIPGREP_CONFIG_PATH='${evil}/rgrc'`);
        try {
          const search = await run('search_files', { pattern: 'SECRET' });
          expect(search.text).not.toContain(secret);
          await sandbox.exec(`export PATH='${evil}':"$PATH"`);
          const read = await run('read_file', { path: 'plain.txt' });
          expect(read.json.content).toBe('     1|plain text');
          const found = await run('search_files', { pattern: 'plain' });
          expect(found.text).not.toContain(secret);
          expect(found.json.matches).toEqual([{ path: 'plain.txt', line: 1, content: 'plain text' }]);
        } finally {
          await sandbox.exec(`export PATH='${path}'; unset RIPGREP_CONFIG_PATH`);
          await sh(`rm -rf followme plain.txt '${evil}'`);
        }
      });

      it('sends nothing through a temp dir replaced by a symlink', async () => {
        const temp = sandbox.tempDir.replace(/\/+$/, '');
        await sh(
          'printf "%s\\n" big > big.txt && i=0; while [ $i -lt 17 ]; do cat big.txt big.txt > b2 && mv b2 big.txt; i=$((i+1)); done',
        );
        await sh(`mv '${temp}' '${temp}.saved' && ln -s '${outside}' '${temp}'`);
        try {
          // Over 16 KiB, content is uploaded through the temp dir: refused.
          const write = await run('write_file', { path: 'via-temp.txt', content: 'PAYLOAD\n'.repeat(4096) });
          expect(write.json.error).toMatch(/temp dir was moved or replaced/);
          // Small text is written from inside the tool's script: no temp dir needed.
          const small = await run('write_file', { path: 'small.txt', content: 'PAYLOAD\n' });
          expect(small.json.bytes_written).toBe(8);
          // A file over the inline limit goes through a spill file in the temp dir for patch.
          const patch = await run('patch', { path: 'big.txt', old_string: 'big\nbig', new_string: 'x' });
          expect(patch.json.error).toMatch(/temp dir was moved or replaced/);
          await outsideUntouched();
        } finally {
          await sh(`rm -f '${temp}' && mv '${temp}.saved' '${temp}' && rm -f big.txt via-temp.txt small.txt`);
        }
      });

      it('refuses FIFOs and devices at once and bounds a 2 GB sparse file', async () => {
        await sh('mkdir -p special && mkfifo special/pipe');
        const device = await sandbox.exec('mknod special/zero c 1 5', { cwd: sandbox.workdir });
        try {
          const fifo = await within(
            20_000,
            'read_file on a FIFO',
            run('read_file', { path: 'special/pipe' }),
          );
          expect(fifo.json.error).toMatch(/it is a FIFO, not a regular file/);
          const searchFifo = await within(
            20_000,
            'search_files on a FIFO',
            run('search_files', { pattern: 'x', path: 'special/pipe' }),
          );
          expect(searchFifo.json.error).toMatch(/not a regular file/);
          const searchDir = await within(
            20_000,
            'search_files over a directory with a FIFO',
            run('search_files', { pattern: 'x', path: 'special' }),
          );
          expect(searchDir.json.total_count).toBe(0);
          const patchFifo = await within(
            20_000,
            'patch on a FIFO',
            run('patch', { path: 'special/pipe', old_string: 'a', new_string: 'b' }),
          );
          expect(patchFifo.json.error).toMatch(/not a regular file \(a FIFO\)/);
          if (device.exitCode === 0) {
            const zero = await within(
              20_000,
              'read_file on a device',
              run('read_file', { path: 'special/zero' }),
            );
            expect(zero.json.error).toMatch(/it is a character device, not a regular file/);
          }
          // 2 GB, no newline, sparse: only the first maxScanBytes are read.
          await sh('dd if=/dev/zero of=special/sparse bs=1 count=0 seek=2147483648 2>/dev/null');
          const sparse = await within(
            60_000,
            'read_file on a 2 GB file',
            run('read_file', { path: 'special/sparse' }),
          );
          expect(sparse.json.error).toMatch(/^Binary file/);
          expect(sparse.json.file_size).toBe(2147483648);
        } finally {
          await sh('rm -rf special');
        }
      });

      describe.skipIf(!options.race)('racing a directory swapped for a symlink', () => {
        const iterations = options.iterations ?? 150;

        /** Starts a background loop in the sandbox that swaps race/d between a directory and a link out. */
        const startSwapper = async () => {
          await sh(
            `rm -rf race && mkdir -p race/real && printf 'inside\\n' > race/real/f.txt && ln -s '${outside}' race/link && mv race/real race/d`,
          );
          const loop = `cd '${ws}/race' || exit 1; n=0; end=$(( $(date +%s) + 120 ))
while [ ! -e stop ] && [ "$(date +%s)" -lt "$end" ]; do
  mv -f d real && mv -f link d && mv -f d link && mv -f real d && n=$((n + 1)); sleep 0.02
done; echo "$n" > swaps`;
          await sh(`sh -c '${loop.replaceAll("'", "'\\''")}' </dev/null >/dev/null 2>&1 &`);
        };
        const stopSwapper = async (): Promise<number> => {
          await sh(': > race/stop');
          for (let attempt = 0; attempt < 100; attempt++) {
            const swaps = await sandbox.exec(`cat race/swaps 2>/dev/null`, { cwd: sandbox.workdir });
            if (swaps.exitCode === 0 && swaps.stdout.trim()) return Number(swaps.stdout.trim());
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          throw new Error('the swapping loop did not stop');
        };
        const finish = async (counts: { ok: number; refused: number }) => {
          const swaps = await stopSwapper();
          await sh('rm -rf race');
          const calls = counts.ok + counts.refused;
          const summary = `${calls} calls: ${counts.ok} succeeded, ${counts.refused} refused; ${swaps} swap cycles`;
          console.log(`racing on ${name}: ${summary}`);
          // Enough calls ran, the swapper really raced them, and not every call was refused.
          expect(calls, summary).toBe(iterations);
          expect(swaps, summary).toBeGreaterThan(iterations / 10);
          expect(counts.ok, summary).toBeGreaterThan(0);
          await outsideUntouched();
        };

        it(`read_file: ${iterations} racing reads, zero escapes`, async () => {
          await startSwapper();
          const counts = { ok: 0, refused: 0 };
          for (let index = 0; index < iterations; index++) {
            const read = await run('read_file', { path: 'race/d/f.txt' });
            expect(read.text).not.toContain(secret);
            if (read.json.content === '     1|inside') counts.ok++;
            else counts.refused++;
          }
          await finish(counts);
        }, 300_000);

        it(`write_file: ${iterations} racing writes, zero escapes`, async () => {
          await startSwapper();
          const counts = { ok: 0, refused: 0 };
          for (let index = 0; index < iterations; index++) {
            const write = await run('write_file', { path: `race/d/w${index % 5}.txt`, content: 'PAYLOAD\n' });
            if (write.json.bytes_written === 8) counts.ok++;
            else counts.refused++;
          }
          await finish(counts);
        }, 300_000);

        it(`patch: ${iterations} racing patches, zero escapes`, async () => {
          await startSwapper();
          const counts = { ok: 0, refused: 0 };
          let text = 'inside';
          for (let index = 0; index < iterations; index++) {
            const next = text === 'inside' ? 'inside-patched' : 'inside';
            const patch = await run('patch', {
              path: 'race/d/f.txt',
              old_string: `${text}\n`,
              new_string: `${next}\n`,
            });
            expect(patch.text).not.toContain(secret);
            if (patch.json.success === true) {
              counts.ok++;
              text = next;
            } else {
              counts.refused++;
              // A call refused after its write (while re-reading to verify) left the other text.
              if (/Could not find a match|verification failed/.test(patch.json.error)) text = next;
            }
          }
          await finish(counts);
        }, 300_000);

        it(`search_files: ${iterations} racing searches, zero escapes`, async () => {
          await startSwapper();
          const counts = { ok: 0, refused: 0 };
          const modes = ['content', 'files_only', 'count'] as const;
          for (let index = 0; index < iterations; index++) {
            const search =
              index % 4 === 3
                ? await run('search_files', { pattern: 'f.txt', target: 'files', path: 'race' })
                : await run('search_files', {
                    pattern: 'SECRET|inside',
                    path: 'race',
                    output_mode: modes[index % 3],
                  });
            expect(search.text).not.toContain(secret);
            if (!search.json.error && search.json.total_count >= 1) counts.ok++;
            else counts.refused++;
          }
          await finish(counts);
        }, 300_000);
      });
    },
  );
}
