// `--cluster` / the `cluster` section refused before anything starts, naming what is wrong: a
// malformed address, a command without a cluster mode, and a head that does not answer.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
