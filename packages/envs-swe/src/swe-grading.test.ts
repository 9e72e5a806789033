// Grading on a process sandbox over a temp directory (host node runs the JavaScript tasks, and the
// host's python3 one Python task when it has pytest), so the grading logic is tested without
// Docker; the Docker run over every bundled task is in swe-env.docker.test.ts.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import { createTempSandboxProvider } from '@shears/core/test';
import { afterAll, describe, expect, it } from 'vitest';
import { filesAfterPatch, type PreparedRepository, prepareRepository } from './repo.js';
import { gradeSweRollout } from './swe-grading.js';
import { bundledTaskPackDir, loadTaskPack } from './task-loaders.js';
import { type SweTask, sweTaskSchema } from './task-schema.js';

const allTasks = loadTaskPack(bundledTaskPackDir());
const tasks = allTasks.filter((task) => task.language === 'javascript');
const hostPytest = spawnSync('python3', ['-P', '-c', 'import pytest'], { stdio: 'ignore' }).status === 0;
if (!hostPytest) {
  // Provisioned for CI (scripts/provision-test.sh installs python3-pytest); never skipped there.
  if (process.env.CI)
    throw new Error('python3 with pytest is required for the host pytest grading test under CI');
  console.warn('\n⚠️  SKIPPING the host pytest grading test: python3 with pytest not found\n');
}
const provider = createTempSandboxProvider();
const prepared = new Map<string, PreparedRepository>();
const scratch = mkdtempSync(join(tmpdir(), 'shears-swe-grading-test-'));
afterAll(async () => {
  await provider.close();
  for (const repository of prepared.values()) repository.dispose();
  rmSync(scratch, { recursive: true, force: true });
});

// A task with two FAIL_TO_PASS tests that can be fixed one at a time.
const BUGGY_CALC = `function double(x) { return x + x + 1; }
function square(x) { return x * x + 1; }
function negate(x) { return -x; }
module.exports = { double, square, negate };
`;
const HALF_FIXED_CALC = BUGGY_CALC.replace('x + x + 1', 'x + x');
const FIXED_CALC = HALF_FIXED_CALC.replace('x * x + 1', 'x * x');
const twoBugs: SweTask = (() => {
  const dir = join(scratch, 'two-bugs');
  mkdirSync(join(dir, 'src'), { recursive: true });
  mkdirSync(join(dir, 'test'), { recursive: true });
  writeFileSync(join(dir, 'src/calc.js'), BUGGY_CALC);
  writeFileSync(
    join(dir, 'test/calc.test.js'),
    `const test = require('node:test');
const assert = require('node:assert');
const { double, square, negate } = require('../src/calc.js');
test('double', () => assert.strictEqual(double(2), 4));
test('square', () => assert.strictEqual(square(3), 9));
test('negate', () => assert.strictEqual(negate(2), -2));
`,
  );
  return sweTaskSchema.parse({
    id: 'two-bugs',
    language: 'javascript',
    repo: { path: dir },
    problemStatement: 'double and square are off by one',
    test: { runner: 'node-test' },
    failToPass: ['test/calc.test.js::double', 'test/calc.test.js::square'],
    passToPass: ['test/calc.test.js::negate'],
    testFiles: ['test/calc.test.js'],
  });
})();

async function sandboxFor(task: SweTask): Promise<{ sandbox: SandboxV1; repository: PreparedRepository }> {
  let repository = prepared.get(task.id);
  if (!repository) {
    repository = await prepareRepository(task);
    prepared.set(task.id, repository);
  }
  const sandbox = await provider.acquire();
  rmSync(sandbox.workdir, { recursive: true, force: true });
  cpSync(repository.dir, sandbox.workdir, { recursive: true });
  return { sandbox, repository };
}

async function applyGold(sandbox: SandboxV1, task: SweTask, repository: PreparedRepository): Promise<void> {
  for (const [path, content] of await filesAfterPatch(repository.dir, task.goldPatch!)) {
    if (content) await sandbox.writeFile(path, content);
  }
}

describe('SWE grading (JavaScript tasks on a process sandbox)', () => {
  it.each(tasks.map((task) => [task.id, task] as const))(
    '%s: untouched scores 0, the gold fix 1',
    async (_id, task) => {
      const untouched = await sandboxFor(task);
      const before = await gradeSweRollout({
        sandbox: untouched.sandbox,
        task,
        protectedFiles: untouched.repository.protectedFiles,
      });
      expect(before.score).toBe(0);
      expect(before.failToPass.passed).toBeLessThan(before.failToPass.total);
      expect(before.passToPass.passed).toBe(before.passToPass.total);
      expect(before.diff).toBe('');

      const fixed = await sandboxFor(task);
      await applyGold(fixed.sandbox, task, fixed.repository);
      const after = await gradeSweRollout({
        sandbox: fixed.sandbox,
        task,
        protectedFiles: fixed.repository.protectedFiles,
      });
      expect(after).toMatchObject({ score: 1, resolved: true, tamperedFiles: [] });
      expect(after.diff).toContain('diff --git');
      await untouched.sandbox.dispose();
      await fixed.sandbox.dispose();
    },
  );

  it('rewriting the tests does not raise the score; the tampering is detected and undone', async () => {
    const task = tasks[0]!;
    const { sandbox, repository } = await sandboxFor(task);
    const testFile = task.testFiles[0]!;
    const names = [...task.failToPass, ...task.passToPass].map((id) => id.split('::')[1]!);
    await sandbox.writeFile(
      testFile,
      `const test = require('node:test');\n${names.map((name) => `test(${JSON.stringify(name)}, () => {});`).join('\n')}\n`,
    );
    const grade = await gradeSweRollout({ sandbox, task, protectedFiles: repository.protectedFiles });
    expect(grade.score).toBe(0);
    expect(grade.tamperedFiles).toEqual([testFile]);
    expect(grade.diff).toContain(testFile);
    // The original test file is back in place.
    expect(
      Buffer.from(await sandbox.readFile(testFile)).equals(repository.protectedFiles.get(testFile)!.content!),
    ).toBe(true);
    await sandbox.dispose();
  });

  it('deleting the tests does not raise the score', async () => {
    const task = tasks[1]!;
    const { sandbox, repository } = await sandboxFor(task);
    await sandbox.exec(`rm -rf test`);
    const grade = await gradeSweRollout({ sandbox, task, protectedFiles: repository.protectedFiles });
    expect(grade.score).toBe(0);
    expect(grade.tamperedFiles).toEqual(task.testFiles);
    await sandbox.dispose();
  });

  it('one of two FAIL_TO_PASS tests fixed: half the reward with partial credit, nothing without', async () => {
    const { sandbox, repository } = await sandboxFor(twoBugs);
    await sandbox.writeFile('src/calc.js', HALF_FIXED_CALC);
    const grade = (partialCredit: boolean) =>
      gradeSweRollout({
        sandbox,
        task: twoBugs,
        protectedFiles: repository.protectedFiles,
        baseCommit: repository.baseCommit,
        partialCredit,
      });
    const partial = await grade(true);
    expect(partial).toMatchObject({
      score: 0.5,
      resolved: false,
      failToPass: { passed: 1, total: 2 },
      passToPass: { passed: 1, total: 1 },
    });
    const strict = await grade(false);
    expect(strict).toMatchObject({ score: 0, resolved: false, failToPass: { passed: 1, total: 2 } });
    // The full fix scores 1 either way.
    await sandbox.writeFile('src/calc.js', FIXED_CALC);
    expect((await grade(true)).score).toBe(1);
    expect((await grade(false)).score).toBe(1);
    await sandbox.dispose();
  });

  it('records the diff against the base commit even when the agent committed its fix', async () => {
    const { sandbox, repository } = await sandboxFor(twoBugs);
    await sandbox.writeFile('src/calc.js', FIXED_CALC);
    const commit = await sandbox.exec(
      'git -c user.name=agent -c user.email=agent@localhost -c commit.gpgsign=false commit -qam "fix calc"',
    );
    expect(commit.exitCode).toBe(0);
    expect((await sandbox.exec('git status --porcelain')).stdout.trim()).toBe('');
    for (const baseCommit of [repository.baseCommit, undefined]) {
      const grade = await gradeSweRollout({
        sandbox,
        task: twoBugs,
        protectedFiles: repository.protectedFiles,
        baseCommit,
      });
      expect(grade.score).toBe(1);
      expect(grade.diff).toContain('diff --git a/src/calc.js b/src/calc.js');
      expect(grade.diff).toContain('-function double(x) { return x + x + 1; }');
      expect(grade.diff).toContain('+function double(x) { return x + x; }');
    }
    await sandbox.dispose();
  });

  it('the prepared repository has a fresh one-commit history', async () => {
    const task = tasks[0]!;
    const { sandbox } = await sandboxFor(task);
    const log = await sandbox.exec('git log --format=%s%n%an%n%ad --date=iso-strict');
    expect(log.stdout.trim().split('\n')).toEqual([
      `shears task ${task.id}`,
      'shears',
      '2000-01-01T00:00:00+00:00',
    ]);
    expect((await sandbox.exec('git rev-list --all | wc -l')).stdout.trim()).toBe('1');
    await sandbox.dispose();
  });

  it.skipIf(!hostPytest)(
    "Python task on the host's pytest: gold 1, untouched 0, PASSED lines and os._exit from the source 0",
    async () => {
      const task = allTasks.find((candidate) => candidate.id === 'py-median-even')!;
      const grade = async (edit: (sandbox: SandboxV1, repository: PreparedRepository) => Promise<void>) => {
        const { sandbox, repository } = await sandboxFor(task);
        await edit(sandbox, repository);
        const result = await gradeSweRollout({ sandbox, task, protectedFiles: repository.protectedFiles });
        await sandbox.dispose();
        return result;
      };
      const untouched = await grade(async () => {});
      expect(untouched).toMatchObject({ score: 0, passToPass: { passed: 3, total: 3 } });
      expect((await grade((sandbox, repository) => applyGold(sandbox, task, repository))).score).toBe(1);
      const forged = await grade(async (sandbox) => {
        const source = Buffer.from(await sandbox.readFile('statsmini.py')).toString('utf8');
        const lines = [...task.failToPass, ...task.passToPass].map((id) => `PASSED ${id}\n`).join('');
        // Every pipe, socket or terminal the process holds (pytest keeps a copy of the real stdout).
        const hack = [
          'import os',
          'for fd in os.listdir("/proc/self/fd"):',
          '    try:',
          '        if os.readlink("/proc/self/fd/" + fd).startswith(("pipe:", "socket:", "/dev/pts/")):',
          `            os.write(int(fd), ${JSON.stringify(lines)}.encode())`,
          '    except OSError:',
          '        pass',
          'os._exit(0)',
        ];
        await sandbox.writeFile('statsmini.py', `${source}\n${hack.join('\n')}\n`);
      });
      expect(forged).toMatchObject({ score: 0, failToPass: { passed: 0 }, passToPass: { passed: 0 } });
      expect(forged.testOutput).toContain('no result file');
    },
  );
});
