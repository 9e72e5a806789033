// `shears api` end to end: the real trajectory API server started by the command, real HTTP.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
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

// The real `shears` executable (from source through tsx), as a user starts it.
const bin = join(import.meta.dirname, '..', 'bin.ts');
// tsx by absolute path: the command runs in a temporary folder, where `--import tsx` would not resolve.
const tsx = createRequire(import.meta.url).resolve('tsx');
function spawnShears(
  args: string[],
  cwd: string,
): { child: ChildProcess; output: () => { stdout: string; stderr: string }; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--conditions=@shears/source', '--import', tsx, bin, ...args], {
    cwd,
    env: { ...process.env, CI: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => ({ stdout, stderr }), exited };
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let waited = 0; waited < 60_000; waited += 50) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('shears api: its queue file and its errors, through the real command', () => {
  it('prints the absolute database path, and says when it resumed a non-empty queue (how many groups, how old)', async () => {
    const cwd = mkdtempSync(join(root, 'path-'));
    const first = await startApi(['--api.database', 'queues/api.sqlite'], cwd);
    expect((await postGroup(first.url, group(1))).status).toBe(200);
    expect((await postGroup(first.url, group(2))).status).toBe(200);
    const firstRun = await first.stop();
    // The folder did not exist: it is created, as for run.out.
    expect(firstRun.stdout).toContain(`queue database: ${join(cwd, 'queues', 'api.sqlite')} (empty)`);
    const second = spawnShears(['api', '--port', '0', '--api.database', 'queues/api.sqlite'], cwd);
    try {
      await waitFor(() => /listening on/.test(second.output().stdout), 'the second start');
      expect(second.output().stdout).toContain(`queue database: ${join(cwd, 'queues', 'api.sqlite')}`);
      expect(second.output().stdout).toMatch(
        /resumed a non-empty queue from an earlier run: 2 groups \(2 queued, 0 buffered, 0 formed batches not yet served; oldest received \d+ s ago\)/,
      );
    } finally {
      second.child.kill('SIGINT');
      await second.exited;
    }
  });

  it('refuses a second server on the same queue file, naming the file and the other process', async () => {
    const cwd = mkdtempSync(join(root, 'lock-'));
    const first = spawnShears(['api', '--port', '0'], cwd);
    try {
      await waitFor(() => /listening on/.test(first.output().stdout), 'the first server');
      const second = await runShears(['api', '--port', '0'], { cwd });
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(join(cwd, 'shears-trajectory-api.sqlite'));
      expect(second.stderr).toContain(`in use by process ${first.child.pid}`);
      expect(second.stderr).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      first.child.kill('SIGINT');
      expect(await first.exited).toBe(0);
    }
    // Once the first has stopped the file is free again.
    const again = await startApi([], cwd);
    expect(await queueSize(again.url)).toBe(0);
    await again.stop();
  });

  it('says which port is in use instead of a stack trace, and exits 1', async () => {
    const cwd = mkdtempSync(join(root, 'port-'));
    const blocker = createServer();
    const port = await new Promise<number>((resolve) =>
      blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)),
    );
    try {
      const run = spawnShears(['api', '--port', String(port), '--api.database', ':memory:'], cwd);
      expect(await run.exited).toBe(1);
      expect(run.output().stderr).toContain(`cannot listen on 127.0.0.1:${port}: the port is in use`);
      expect(run.output().stderr).not.toMatch(/\n\s+at /);
    } finally {
      blocker.close();
    }
  });

  it('names a database path it cannot create', async () => {
    const cwd = mkdtempSync(join(root, 'bad-path-'));
    writeFileSync(join(cwd, 'notes'), 'a file, not a folder\n');
    const run = await runShears(['api', '--port', '0', '--api.database', 'notes/api.sqlite'], { cwd });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `Cannot open the trajectory API queue ${join(cwd, 'notes', 'api.sqlite')}: cannot create the folder ${join(cwd, 'notes')}: a file is in the way`,
    );
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
