import { access, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError, SandboxError } from '../errors.js';
import { createTempSandboxProvider } from './temp-sandbox-provider.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'shears-temp-provider-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('createTempSandboxProvider', () => {
  it('gives each sandbox its own workspace and removes it on dispose', async () => {
    const provider = createTempSandboxProvider({ root });
    const first = await provider.acquire({ env: { GREETING: 'hi' } });
    const second = await provider.acquire();
    expect(provider.liveCount).toBe(2);
    await first.writeFile('a/b.txt', 'data');
    expect(new TextDecoder().decode(await first.readFile('a/b.txt'))).toBe('data');
    const listed = await first.exec('cat a/b.txt; echo " $GREETING"; pwd');
    expect(listed).toMatchObject({ exitCode: 0, timedOut: false });
    expect(listed.stdout).toBe(`data hi\n${first.workdir}\n`);
    expect((await second.exec('test -e a/b.txt')).exitCode).toBe(1);
    await first.dispose();
    await first.dispose();
    await expect(access(first.workdir)).rejects.toThrow();
    await expect(first.exec('true')).rejects.toSatisfy((error) => SandboxError.isInstance(error));
    await provider.close();
    expect(provider.liveCount).toBe(0);
    expect(await readdir(root)).toEqual([]);
  });

  it('kills the whole process group on timeout with exit 124', async () => {
    const provider = createTempSandboxProvider({ root });
    const sandbox = await provider.acquire();
    const result = await sandbox.exec(
      '(sleep 37.123; echo child-survived > survived.txt) & echo started; sleep 37.123',
      { timeoutMs: 200 },
    );
    expect(result).toMatchObject({ exitCode: 124, timedOut: true });
    expect(result.output).toContain('started');
    const check = await sandbox.exec('sleep 0.3; ps -eo args | grep -c "[s]leep 37.123" || true');
    expect(check.stdout.trim()).toBe('0');
    await provider.close();
  });

  it('rejects with AbortedError when the exec signal aborts, and fails a broken setup', async () => {
    const provider = createTempSandboxProvider({ root });
    const sandbox = await provider.acquire();
    const controller = new AbortController();
    const running = sandbox.exec('sleep 30', { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(running).rejects.toSatisfy((error) => AbortedError.isInstance(error));
    await expect(provider.acquire({ setup: ['exit 3'] })).rejects.toThrow(
      /setup command 1 of 1 failed \(exit 3\): exit 3/,
    );
    expect(provider.liveCount).toBe(1);
    await provider.close();
    expect(await readdir(root)).toEqual([]);
  });
});
