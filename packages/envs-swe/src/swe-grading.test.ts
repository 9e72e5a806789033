// Grading on a process sandbox over a temp directory (host node runs the JavaScript tasks), so the
// grading logic is tested without Docker; the Docker run over every bundled task is in
// swe-env.docker.test.ts.
import { cpSync, rmSync } from 'node:fs';
import type { SandboxV1 } from '@shears/core';
import { createTempSandboxProvider } from '@shears/core/test';
import { afterAll, describe, expect, it } from 'vitest';
import { filesAfterPatch, type PreparedRepository, prepareRepository } from './repo.js';
import { gradeSweRollout } from './swe-grading.js';
import { bundledTaskPackDir, loadTaskPack } from './task-loaders.js';
import type { SweTask } from './task-schema.js';

const tasks = loadTaskPack(bundledTaskPackDir()).filter((task) => task.language === 'javascript');
const provider = createTempSandboxProvider();
const prepared = new Map<string, PreparedRepository>();
afterAll(async () => {
  await provider.close();
  for (const repository of prepared.values()) repository.dispose();
});

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

  it('gives partial credit when asked', async () => {
    const task = tasks.find((entry) => entry.failToPass.length >= 1 && entry.passToPass.length >= 1)!;
    const { sandbox, repository } = await sandboxFor(task);
    const grade = await gradeSweRollout({
      sandbox,
      task,
      protectedFiles: repository.protectedFiles,
      partialCredit: true,
    });
    expect(grade.score).toBeCloseTo(grade.failToPass.passed / grade.failToPass.total, 12);
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
});
