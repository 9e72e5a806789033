import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@shears/core';
import { describe, expect, it } from 'vitest';
import {
  bundledTaskPackDir,
  loadSweBenchJsonl,
  loadTaskPack,
  loadTaskPackPackage,
  patchedFiles,
} from './task-loaders.js';

describe('task packs', () => {
  it('loads the bundled pack: at least 12 tasks in Python and JavaScript, each with a gold patch', () => {
    const tasks = loadTaskPack(bundledTaskPackDir());
    expect(tasks.length).toBeGreaterThanOrEqual(12);
    expect(new Set(tasks.map((task) => task.language))).toEqual(new Set(['python', 'javascript']));
    for (const task of tasks) {
      expect(task.goldPatch, task.id).toMatch(/^diff --git a\//);
      expect(task.failToPass.length, task.id).toBeGreaterThan(0);
      expect(task.testFiles.length, task.id).toBeGreaterThan(0);
      expect(task.test.runner).toBe(task.language === 'python' ? 'pytest' : 'node-test');
      // every test id names one of the protected test files
      for (const id of [...task.failToPass, ...task.passToPass])
        expect(task.testFiles).toContain(id.split('::')[0]);
    }
  });

  it('names the file and field of an invalid task', () => {
    const root = mkdtempSync(join(tmpdir(), 'shears-pack-'));
    mkdirSync(join(root, 'broken'));
    writeFileSync(
      join(root, 'broken', 'task.json'),
      JSON.stringify({ problem_statement: 'x', FAIL_TO_PASS: [] }),
    );
    expect(() => loadTaskPack(root)).toThrow(ConfigError);
    expect(() => loadTaskPack(root)).toThrow(
      /broken\/task\.json: failToPass: a task needs at least one FAIL_TO_PASS test/,
    );
    writeFileSync(join(root, 'broken', 'task.json'), '{"problem_statement": ');
    expect(() => loadTaskPack(root)).toThrow(/Invalid JSON in .*broken\/task\.json/);
    expect(() => loadTaskPack(join(root, 'missing'))).toThrow('Task pack folder not found');
  });

  it('loads a task pack published as an npm package by name', () => {
    const tasks = loadTaskPackPackage('shears-swe-pack-example', {
      from: join(import.meta.dirname, '..', '..', '..'),
    });
    expect(tasks.map((task) => task.id)).toEqual(['example-add']);
    expect(() => loadTaskPackPackage('no-such-pack', { from: tmpdir() })).toThrow(
      'Task pack package "no-such-pack" is not installed',
    );
  });
});

describe('SWE-bench JSONL', () => {
  it('maps the SWE-bench field layout', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'shears-swebench-')), 'tasks.jsonl');
    const testPatch =
      'diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1,2 @@\n x\n+y\n';
    writeFileSync(
      file,
      `${JSON.stringify({
        instance_id: 'astropy__astropy-12907',
        repo: 'astropy/astropy',
        base_commit: 'd16bfe05a744909de4b27f5875fe0d4ed41ce607',
        problem_statement: 'Modeling separability is wrong',
        hints_text: '',
        patch: 'diff --git a/x b/x',
        test_patch: testPatch,
        FAIL_TO_PASS: '["tests/test_a.py::test_new"]',
        PASS_TO_PASS: '["tests/test_a.py::test_old"]',
        difficulty: '15 min - 1 hour',
      })}\n\n`,
    );
    const [task] = loadSweBenchJsonl(file);
    expect(task).toMatchObject({
      id: 'astropy__astropy-12907',
      repo: {
        url: 'https://github.com/astropy/astropy.git',
        commit: 'd16bfe05a744909de4b27f5875fe0d4ed41ce607',
      },
      failToPass: ['tests/test_a.py::test_new'],
      passToPass: ['tests/test_a.py::test_old'],
      testFiles: ['tests/test_a.py'],
      difficulty: 'medium',
      test: { runner: 'pytest' },
    });
    expect(task!.hints).toBeUndefined();
    const local = loadSweBenchJsonl(file, { repos: { 'astropy/astropy': '/src/astropy' } });
    expect(local[0]!.repo).toEqual({ path: '/src/astropy' });
    writeFileSync(file, '{"instance_id": "x"}\n');
    expect(() => loadSweBenchJsonl(file)).toThrow(/line 1/);
  });

  it('finds the files a patch touches', () => {
    expect(patchedFiles('--- a/a.py\n+++ b/a.py\n@@\n--- a/b/c.js\n+++ b/b/c.js\n')).toEqual([
      'a.py',
      'b/c.js',
    ]);
  });
});
