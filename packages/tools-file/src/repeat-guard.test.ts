import { silentLogger, type ToolContext, type ToolV1 } from '@shears/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createTempSandbox } from '../test/temp-sandbox.js';
import { createFileTools } from './index.js';

describe('repeated identical reads and searches', () => {
  const sandbox = createTempSandbox();
  afterAll(() => sandbox.dispose());
  const context: ToolContext = {
    sandbox,
    taskId: 't',
    rolloutId: 'r',
    signal: new AbortController().signal,
    logger: silentLogger,
    state: new Map(),
  };
  const tools = new Map(createFileTools().map((tool) => [tool.name, tool as ToolV1]));
  const run = async (name: string, args: Record<string, unknown>) => {
    const tool = tools.get(name)!;
    const output = await tool.execute(tool.inputSchema.parse(args), context);
    return JSON.parse(typeof output === 'string' ? output : output.content.split('\n\n[Hint:')[0]!);
  };

  it('warns on the third identical read and blocks the fourth; a change to the file or a write resets it', async () => {
    await run('write_file', { path: 'a.txt', content: 'one\n' });
    expect((await run('read_file', { path: 'a.txt' }))._warning).toBeUndefined();
    expect((await run('read_file', { path: 'a.txt' }))._warning).toBeUndefined();
    expect((await run('read_file', { path: 'a.txt' }))._warning).toMatch(
      /read this exact range 3 times in a row/,
    );
    expect((await run('read_file', { path: 'a.txt' })).error).toMatch(
      /^BLOCKED: You have read a\.txt \(offset=1, limit=500\) 4 times in a row/,
    );
    await sandbox.exec("printf 'two\\n' > a.txt", { cwd: sandbox.workdir });
    expect((await run('read_file', { path: 'a.txt' })).content).toBe('     1|two');
    await run('read_file', { path: 'a.txt' });
    await run('write_file', { path: 'b.txt', content: 'x' });
    expect((await run('read_file', { path: 'a.txt' })).content).toBe('     1|two');
    expect((await run('read_file', { path: 'a.txt', offset: 1, limit: 10 })).content).toBe('     1|two');
  });

  it('does the same for searches', async () => {
    for (let index = 0; index < 2; index++)
      expect((await run('search_files', { pattern: 'two' }))._warning).toBeUndefined();
    expect((await run('search_files', { pattern: 'two' }))._warning).toMatch(/exact search 3 times/);
    expect((await run('search_files', { pattern: 'two' })).error).toMatch(
      /^BLOCKED: You have run this exact search 4 times/,
    );
    expect((await run('search_files', { pattern: 'one' })).total_count).toBe(0);
  });
});
