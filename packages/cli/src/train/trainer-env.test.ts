// `shears doctor` on the reference trainer's environment (train.reference): the interpreter runs,
// torch and shears_trainer import, the installed versions are those trainers/pyproject.toml pins.
// Against real interpreters: the repository's .venv (scripts/setup-python.sh) and the system python3.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';
import { trainerSource } from './reference-trainer.js';
import { TRAINER_STAMP, trainerPins, trainerSourceHash } from './trainer-env.js';

vi.setConfig({ testTimeout: 180_000 });

const repoRoot = join(import.meta.dirname, '..', '..', '..', '..');
const venvPython = join(repoRoot, '.venv', 'bin', 'python');
const dir = mkdtempSync(join(tmpdir(), 'shears-trainer-env-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function doctor(reference: string, env: Record<string, string | undefined> = {}) {
  writeFileSync(
    join(dir, 'train.yaml'),
    `env: { name: demo }\ntrain: { reference: { model: ./m, ${reference} } }\n`,
  );
  return runShears(['doctor', '--config', 'train.yaml'], { cwd: dir, env: { ...process.env, ...env } });
}

describe('shears doctor: the reference trainer environment', () => {
  it('finds the repository trainers/ and reads its pins', () => {
    const source = trainerSource({});
    expect(source).toBe(join(repoRoot, 'trainers'));
    expect(trainerPins(source!)).toMatchObject({
      torch: '2.13.0',
      transformers: '5.18.0',
      'shears-trainer': '0.1.0',
    });
  });

  it('passes the prepared environment, names its versions', async () => {
    const run = await doctor(`python: ${JSON.stringify(venvPython)}`);
    expect(run.stdout).toMatch(
      /✓ trainer\s+\S+\/\.venv\/bin\/python: Python 3\.\d+\.\d+, torch 2\.13\.0\S*, transformers 5\.18\.0, shears-trainer 0\.1\.0 \(the pinned versions\)/,
    );
  });

  it('fails a missing venv, an interpreter without the trainer, and a version other than the pin, with the fix', async () => {
    const missing = await doctor('venv: no-venv');
    expect(missing.stdout).toMatch(
      /✗ trainer\s+the trainer's Python \S+\/no-venv\/bin\/python does not exist/,
    );
    expect(missing.stdout).toMatch(/fix: run `shears prepare --trainer`/);
    expect(missing.code).toBe(1);

    const bare = await doctor('python: python3');
    expect(bare.stdout).toMatch(
      /✗ trainer\s+python3 \(Python 3\.\d+\.\d+\) cannot import the trainer: ModuleNotFoundError/,
    );
    expect(bare.stdout).toMatch(/fix: install the trainer into train\.reference\.python/);

    // The same venv against a source that pins another torch: the mismatch is named.
    const source = join(dir, 'trainers');
    mkdirSync(join(source, 'shears_trainer'), { recursive: true });
    writeFileSync(
      join(source, 'pyproject.toml'),
      readFileSync(join(repoRoot, 'trainers', 'pyproject.toml'), 'utf8').replace(
        '"torch==2.13.0"',
        '"torch==2.99.0"',
      ),
    );
    const other = await doctor(`python: ${JSON.stringify(venvPython)}`, { SHEARS_TRAINER_SOURCE: source });
    expect(other.stdout).toMatch(/✗ trainer\s+\S+: torch 2\.13\.0\S* \(pinned 2\.99\.0\)/);
    expect(other.code).toBe(1);
  });

  it('prepare --trainer keeps an up-to-date venv (its stamp matches the source) and refuses an interpreter it does not manage', async () => {
    // An environment `prepare --trainer` made earlier: the real interpreter, the stamp it writes.
    // (Creating one from scratch installs torch from the index: not run in the tests.)
    const venv = join(dir, 'kept-venv');
    mkdirSync(join(venv, 'bin'), { recursive: true });
    writeFileSync(join(venv, 'bin', 'python'), `#!/bin/sh\nexec ${JSON.stringify(venvPython)} "$@"\n`, {
      mode: 0o755,
    });
    writeFileSync(join(venv, TRAINER_STAMP), `${trainerSourceHash(trainerSource({})!)}\n`);
    writeFileSync(
      join(dir, 'prep.yaml'),
      'env: { name: demo }\ntrain: { reference: { model: ./m, venv: kept-venv } }\n',
    );
    const kept = await runShears(['prepare', '--config', 'prep.yaml', '--trainer'], {
      cwd: dir,
      env: { ...process.env },
    });
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toMatch(
      /trainer environment \S+\/kept-venv kept in [\d.]+ s: Python 3\.\d+\.\d+, torch 2\.13\.0/,
    );

    writeFileSync(
      join(dir, 'own.yaml'),
      'env: { name: demo }\ntrain: { reference: { model: ./m, python: python3 } }\n',
    );
    const own = await runShears(['prepare', '--config', 'own.yaml', '--trainer'], {
      cwd: dir,
      env: { ...process.env },
    });
    expect(own.code).not.toBe(0);
    expect(own.stderr).toContain(
      'train.reference.python (python3) names an interpreter shears does not manage',
    );

    // --cluster ray: Ray into the same environment, at the pin of trainers/pyproject.toml (pip
    // finds it installed); another engine is refused.
    const ray = await runShears(['prepare', '--config', 'prep.yaml', '--cluster', 'ray'], {
      cwd: dir,
      env: { ...process.env },
    });
    expect(ray.code, ray.stderr).toBe(0);
    expect(ray.stderr).toMatch(/installing ray==2\.58\.0 into \S+\/kept-venv\/bin\/python \(pip\)/);
    expect(ray.stdout).toMatch(
      /ray 2\.58\.0 in \S+\/kept-venv \(the pin of \S+\/trainers\/pyproject\.toml\)/,
    );
    const slurm = await runShears(['prepare', '--config', 'prep.yaml', '--cluster', 'slurm'], {
      cwd: dir,
      env: { ...process.env },
    });
    expect(slurm.code).not.toBe(0);
    expect(slurm.stderr).toContain('--cluster slurm: shears prepare installs a cluster engine');

    const wrong = await runShears(['prepare', '--config', 'prep.yaml', '--trainer'], {
      cwd: dir,
      env: { ...process.env, SHEARS_TRAINER_SOURCE: join(dir, 'nowhere') },
    });
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain(
      "is not the trainer's source (no pyproject.toml and shears_trainer/ there)",
    );
  });
});
