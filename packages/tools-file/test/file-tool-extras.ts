// Tests of this package's file tools that run on every backend next to the shared conformance
// suite (bound in file-tool-suite.ts): files bigger than a sandbox's exec output cap and a symlink
// planted where write_file puts its temporary file.
import { randomUUID } from 'node:crypto';
import type { SandboxV1 } from '@shears/core';
import { fileToolRunner } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileTools, type FileToolsSettings } from '../src/index.js';

export interface FileToolExtrasHooks {
  acquire(): Promise<SandboxV1>;
  release?(sandbox: SandboxV1): Promise<void>;
}

const createTools = (settings?: Record<string, unknown>) => createFileTools(settings as FileToolsSettings);

/** 30,000 lines, about 2.2 MB: more than twice @shears/tools-terminal's 1,000,000-byte output cap. */
function bigText(): string {
  return Array.from({ length: 30_000 }, (_, index) => `line ${index + 1} ${'x'.repeat(60)}\n`).join('');
}

const formatted = (from: number, count: number) =>
  Array.from(
    { length: count },
    (_, index) => `${String(from + index).padStart(6, ' ')}|line ${from + index} ${'x'.repeat(60)}`,
  ).join('\n');

export function describeFileToolExtras(
  name: string,
  hooks: FileToolExtrasHooks | undefined,
  skipReason?: string,
): void {
  describe.skipIf(!hooks)(`file tools (extras) on ${name}${skipReason ? ` (${skipReason})` : ''}`, () => {
    let sandbox: SandboxV1;
    let run: ReturnType<typeof fileToolRunner>;
    const sh = async (command: string) => {
      const result = await sandbox.exec(command, { cwd: sandbox.workdir });
      if (result.exitCode !== 0)
        throw new Error(`setup command failed (${result.exitCode}): ${command}\n${result.output}`);
      return result.stdout;
    };

    beforeAll(async () => {
      sandbox = await hooks!.acquire();
      run = fileToolRunner(createTools, sandbox);
    });
    afterAll(async () => {
      if (sandbox) await (hooks!.release ? hooks!.release(sandbox) : sandbox.dispose());
    });

    describe('files bigger than the sandbox output cap', () => {
      const text = bigText();

      it('read_file shows the right lines and line count of a 2.2 MB, 30,000-line file', async () => {
        expect(Buffer.byteLength(text)).toBeGreaterThan(2_000_000);
        const write = await run('write_file', { path: 'big/huge.txt', content: text });
        expect(write.json.bytes_written).toBe(Buffer.byteLength(text));
        const end = await run('read_file', { path: 'big/huge.txt', offset: 29_991, limit: 10 });
        expect(end.json.content).toBe(formatted(29_991, 10));
        expect(end.json.total_lines).toBe(30_000);
        expect(end.json.file_size).toBe(Buffer.byteLength(text));
        expect(end.json.truncated).toBe(false);
        // The middle is what a cut output loses.
        const middle = await run('read_file', { path: 'big/huge.txt', offset: 15_000, limit: 3 });
        expect(middle.json.content).toBe(formatted(15_000, 3));
        expect(middle.json.hint).toBe(
          'Use offset=15003 to continue reading (showing 15000-15002 of 30000 lines)',
        );
        // Paged with sed (file bigger than wholeReadBytes): the same lines.
        const paged = fileToolRunner(createTools, sandbox, { wholeReadBytes: 1024 });
        const sedPage = await paged('read_file', { path: 'big/huge.txt', offset: 15_000, limit: 3 });
        expect(sedPage.json.content).toBe(formatted(15_000, 3));
        expect(sedPage.json.total_lines).toBe(30_000);
      });

      it('patch edits the middle of the 2.2 MB file and leaves every other byte alone', async () => {
        const patch = await run('patch', {
          mode: 'replace',
          path: 'big/huge.txt',
          old_string: 'line 15000 x',
          new_string: 'line 15000 EDITED x',
        });
        expect(patch.json.error).toBeUndefined();
        expect(patch.json.success).toBe(true);
        expect(patch.json.diff).toContain('+line 15000 EDITED x');
        const expected = text.replace('line 15000 x', 'line 15000 EDITED x');
        const onDisk = Buffer.from(
          await sandbox.readFile(`${sandbox.workdir.replace(/\/+$/, '')}/big/huge.txt`),
        ).toString('utf8');
        expect(onDisk.length).toBe(expected.length);
        expect(onDisk === expected).toBe(true);
        await sh('rm -rf big');
      });
    });

    describe('write_file temporary file', () => {
      it('does not follow a symlink planted where a predictable temporary name would be', async () => {
        const outside = `${sandbox.tempDir.replace(/\/+$/, '')}/planted-${randomUUID()}`;
        await sh(`mkdir -p planted '${outside}'`);
        // The tools once wrote to `.shears-write.$$.tmp`: `$$` is the persistent shell's pid on
        // the shell-session backends, or a fresh pid shortly after the current one. Plant a
        // dangling link to a path outside the workspace under every such name.
        await sh(
          `base=$(sh -c 'echo $$'); { echo "$$"; echo "$PPID"; seq "$base" "$((base + 2000))"; } |
  sed 's|.*|${outside}/.shears-write.&.tmp|' | xargs sh -c 'ln -s "$@" planted/' sh`,
        );
        const write = await run('write_file', { path: 'planted/target.txt', content: 'inside\n' });
        expect(write.json).toEqual({ bytes_written: 7, dirs_created: false });
        expect(await sh(`ls -A '${outside}'`)).toBe('');
        expect(
          await sh('if [ -L planted/target.txt ]; then echo link; else cat planted/target.txt; fi'),
        ).toBe('inside\n');
        // mktemp makes 0600 files; a new file still gets the mode the umask gives.
        expect(await sh('stat -c %a planted/target.txt')).toBe(
          await sh(`printf '%o\\n' $(( 0666 & ~0$(umask) ))`),
        );
        await sh(`rm -rf planted '${outside}'`);
      });
    });
  });
}
