// The file-tool suite over @shears/tools-terminal's local sandbox backend, with the racing
// confinement attacks, and a workspace that is itself a symlink re-pointed mid-rollout.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxProviderV1 } from '@shears/core';
import { fileToolRunner } from '@shears/core/test';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { createFileTools, type FileToolsSettings } from '../src/index.js';
import { describeFileToolSuite } from './file-tool-suite.js';

let provider: SandboxProviderV1 | undefined;
afterAll(async () => {
  await provider?.close();
});

describeFileToolSuite(
  'the local sandbox backend',
  {
    acquire: async () => {
      provider ??= createLocalSandboxProvider();
      return provider.acquire();
    },
  },
  undefined,
  { race: true },
);

describe('a workspace that is itself a symlink (local backend)', () => {
  it('stays pinned to the directory it pointed to when the first file-tool call ran', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'shears-pin-')));
    const local = createLocalSandboxProvider();
    try {
      mkdirSync(join(root, 'real-ws'));
      mkdirSync(join(root, 'elsewhere'));
      writeFileSync(join(root, 'elsewhere', 'f.txt'), 'SECRET-elsewhere\n');
      symlinkSync(join(root, 'real-ws'), join(root, 'ws'));
      const sandbox = await local.acquire({ workdir: join(root, 'ws') });
      const run = fileToolRunner((settings) => createFileTools(settings as FileToolsSettings), sandbox);
      expect((await run('write_file', { path: 'a.txt', content: 'one\n' })).json.bytes_written).toBe(4);
      // The agent re-points the workspace link at another directory.
      rmSync(join(root, 'ws'));
      symlinkSync(join(root, 'elsewhere'), join(root, 'ws'));
      const read = await run('read_file', { path: 'f.txt' });
      expect(read.json.error).toBe('File not found: f.txt');
      expect((await run('read_file', { path: join(root, 'ws', 'f.txt') })).text).not.toContain('SECRET');
      const search = await run('search_files', { pattern: 'SECRET' });
      expect(search.text).not.toContain('SECRET');
      expect((await run('read_file', { path: 'a.txt' })).json.content).toBe('     1|one');
      expect((await run('write_file', { path: 'b.txt', content: 'two\n' })).json.bytes_written).toBe(4);
      expect(readFileSync(join(root, 'real-ws', 'b.txt'), 'utf8')).toBe('two\n');
      expect(readdirSync(join(root, 'elsewhere'))).toEqual(['f.txt']);
      await sandbox.dispose();
    } finally {
      await local.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
