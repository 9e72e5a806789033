// Atropos' clients are Python: this runs test/atropos_python_client.py (the example trainer's
// and BaseEnv's calls, in order, through `requests` or urllib) against `shears api` and checks
// what Python's own json module made of the answers.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { startTrajectoryApiServer } from './trajectory-api-server.js';

const script = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test', 'atropos_python_client.py');
const directory = mkdtempSync(join(tmpdir(), 'shears-api-python-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

it('serves a Python trainer and a Python env walking the Atropos flow unchanged', {
  timeout: 60_000,
}, async () => {
  const api = await startTrajectoryApiServer({
    port: 0,
    databasePath: join(directory, 'api.sqlite'),
    decodeWorkers: 1,
  });
  try {
    const { stdout } = await promisify(execFile)('python3', [script, api.url], { timeout: 50_000 }).catch(
      (error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`python client failed: ${error.stderr || error.stdout || error.message}`);
      },
    );
    const seen = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
    expect(seen.uuid_bits).toBeGreaterThan(64);
    expect(seen.batches).toBe(2);
    expect(seen.current_step).toBe(2);
    // The example trainer's normalisation of scores [0, 1, 2, 3].
    expect(seen.advantages_group0).toEqual([-1.341641, -0.447214, 0.447214, 1.341641]);
    if (seen.library === 'requests') expect(seen.batch_encodings).toEqual(['gzip', 'gzip']);
  } finally {
    await api.close();
  }
});
