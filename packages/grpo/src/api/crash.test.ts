// Crash test: a writer process posts groups while the server process is killed with SIGKILL and
// restarted several times; a trainer pulls batches throughout. Every group acknowledged with
// 200 must be served exactly once.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { rawRequest } from '../../test/http.js';

const packageDirectory = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const nodeArguments = ['--import', 'tsx', '--conditions=@shears/source'];
const children: ChildProcess[] = [];
const directory = mkdtempSync(join(tmpdir(), 'shears-crash-'));

afterAll(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(directory, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function startServer(port: number, databasePath: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...nodeArguments, 'src/server-main.ts'], {
    cwd: packageDirectory,
    env: {
      ...process.env,
      SHEARS_API_PORT: String(port),
      SHEARS_API_DB: databasePath,
      SHEARS_API_DECODE_WORKERS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('"listening"')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before listening: ${errors}`)));
  });
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

it('serves every acknowledged group exactly once across kill -9 restarts', { timeout: 300_000 }, async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const databasePath = join(directory, 'api.sqlite');
  let server = await startServer(port, databasePath);
  expect(
    (
      await rawRequest(url, '/register', {
        body: {
          wandb_group: 'g',
          wandb_project: 'p',
          batch_size: 8,
          max_token_len: 64,
          checkpoint_dir: 'c',
          save_checkpoint_interval: 1,
          starting_step: 0,
          num_steps: 1000,
        },
      })
    ).status,
  ).toBe(200);

  const total = 400;
  const acknowledged = new Set<number>();
  const writer = spawn(process.execPath, [...nodeArguments, 'test/crash-writer.ts', url, String(total)], {
    cwd: packageDirectory,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(writer);
  let writerOutput = '';
  writer.stdout?.on('data', (chunk: Buffer) => {
    writerOutput += chunk.toString();
    for (const match of writerOutput.matchAll(/ack (\d+)\n/g)) acknowledged.add(Number(match[1]));
  });
  const writerDone = new Promise<void>((resolve) => writer.once('exit', () => resolve()));

  const served: number[] = [];
  let pulling = true;
  const trainer = (async () => {
    while (pulling) {
      try {
        const response = await rawRequest(url, '/batch');
        const batch = (response.json as { batch?: { group_overrides: { id: number } }[] | null } | undefined)
          ?.batch;
        if (Array.isArray(batch) && batch.length > 0)
          for (const item of batch) served.push(item.group_overrides.id);
        else await new Promise((resolve) => setTimeout(resolve, 20));
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  })();

  const ackedAtCrash: number[] = [];
  for (let crash = 0; crash < 5; crash++) {
    // Let the writer make progress against this incarnation, then kill at a random moment.
    const before = acknowledged.size;
    for (let waited = 0; acknowledged.size < Math.min(total, before + 10) && waited < 15_000; waited += 20)
      await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 150));
    ackedAtCrash.push(acknowledged.size);
    await kill(server);
    server = await startServer(port, databasePath);
  }
  await writerDone;
  expect(writerOutput).toContain('done');
  // Drain what is left, then stop pulling.
  for (let idle = 0; idle < 300 && served.length < total; idle++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  pulling = false;
  await trainer;
  await kill(server);

  // The crashes really happened while the writer was writing.
  expect(
    ackedAtCrash.filter((count) => count > 0 && count < total).length,
    `acks at each crash: ${ackedAtCrash.join(', ')}`,
  ).toBeGreaterThanOrEqual(3);
  expect(acknowledged.size).toBe(total);
  const duplicates = served.filter((id, index) => served.indexOf(id) !== index);
  expect(duplicates).toEqual([]);
  expect([...acknowledged].filter((id) => !served.includes(id))).toEqual([]);
});
