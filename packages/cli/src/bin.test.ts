// The `shears` executable itself (spawned from source through tsx): usage, exit codes, stderr.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const bin = join(import.meta.dirname, 'bin.ts');
const shears = (...args: string[]) =>
  spawnSync(process.execPath, ['--conditions=@shears/source', '--import', 'tsx', bin, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, CI: 'true' },
  });

describe('shears bin', () => {
  it('prints usage with every command and exits 0 for --help', () => {
    const result = shears('--help');
    expect(result.status).toBe(0);
    for (const command of ['process', 'serve', 'evaluate', 'api', 'train', 'view', 'doctor', 'schema'])
      expect(result.stdout).toContain(`  ${command}`);
  });

  it('exits 2 with a message on stderr for a bad flag', () => {
    const result = shears('process', '--gropus', '2');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Unknown flag --gropus');
  });
}, 120_000);
