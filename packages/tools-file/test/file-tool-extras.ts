// Tests of this package's file tools that run on every backend next to the shared conformance
// suite (bound in file-tool-suite.ts): files bigger than a sandbox's exec output cap, a symlink
// planted where write_file puts its temporary file, and core's persisted tool results
// (`<tempDir>/hermes-results/<id>.txt`) paged with read_file through runAgent.
import { randomUUID } from 'node:crypto';
import { defineTool, runAgent, type SandboxV1 } from '@shears/core';
import { persistedResultPath } from '@shears/core/internal';
import { createScriptedServer, createScriptedServerClient, fileToolRunner } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
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
        // With a scan limit below the file size: the lines within it, marked partial.
        const paged = fileToolRunner(createTools, sandbox, { maxScanBytes: 1024 * 1024 });
        const sedPage = await paged('read_file', { path: 'big/huge.txt', offset: 100, limit: 3 });
        expect(sedPage.json.content).toBe(formatted(100, 3));
        expect(sedPage.json.partial).toBe(true);
        expect(sedPage.json.total_lines).toBeLessThan(30_000);
        const past = await paged('read_file', { path: 'big/huge.txt', offset: 29_991, limit: 10 });
        expect(past.json.content ?? '').toBe('');
        expect(past.json.hint).toMatch(/reads only its first 1048576 bytes/);
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

    describe('persisted tool results (<tempDir>/hermes-results)', () => {
      const lines = Array.from({ length: 3000 }, (_, index) => `result row ${index + 1}`);
      const big = defineTool({
        name: 'big_report',
        description: 'Prints a long report',
        inputSchema: z.object({}),
        maxResultChars: 1000,
        execute: async () => `${lines.join('\n')}\n`,
      });

      it('a result persisted by runAgent can be paged with read_file offset/limit', async () => {
        const id = `call_${randomUUID().slice(0, 8)}`;
        const path = persistedResultPath(sandbox, id);
        const server = await createScriptedServer({
          replies: [
            { toolCalls: [{ id, name: 'big_report', arguments: {} }] },
            {
              toolCalls: [
                { id: 'call_read', name: 'read_file', arguments: { path, offset: 1500, limit: 3 } },
              ],
            },
            { content: 'done' },
          ],
        });
        try {
          const client = createScriptedServerClient({
            baseUrl: server.url,
            model: 'test-model',
            timeoutMs: 10_000,
          });
          const result = await runAgent({
            server: client,
            sandbox,
            tools: [big, ...createTools()],
            messages: [{ role: 'user', content: 'report' }],
          });
          const toolMessages = result.messages.filter((message) => message.role === 'tool');
          expect(toolMessages[0]?.content).toContain('<persisted-output>');
          expect(toolMessages[0]?.content).toContain(`Full output saved to: ${path}\n`);
          const read = JSON.parse(String(toolMessages[1]?.content));
          expect(read.error).toBeUndefined();
          expect(read.content).toBe('  1500|result row 1500\n  1501|result row 1501\n  1502|result row 1502');
          expect(read.total_lines).toBe(3000);
          expect(read.hint).toBe('Use offset=1503 to continue reading (showing 1500-1502 of 3000 lines)');
          expect(result.finalResponse).toBe('done');
        } finally {
          await server.close();
        }
      });

      it('only read_file may go there, and not through symlinks or ..', async () => {
        const root = `${sandbox.tempDir.replace(/\/+$/, '')}/hermes-results`;
        const secret = `${sandbox.tempDir.replace(/\/+$/, '')}/secret-${randomUUID()}.txt`;
        await sh(
          `mkdir -p '${root}' && printf 'top secret\\n' > '${secret}' && printf 'ok\\n' > '${root}/plain.txt'`,
        );
        expect((await run('read_file', { path: `${root}/plain.txt` })).json.content).toBe('     1|ok');
        // A missing result is "not found", not "access denied".
        expect((await run('read_file', { path: `${root}/nope.txt` })).json.error).toBe(
          `File not found: ${root}/nope.txt`,
        );
        await sh(`ln -s '${secret}' '${root}/link.txt'`);
        const viaLink = await run('read_file', { path: `${root}/link.txt` });
        expect(viaLink.json.error).toMatch(/^Access denied: .*symlinks may not point out of the workspace/);
        const dotDot = await run('read_file', {
          path: `${root}/../${secret.slice(secret.lastIndexOf('/') + 1)}`,
        });
        expect(dotDot.json.error).toMatch(/^Access denied: .* is outside the sandbox workspace/);
        const write = await run('write_file', { path: `${root}/new.txt`, content: 'x' });
        expect(write.json.error).toMatch(/^Access denied: .* is outside the sandbox workspace/);
        const patch = await run('patch', {
          mode: 'replace',
          path: `${root}/plain.txt`,
          old_string: 'ok',
          new_string: 'changed',
        });
        expect(patch.json.error).toMatch(/^Access denied: .* is outside the sandbox workspace/);
        expect(await sh(`cat '${root}/plain.txt'`)).toBe('ok\n');
        // hermes-results itself replaced by a symlink to a directory holding the secret.
        await sh(`mv '${root}' '${root}.saved' && ln -s '${sandbox.tempDir}' '${root}'`);
        try {
          const swapped = await run('read_file', {
            path: `${root}/${secret.slice(secret.lastIndexOf('/') + 1)}`,
          });
          expect(swapped.json.error).toMatch(/^Access denied: /);
          expect(swapped.text).not.toContain('top secret');
        } finally {
          await sh(`rm -f '${root}' && mv '${root}.saved' '${root}' && rm -f '${secret}' '${root}/link.txt'`);
        }
      });
    });
  });
}
