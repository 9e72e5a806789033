// The file-tool conformance suite (read_file, write_file, patch, search_files with
// hermes-agent's formats, plus a hostile-path suite): the same behaviour over every sandbox
// backend. The tools come from the caller (usually the factory of @shears/tools-file), so a
// third-party sandbox or file-tool implementation can run it too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../contracts/logger.js';
import type { SandboxV1 } from '../contracts/sandbox.js';
import type { ToolContext, ToolOutput, ToolV1 } from '../contracts/tool.js';

/** Builds the four file tools from settings (`confine`, `maxReadChars`, ...). */
export type FileToolsFactory = (settings?: Record<string, unknown>) => ToolV1[];

export interface FileToolSuiteHooks {
  acquire(): Promise<SandboxV1>;
  release?(sandbox: SandboxV1): Promise<void>;
  createTools: FileToolsFactory;
}

function toolContext(sandbox: SandboxV1): ToolContext {
  return {
    sandbox,
    taskId: 'task',
    rolloutId: 'rollout',
    signal: new AbortController().signal,
    logger: silentLogger,
    state: new Map(),
  };
}

/** Calls file tools by name and parses their JSON results. */
export function fileToolRunner(
  createTools: FileToolsFactory,
  sandbox: SandboxV1,
  settings: Record<string, unknown> = {},
) {
  const tools = new Map(createTools(settings).map((tool) => [tool.name, tool]));
  return async (
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ json: Record<string, any>; text: string; output: ToolOutput }> => {
    const tool = tools.get(name);
    if (!tool)
      throw new Error(
        `file-tool suite: the factory made no tool "${name}" (made: ${[...tools.keys()].join(', ')})`,
      );
    const parsed = tool.inputSchema.parse(args);
    const raw = await tool.execute(parsed, toolContext(sandbox));
    const output = typeof raw === 'string' ? { content: raw } : raw;
    const text = output.content;
    const jsonEnd = text.indexOf('\n\n[Hint:');
    return { json: JSON.parse(jsonEnd >= 0 ? text.slice(0, jsonEnd) : text), text, output };
  };
}

export function describeFileToolSuite(
  name: string,
  hooks: FileToolSuiteHooks | undefined,
  skipReason?: string,
): void {
  describe.skipIf(!hooks)(`file tools on ${name}${skipReason ? ` (${skipReason})` : ''}`, () => {
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
      run = fileToolRunner(hooks!.createTools, sandbox);
    });
    afterAll(async () => {
      if (sandbox) await (hooks!.release ? hooks!.release(sandbox) : sandbox.dispose());
    });

    describe('write_file and read_file', () => {
      it('creates parent directories and reads back with %6d| line numbers', async () => {
        const write = await run('write_file', {
          path: 'deep/nested/dir/hello.txt',
          content: 'alpha\nbeta\ngamma\n',
        });
        expect(write.json).toEqual({ bytes_written: 17, dirs_created: true });
        const again = await run('write_file', {
          path: 'deep/nested/dir/hello.txt',
          content: 'alpha\nbeta\ngamma\n',
        });
        expect(again.json.dirs_created).toBe(false);
        const read = await run('read_file', { path: 'deep/nested/dir/hello.txt' });
        expect(read.json.content).toBe('     1|alpha\n     2|beta\n     3|gamma');
        expect(read.json.total_lines).toBe(3);
        expect(read.json.file_size).toBe(17);
        expect(read.json.truncated).toBe(false);
        expect(await sh('cat deep/nested/dir/hello.txt')).toBe('alpha\nbeta\ngamma\n');
      });

      it('pages with offset and limit and says how to continue', async () => {
        const lines = Array.from({ length: 30 }, (_, index) => `line ${index + 1}`).join('\n');
        await run('write_file', { path: 'paged.txt', content: `${lines}\n` });
        const page = await run('read_file', { path: 'paged.txt', offset: 11, limit: 5 });
        expect(page.json.content.split('\n')).toEqual([
          '    11|line 11',
          '    12|line 12',
          '    13|line 13',
          '    14|line 14',
          '    15|line 15',
        ]);
        expect(page.json.truncated).toBe(true);
        expect(page.json.hint).toBe('Use offset=16 to continue reading (showing 11-15 of 30 lines)');
        const past = await run('read_file', { path: 'paged.txt', offset: 100 });
        expect(past.json.content).toBeUndefined();
        expect(past.json.hint).toContain('past the end');
        const clamped = await run('read_file', { path: 'paged.txt', offset: 0, limit: 99999 });
        expect(clamped.json.content.startsWith('     1|line 1\n')).toBe(true);
      });

      it('pages a file with offset and limit, giving the same lines and hint', async () => {
        const small = fileToolRunner(hooks!.createTools, sandbox);
        const page = await small('read_file', { path: 'paged.txt', offset: 11, limit: 5 });
        expect(page.json.content.split('\n')).toEqual([
          '    11|line 11',
          '    12|line 12',
          '    13|line 13',
          '    14|line 14',
          '    15|line 15',
        ]);
        expect(page.json.hint).toBe('Use offset=16 to continue reading (showing 11-15 of 30 lines)');
        expect(page.json.file_size).toBe(231);
      });

      it('cuts very long lines and refuses reads over the character limit', async () => {
        await run('write_file', { path: 'long.txt', content: `${'x'.repeat(2500)}\nshort\n` });
        const read = await run('read_file', { path: 'long.txt' });
        expect(read.json.content).toBe(`     1|${'x'.repeat(2000)}... [truncated]\n     2|short`);
        const big = Array.from({ length: 1500 }, () => 'y'.repeat(150)).join('\n');
        await run('write_file', { path: 'big.txt', content: big });
        const refused = await run('read_file', { path: 'big.txt', limit: 2000 });
        expect(refused.output.isError).toBe(true);
        expect(refused.json.error).toMatch(
          /^Read produced 236,999 characters which exceeds the safety limit \(100,000 chars\)\. Use offset and limit/,
        );
        expect(refused.json.total_lines).toBe(1500);
      });

      it('keeps non-ASCII text intact', async () => {
        const text = 'naïve café — 日本語 😀\n';
        const write = await run('write_file', { path: 'unicode.txt', content: text });
        expect(write.json.bytes_written).toBe(Buffer.byteLength(text));
        const read = await run('read_file', { path: 'unicode.txt' });
        expect(read.json.content).toBe('     1|naïve café — 日本語 😀');
      });

      it('says a file is missing and suggests similar names', async () => {
        await run('write_file', { path: 'src/config.json', content: '{}\n' });
        const read = await run('read_file', { path: 'src/config.jsn' });
        expect(read.output.isError).toBe(true);
        expect(read.json.error).toBe('File not found: src/config.jsn');
        expect(read.json.similar_files).toContain('src/config.json');
      });

      it('detects binary content and refuses binary extensions and directories', async () => {
        await sh(`printf '\\000\\001\\002\\003binary\\377\\376' > blob.dat`);
        const binary = await run('read_file', { path: 'blob.dat' });
        expect(binary.json.error).toMatch(/^Binary file - cannot display as text/);
        const image = await run('read_file', { path: 'picture.png' });
        expect(image.json.error).toBe(
          "Cannot read binary file 'picture.png' (.png). Use vision_analyze for images, or terminal to inspect binary files.",
        );
        const directory = await run('read_file', { path: 'deep' });
        expect(directory.json.error).toMatch(/it is a directory/);
      });

      it('replaces atomically, keeping the mode and writing through an inside symlink', async () => {
        await run('write_file', { path: 'script.sh', content: '#!/bin/sh\necho one\n' });
        await sh('chmod 755 script.sh && ln -s script.sh link.sh');
        await run('write_file', { path: 'link.sh', content: '#!/bin/sh\necho two\n' });
        expect(await sh('./script.sh')).toBe('two\n');
        expect(await sh('[ -L link.sh ] && echo still-a-link')).toBe('still-a-link\n');
        expect((await sh('ls -a')).includes('.shears-write')).toBe(false);
        expect((await sh(`ls -a '${sandbox.tempDir}'`)).includes('shears-upload')).toBe(false);
      });

      it('refuses sensitive system paths', async () => {
        const relaxed = fileToolRunner(hooks!.createTools, sandbox, { confine: false });
        const etc = await relaxed('write_file', { path: '/etc/hosts', content: 'x' });
        expect(etc.json.error).toBe(
          'Refusing to write to sensitive system path: /etc/hosts\nUse the terminal tool with sudo if you need to modify system files.',
        );
        const ssh = await relaxed('write_file', { path: '/root/.ssh/authorized_keys', content: 'x' });
        expect(ssh.json.error).toBe(
          "Write denied: '/root/.ssh/authorized_keys' is a protected system/credential file.",
        );
      });
    });

    describe('patch', () => {
      it('replaces a unique string and returns a unified diff', async () => {
        await run('write_file', {
          path: 'app.py',
          content: 'def greet():\n    return "hello"\n\nprint(greet())\n',
        });
        const patched = await run('patch', {
          path: 'app.py',
          old_string: 'return "hello"',
          new_string: 'return "hi"',
        });
        expect(patched.json.success).toBe(true);
        expect(patched.json.files_modified).toEqual(['app.py']);
        expect(patched.json.diff).toContain('-    return "hello"\n+    return "hi"');
        expect(await sh('cat app.py')).toBe('def greet():\n    return "hi"\n\nprint(greet())\n');
      });

      it('refuses an ambiguous match unless replace_all, and explains a missing one', async () => {
        await run('write_file', { path: 'dup.txt', content: 'x = 1\ny = 2\nx = 1\n' });
        const ambiguous = await run('patch', { path: 'dup.txt', old_string: 'x = 1', new_string: 'x = 3' });
        expect(ambiguous.json.error).toBe(
          'Found 2 matches for old_string. Provide more context to make it unique, or use replace_all=True.',
        );
        const all = await run('patch', {
          path: 'dup.txt',
          old_string: 'x = 1',
          new_string: 'x = 3',
          replace_all: true,
        });
        expect(all.json.success).toBe(true);
        expect(await sh('cat dup.txt')).toBe('x = 3\ny = 2\nx = 3\n');
        const missing = await run('patch', { path: 'dup.txt', old_string: 'z = 9', new_string: 'z = 0' });
        expect(missing.output.isError).toBe(true);
        expect(missing.json._hint).toBe(
          'old_string not found. Use read_file to verify the current content, or search_files to locate the text.',
        );
        const missingFile = await run('patch', { path: 'nope.txt', old_string: 'a', new_string: 'b' });
        expect(missingFile.json.error).toBe('File not found: nope.txt');
      });

      it('tolerates whitespace and indentation drift', async () => {
        await run('write_file', {
          path: 'indent.py',
          content: 'class A:\n    def f(self):\n        x = 1   \n        return x\n',
        });
        const drifted = await run('patch', {
          path: 'indent.py',
          old_string: 'def f(self):\n    x = 1\n    return x',
          new_string: 'def f(self):\n    x = 2\n    return x',
        });
        expect(drifted.json.success).toBe(true);
        expect(await sh('cat indent.py')).toBe(
          'class A:\n    def f(self):\n        x = 2\n        return x\n',
        );
        await run('write_file', { path: 'quotes.txt', content: 'say \u201chello\u201d now\n' });
        const smart = await run('patch', {
          path: 'quotes.txt',
          old_string: 'say "hello" now',
          new_string: 'say "bye" now',
        });
        expect(smart.json.success).toBe(true);
      });

      it('keeps CRLF line endings', async () => {
        await sh(`printf 'one\\r\\ntwo\\r\\n' > crlf.txt`);
        const patched = await run('patch', {
          path: 'crlf.txt',
          old_string: 'one\ntwo',
          new_string: 'one\n2',
        });
        expect(patched.json.success).toBe(true);
        expect(await sh('od -c crlf.txt | head -1')).toContain('o   n   e  \\r  \\n   2  \\r  \\n');
      });

      it('applies a V4A patch over several files', async () => {
        await run('write_file', { path: 'v4a/a.txt', content: 'one\ntwo\nthree\n' });
        await run('write_file', { path: 'v4a/gone.txt', content: 'bye\n' });
        await run('write_file', { path: 'v4a/old.txt', content: 'moving\n' });
        const patch = [
          '*** Begin Patch',
          '*** Update File: v4a/a.txt',
          '@@ one @@',
          ' two',
          '-three',
          '+THREE',
          '*** Add File: v4a/new/b.txt',
          '+fresh',
          '+file',
          '*** Delete File: v4a/gone.txt',
          '*** Move File: v4a/old.txt -> v4a/moved.txt',
          '*** End Patch',
        ].join('\n');
        const result = await run('patch', { mode: 'patch', patch });
        expect(result.json.success).toBe(true);
        expect(result.json.files_modified).toEqual(['v4a/a.txt']);
        expect(result.json.files_created).toEqual(['v4a/new/b.txt', 'v4a/moved.txt']);
        expect(result.json.files_deleted).toEqual(['v4a/gone.txt', 'v4a/old.txt']);
        expect(await sh('cat v4a/a.txt v4a/new/b.txt v4a/moved.txt')).toBe(
          'one\ntwo\nTHREE\nfresh\nfile\nmoving\n',
        );
        expect(await sh('ls v4a')).toBe('a.txt\nmoved.txt\nnew\n');
      });

      it('writes nothing when any operation of a patch fails validation', async () => {
        await run('write_file', { path: 'atomic/a.txt', content: 'keep\n' });
        const patch = [
          '*** Begin Patch',
          '*** Update File: atomic/a.txt',
          '-keep',
          '+changed',
          '*** Update File: atomic/a.txt',
          '-not there',
          '+x',
          '*** End Patch',
        ].join('\n');
        const result = await run('patch', { mode: 'patch', patch });
        expect(result.json.error).toMatch(/^Patch failed for atomic\/a.txt: hunk 1 does not match/);
        expect(await sh('cat atomic/a.txt')).toBe('keep\n');
        const bad = await run('patch', { mode: 'patch', patch: 'hello' });
        expect(bad.json.error).toMatch(/^Invalid patch/);
      });

      it('applies a unified diff', async () => {
        await run('write_file', { path: 'ud/main.c', content: 'int main() {\n  return 1;\n}\n' });
        const diff = [
          '--- a/ud/main.c',
          '+++ b/ud/main.c',
          '@@ -1,3 +1,3 @@',
          ' int main() {',
          '-  return 1;',
          '+  return 0;',
          ' }',
          '',
        ].join('\n');
        const result = await run('patch', { mode: 'patch', patch: diff });
        expect(result.json.success).toBe(true);
        expect(await sh('cat ud/main.c')).toBe('int main() {\n  return 0;\n}\n');
      });
    });

    describe('search_files', () => {
      beforeAll(async () => {
        await run('write_file', {
          path: 'proj/src/main.ts',
          content: 'export function main() {\n  return helper(42);\n}\n',
        });
        await run('write_file', {
          path: 'proj/src/helper.ts',
          content: 'export function helper(n: number) {\n  return n * 2;\n}\n',
        });
        await run('write_file', { path: 'proj/README.md', content: '# Project\nCall main() to start.\n' });
        await run('write_file', { path: 'proj/.hidden/secret.ts', content: 'export function hidden() {}\n' });
      });

      it('finds content with line numbers', async () => {
        const result = await run('search_files', { pattern: 'function \\w+\\(', path: 'proj' });
        expect(result.json.total_count).toBe(2);
        expect(result.json.matches).toEqual(
          expect.arrayContaining([
            { path: 'proj/src/main.ts', line: 1, content: 'export function main() {' },
            { path: 'proj/src/helper.ts', line: 1, content: 'export function helper(n: number) {' },
          ]),
        );
        const glob = await run('search_files', { pattern: 'main', path: 'proj', file_glob: '*.md' });
        expect(glob.json.matches).toEqual([
          { path: 'proj/README.md', line: 2, content: 'Call main() to start.' },
        ]);
      });

      it('supports files_only, count and context', async () => {
        const files = await run('search_files', {
          pattern: 'return',
          path: 'proj',
          output_mode: 'files_only',
        });
        expect([...files.json.files].sort()).toEqual(['proj/src/helper.ts', 'proj/src/main.ts']);
        const counts = await run('search_files', {
          pattern: 'return|export',
          path: 'proj/src',
          output_mode: 'count',
        });
        expect(counts.json.counts).toEqual({ 'proj/src/helper.ts': 2, 'proj/src/main.ts': 2 });
        const context = await run('search_files', { pattern: 'helper\\(42', path: 'proj/src', context: 1 });
        expect(context.json.matches.map((match: { line: number }) => match.line)).toEqual([1, 2, 3]);
      });

      it('finds files by glob', async () => {
        const result = await run('search_files', { pattern: '*.ts', target: 'files', path: 'proj' });
        expect([...result.json.files].sort()).toEqual(['proj/src/helper.ts', 'proj/src/main.ts']);
        await sh('touch -d "2020-01-01 00:00:00" proj/src/helper.ts && touch proj/src/main.ts');
        const newestFirst = await run('search_files', { pattern: '*.ts', target: 'files', path: 'proj/src' });
        expect(newestFirst.json.files).toEqual(['proj/src/main.ts', 'proj/src/helper.ts']);
        const bare = await run('search_files', { pattern: 'help', target: 'find', path: 'proj' });
        expect(bare.json.files).toEqual(['proj/src/helper.ts']);
      });

      it('pages results and hints at the next offset', async () => {
        for (let index = 0; index < 7; index++)
          await run('write_file', { path: `many/f${index}.txt`, content: 'needle\n' });
        const first = await run('search_files', { pattern: 'needle', path: 'many', limit: 3 });
        expect(first.json.matches).toHaveLength(3);
        expect(first.json.truncated).toBe(true);
        expect(
          first.text.endsWith(
            '\n\n[Hint: Results truncated. Use offset=3 to see more, or narrow with a more specific pattern or file_glob.]',
          ),
        ).toBe(true);
        const last = await run('search_files', { pattern: 'needle', path: 'many', limit: 3, offset: 6 });
        expect(last.json.matches).toHaveLength(1);
        expect(last.json.truncated).toBe(false);
      });

      it('reports a missing path and a broken regex', async () => {
        const missing = await run('search_files', { pattern: 'x', path: 'proj/srcc' });
        expect(missing.json.error).toBe('Path not found: proj/srcc. Similar paths: src');
        const broken = await run('search_files', { pattern: 'foo(', path: 'proj' });
        expect(broken.json.error).toMatch(/^Search failed: /);
      });
    });

    describe('hostile paths', () => {
      beforeAll(async () => {
        await sh('mkdir -p inside && echo inside > inside/ok.txt');
        await sh(
          'ln -s / rootlink && ln -s /etc/passwd passwdlink && ln -s ../../../../../../../../etc escape-dir && ln -s inside/ok.txt goodlink',
        );
      });
      const refused = async (tool: string, args: Record<string, unknown>, pattern: RegExp) => {
        const result = await run(tool, args);
        expect(result.output.isError, JSON.stringify(result.json)).toBe(true);
        expect(result.json.error).toMatch(pattern);
      };

      it('refuses traversal and absolute paths outside the workspace', async () => {
        await refused(
          'read_file',
          { path: '../../../../etc/passwd' },
          /^Access denied: .* is outside the sandbox workspace/,
        );
        await refused('read_file', { path: 'inside/../../x' }, /outside the sandbox workspace/);
        await refused('read_file', { path: '/etc/passwd' }, /outside the sandbox workspace/);
        await refused('write_file', { path: '../escape.txt', content: 'x' }, /outside the sandbox workspace/);
        await refused('search_files', { pattern: 'root', path: '/etc' }, /outside the sandbox workspace/);
        await refused(
          'patch',
          { path: '/etc/hosts', old_string: 'a', new_string: 'b' },
          /outside the sandbox workspace/,
        );
        await refused('read_file', { path: '~/.bashrc' }, /outside the sandbox workspace/);
        const fine = await run('read_file', { path: 'inside/../inside/ok.txt' });
        expect(fine.json.content).toBe('     1|inside');
      });

      it('refuses symlinks that point out of the workspace, for reads, writes and searches', async () => {
        await refused(
          'read_file',
          { path: 'passwdlink' },
          /resolves to .*passwd, outside the sandbox workspace .*symlinks may not point out/,
        );
        await refused('read_file', { path: 'rootlink/etc/passwd' }, /outside the sandbox workspace/);
        await refused('read_file', { path: 'escape-dir/hostname' }, /outside the sandbox workspace/);
        await refused(
          'write_file',
          { path: 'rootlink/tmp/shears-escape.txt', content: 'x' },
          /outside the sandbox workspace/,
        );
        await refused(
          'write_file',
          { path: 'escape-dir/new/file.txt', content: 'x' },
          /outside the sandbox workspace/,
        );
        await refused(
          'search_files',
          { pattern: 'root', path: 'rootlink/etc' },
          /outside the sandbox workspace/,
        );
        await refused(
          'patch',
          { mode: 'patch', patch: '*** Begin Patch\n*** Add File: rootlink/tmp/x.txt\n+x\n*** End Patch' },
          /outside the sandbox workspace/,
        );
        expect(await sh('[ -e /tmp/shears-escape.txt ] && echo leaked || echo clean')).toBe('clean\n');
        const good = await run('read_file', { path: 'goodlink' });
        expect(good.json.content).toBe('     1|inside');
      });

      it('refuses symlink loops and dangling symlinks that lead out', async () => {
        await sh('ln -s loop-a loop-b && ln -s loop-b loop-a && ln -s /nonexistent-shears/target dangling');
        await refused('read_file', { path: 'loop-a' }, /broken or loops|outside the sandbox workspace/);
        await refused(
          'write_file',
          { path: 'dangling', content: 'x' },
          /broken or loops|outside the sandbox workspace/,
        );
        await refused(
          'write_file',
          { path: 'loop-a/x.txt', content: 'x' },
          /broken or loops|outside the sandbox workspace|not a directory/,
        );
      });

      it('refuses NUL bytes, control characters, over-long paths and text that is not UTF-8', async () => {
        await refused('read_file', { path: 'inside/ok.txt\0.png' }, /contains a NUL byte/);
        await refused('write_file', { path: 'bad\nname.txt', content: 'x' }, /contains control characters/);
        await refused('read_file', { path: 'a/'.repeat(2100) }, /is 4200 bytes long \(the limit is 4096\)/);
        await refused(
          'write_file',
          { path: `${'n'.repeat(300)}.txt`, content: 'x' },
          /longer than 255 bytes/,
        );
        await refused('write_file', { path: 'bad-\ud800-name.txt', content: 'x' }, /not valid UTF-8/);
        await refused('read_file', { path: 'latin1-\ufffd.txt' }, /not valid UTF-8/);
        await refused('read_file', { path: '' }, /non-empty/);
      });

      it('lists files whose names are not UTF-8 without breaking', async () => {
        await sh(`mkdir -p weird && printf 'needle\\n' > "weird/$(printf 'caf\\351.txt')"`);
        const found = await run('search_files', { pattern: 'needle', path: 'weird' });
        expect(found.json.total_count).toBe(1);
        expect(found.json.matches[0].path).toMatch(/^weird\/caf/);
        // The name comes back with U+FFFD in it; using it as a path is refused clearly.
        await refused('read_file', { path: found.json.matches[0].path }, /not valid UTF-8/);
      });

      it('allows outside paths when confinement is relaxed for trusted local use', async () => {
        const relaxed = fileToolRunner(hooks!.createTools, sandbox, { confine: false });
        const read = await relaxed('read_file', { path: 'passwdlink' });
        expect(read.json.content).toMatch(/^\s+1\|root:/);
      });
    });
  });
}
