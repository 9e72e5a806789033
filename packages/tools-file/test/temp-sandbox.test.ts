// The file-tool suite over a temp-dir sandbox with the host's tools (ripgrep) and with nothing
// but busybox on PATH (the grep/find fallbacks an Alpine or busybox image takes), and the file
// tools over a sandbox whose exec output is capped smaller than the files it holds.
import type { SandboxV1 } from '@shears/core';
import { fileToolRunner } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileTools, type FileToolsSettings } from '../src/index.js';
import { describeFileToolSuite } from './file-tool-suite.js';
import { createTempSandbox, hasBusybox } from './temp-sandbox.js';

describeFileToolSuite('a temp-dir sandbox (host tools)', { acquire: async () => createTempSandbox() });
describeFileToolSuite(
  'a temp-dir sandbox (busybox only)',
  hasBusybox() ? { acquire: async () => createTempSandbox({ busyboxOnly: true }) } : undefined,
  hasBusybox() ? undefined : 'busybox is not installed',
);

/** Keeps 40% head / 60% tail of stdout and says what it cut, the way @shears/tools-terminal does. */
function capStdout(sandbox: SandboxV1, maxBytes: number): SandboxV1 {
  return {
    ...sandbox,
    async exec(command, options) {
      const result = await sandbox.exec(command, options);
      const bytes = Buffer.from(result.stdout, 'utf8');
      if (bytes.length <= maxBytes) return result;
      const head = bytes.subarray(0, Math.floor(maxBytes * 0.4));
      const tail = bytes.subarray(bytes.length - Math.floor(maxBytes * 0.6));
      const omitted = bytes.length - head.length - tail.length;
      const stdout = `${head.toString('utf8')}\n\n... [OUTPUT TRUNCATED - ${omitted} bytes omitted out of ${bytes.length} total] ...\n\n${tail.toString('utf8')}`;
      return { ...result, stdout, output: stdout };
    },
  };
}

describe('file tools on a sandbox whose exec output is capped at 64 KB', () => {
  let inner: ReturnType<typeof createTempSandbox>;
  let run: ReturnType<typeof fileToolRunner>;
  // 5,000 lines, 155 KB: read inline (under 256 KiB) but more than the cap.
  const text = Array.from({ length: 5000 }, (_, index) => `row ${index + 1} ${'y'.repeat(20)}\n`).join('');
  beforeAll(async () => {
    inner = createTempSandbox();
    run = fileToolRunner(
      (settings) => createFileTools(settings as FileToolsSettings),
      capStdout(inner, 64 * 1024),
    );
    await inner.writeFile('rows.txt', text);
  });
  afterAll(async () => {
    await inner?.dispose();
  });

  it('read_file notices the cut and fetches the exact lines another way', async () => {
    const read = await run('read_file', { path: 'rows.txt', offset: 2500, limit: 2 });
    expect(read.json.content).toBe(`  2500|row 2500 ${'y'.repeat(20)}\n  2501|row 2501 ${'y'.repeat(20)}`);
    expect(read.json.total_lines).toBe(5000);
  });

  it('patch rewrites the file exactly', async () => {
    const patch = await run('patch', {
      mode: 'replace',
      path: 'rows.txt',
      old_string: 'row 2500 y',
      new_string: 'ROW 2500 y',
    });
    expect(patch.json.success).toBe(true);
    const onDisk = Buffer.from(await inner.readFile('rows.txt')).toString('utf8');
    expect(onDisk === text.replace('row 2500 y', 'ROW 2500 y')).toBe(true);
  });

  it('reads lines without the temp dir, and patch refuses clearly when it cannot fetch the file uncut', async () => {
    await inner.exec(`rm -rf '${inner.tempDir}'`);
    try {
      // read_file brings back only the lines asked for: no temp file needed.
      const read = await run('read_file', { path: 'rows.txt', offset: 2500, limit: 2 });
      expect(read.json.content).toBe(`  2500|ROW 2500 ${'y'.repeat(20)}\n  2501|row 2501 ${'y'.repeat(20)}`);
      const patch = await run('patch', {
        mode: 'replace',
        path: 'rows.txt',
        old_string: 'row 1 y',
        new_string: 'ROW 1 y',
      });
      expect(patch.json.error).toMatch(/^The sandbox temp dir was moved or replaced/);
      expect(
        Buffer.from(await inner.readFile('rows.txt'))
          .toString('utf8')
          .startsWith('row 1 y'),
      ).toBe(true);
    } finally {
      await inner.exec(`mkdir -p '${inner.tempDir}'`);
    }
  });
});
