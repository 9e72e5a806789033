// The child runner behind `prepare --trainer` (venv, pip install): a long command is never silent.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runChild } from './trainer-env.js';

const dir = mkdtempSync(join(tmpdir(), 'shears-run-child-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('runChild heartbeat', () => {
  it('says how long a command has run, again and again while it runs, and stops when it ends', async () => {
    const release = join(dir, 'release');
    // The child runs until the test has heard two heartbeats (no timing assumed).
    const waitForFile = `const { existsSync } = require('node:fs'); const t = setInterval(() => { if (existsSync(${JSON.stringify(release)})) { clearInterval(t); console.log('done'); } }, 5);`;
    const beats: number[] = [];
    const result = await runChild(process.execPath, ['-e', waitForFile], {
      heartbeat: {
        everyMs: 20,
        note: (elapsed) => {
          beats.push(elapsed);
          if (beats.length === 2 && !existsSync(release)) writeFileSync(release, '');
        },
      },
    });
    expect(result.code).toBe(0);
    expect(result.output).toBe('done');
    expect(beats.length).toBeGreaterThanOrEqual(2);
    expect(beats[1]!).toBeGreaterThan(beats[0]!);
    const heard = beats.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(beats).toHaveLength(heard);
  });
});
