// `shears api` end to end: the real trajectory API server started by the command, real HTTP.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 60_000 });

const root = mkdtempSync(join(tmpdir(), 'shears-api-e2e-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Starts `shears api` with the given arguments; resolves once it listens. */
async function startApi(args: string[], cwd: string) {
  const controller = new AbortController();
  let announce: (url: string) => void = () => {};
  const listening = new Promise<string>((resolve) => {
    announce = resolve;
  });
  const running = runShears(['api', '--port', '0', ...args], {
    cwd,
    signal: controller.signal,
    onStdout: (text) => {
      const match = /listening on (\S+)/.exec(text);
      if (match) announce(match[1]!);
    },
  });
  const url = await Promise.race([
    listening,
    running.then((run) => {
      throw new Error(`shears api exited with ${run.code}: ${run.stderr}`);
    }),
  ]);
  return {
    url,
    async stop() {
      controller.abort();
      return running;
    },
  };
}

const group = (score: number) => ({
  tokens: [
    [1, 2, 3],
    [1, 2, 4],
  ],
  masks: [
    [-100, 2, 3],
    [-100, 2, 4],
  ],
  scores: [score, -score],
});

function postGroup(url: string, body: unknown) {
  return fetch(`${url}/scored_data`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function queueSize(url: string): Promise<number> {
  const status = (await (await fetch(`${url}/status`)).json()) as { queue_size: number };
  return status.queue_size;
}

describe('shears api', () => {
  it('keeps its queue in shears-trajectory-api.sqlite by default, so a restart loses no group', async () => {
    const cwd = mkdtempSync(join(root, 'default-'));
    const first = await startApi([], cwd);
    expect((await postGroup(first.url, group(1))).status).toBe(200);
    expect(await queueSize(first.url)).toBe(1);
    expect((await first.stop()).code).toBe(0);
    expect(existsSync(join(cwd, 'shears-trajectory-api.sqlite'))).toBe(true);

    const second = await startApi([], cwd);
    try {
      expect(await queueSize(second.url)).toBe(1);
    } finally {
      await second.stop();
    }
  });

  it('applies the server limits of the api section: past api.max_queued_groups posts get 429 with api.retry_after_seconds', async () => {
    const cwd = mkdtempSync(join(root, 'limits-'));
    const api = await startApi(
      ['--api.database', ':memory:', '--api.max_queued_groups', '1', '--api.retry_after_seconds', '7'],
      cwd,
    );
    try {
      expect((await postGroup(api.url, group(1))).status).toBe(200);
      const refused = await postGroup(api.url, group(2));
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('7');
      expect(await queueSize(api.url)).toBe(1);
    } finally {
      await api.stop();
    }
  });

  it('names the bad value of a server limit', async () => {
    const run = await runShears(['api', '--api.batch_order', 'random'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/api\.batch_order: .*"fifo", "lifo"/);
  });

  it('keeps everything in memory with api.database ":memory:" (nothing written, nothing kept)', async () => {
    const cwd = mkdtempSync(join(root, 'memory-'));
    const first = await startApi(['--api.database', ':memory:'], cwd);
    expect((await postGroup(first.url, group(1))).status).toBe(200);
    await first.stop();
    expect(existsSync(join(cwd, 'shears-trajectory-api.sqlite'))).toBe(false);
    const second = await startApi(['--api.database', ':memory:'], cwd);
    try {
      expect(await queueSize(second.url)).toBe(0);
    } finally {
      await second.stop();
    }
  });
});
