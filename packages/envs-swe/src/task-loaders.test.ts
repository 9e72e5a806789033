import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { prepareRepository } from './repo.js';
import {
  bundledTaskPackDir,
  gradingTestPaths,
  loadSweBenchJsonl,
  loadTaskFolder,
  loadTaskPack,
  loadTaskPackPackage,
  patchedFiles,
} from './task-loaders.js';
import { sweTaskSchema } from './task-schema.js';

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
      // every test id names a visible or a hidden test file, and a hidden test is among FAIL_TO_PASS
      for (const id of [...task.failToPass, ...task.passToPass])
        expect([...task.testFiles, ...Object.keys(task.hiddenTests)]).toContain(id.split('::')[0]);
      expect(
        task.failToPass.some((id) => id.split('::')[0]! in task.hiddenTests),
        task.id,
      ).toBe(true);
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
    expect(Object.keys(tasks[0]!.hiddenTests)).toEqual(['test/add.hidden.test.js']);
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

  it('finds the files a patch touches, added and deleted ones too, and no hunk line posing as a header', () => {
    expect(patchedFiles('--- a/a.py\n+++ b/a.py\n@@\n--- a/b/c.js\n+++ b/b/c.js\n')).toEqual([
      'a.py',
      'b/c.js',
    ]);
    const patch = [
      'diff --git a/tests/old.py b/tests/old.py',
      'deleted file mode 100644',
      '--- a/tests/old.py',
      '+++ /dev/null',
      '@@ -1,2 +0,0 @@',
      '--- a SQL comment removed',
      '-x = 1',
      'diff --git a/tests/new.py b/tests/new.py',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/tests/new.py\t(date)',
      '@@ -0,0 +1 @@',
      '+y = 1',
      '',
    ].join('\n');
    expect(patchedFiles(patch)).toEqual(['tests/old.py', 'tests/new.py']);
  });
});

describe('tests the agent never sees', () => {
  function taskFolder(): string {
    const folder = join(mkdtempSync(join(tmpdir(), 'shears-hidden-')), 'fix-calc');
    mkdirSync(join(folder, 'repo', 'tests'), { recursive: true });
    mkdirSync(join(folder, 'hidden', 'tests', 'deep'), { recursive: true });
    writeFileSync(join(folder, 'repo', 'calc.py'), 'def add(a, b):\n    return a - b\n');
    writeFileSync(
      join(folder, 'repo', 'tests', 'test_calc.py'),
      'from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n',
    );
    writeFileSync(join(folder, 'repo', 'tests', 'test_old.py'), 'def test_old():\n    pass\n');
    writeFileSync(
      join(folder, 'hidden', 'tests', 'deep', 'test_hidden.py'),
      'def test_hidden():\n    pass\n',
    );
    writeFileSync(
      join(folder, 'test.patch'),
      [
        'diff --git a/tests/test_calc.py b/tests/test_calc.py',
        '--- a/tests/test_calc.py',
        '+++ b/tests/test_calc.py',
        '@@ -2,3 +2,6 @@ from calc import add',
        ' ',
        ' def test_add():',
        '     assert add(1, 1) == 2',
        '+',
        '+def test_add_more():',
        '+    assert add(2, 3) == 5',
        'diff --git a/tests/test_old.py b/tests/test_old.py',
        'deleted file mode 100644',
        '--- a/tests/test_old.py',
        '+++ /dev/null',
        '@@ -1,2 +0,0 @@',
        '-def test_old():',
        '-    pass',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(folder, 'task.json'),
      JSON.stringify({
        problem_statement: 'add subtracts',
        FAIL_TO_PASS: ['tests/test_calc.py::test_add_more', 'tests/deep/test_hidden.py::test_hidden'],
        test_files: ['tests/test_calc.py'],
        protected_paths: ['vendor/**'],
        allowed_paths: ['setup.cfg'],
      }),
    );
    return folder;
  }

  it('loads hidden/ and the path rules of task.json', () => {
    const task = loadTaskFolder(taskFolder());
    expect(task.hiddenTests).toEqual({ 'tests/deep/test_hidden.py': 'def test_hidden():\n    pass\n' });
    expect(task).toMatchObject({ protectedPaths: ['vendor/**'], allowedPaths: ['setup.cfg'] });
    expect(gradingTestPaths(task)).toEqual([
      'tests/deep/test_hidden.py',
      'tests/test_calc.py',
      'tests/test_old.py',
    ]);
  });

  it('refuses hidden test paths outside the repository or inside .git', () => {
    const base = {
      id: 'x',
      repo: { path: '/r' },
      problemStatement: 'p',
      test: { runner: 'pytest' },
      failToPass: ['a'],
    };
    for (const path of ['../escape.py', '/abs.py', 'a/../../b.py', '.git/hooks/pre-commit', 'a//b.py']) {
      const parsed = sweTaskSchema.safeParse({ ...base, hiddenTests: { [path]: '' } });
      expect(parsed.success, path).toBe(false);
      expect(parsed.error?.issues[0]?.message, path).toContain('relative path inside the repository');
    }
  });

  it('prepares grading-time files (the test patch applied on the host, the hidden tests) and keeps them out of the repository', async () => {
    const task = loadTaskFolder(taskFolder());
    const prepared = await prepareRepository(task);
    try {
      expect([...prepared.gradingFiles.keys()].sort()).toEqual([
        'tests/deep/test_hidden.py',
        'tests/test_calc.py',
        'tests/test_old.py',
      ]);
      expect(prepared.gradingFiles.get('tests/test_old.py')).toBeNull();
      expect(prepared.gradingFiles.get('tests/test_calc.py')?.toString()).toContain('def test_add_more():');
      // The repository that becomes the task image has neither.
      const { existsSync, readFileSync } = await import('node:fs');
      expect(existsSync(join(prepared.dir, 'tests/deep/test_hidden.py'))).toBe(false);
      expect(readFileSync(join(prepared.dir, 'tests/test_calc.py'), 'utf8')).not.toContain('test_add_more');
      expect(existsSync(join(prepared.dir, 'tests/test_old.py'))).toBe(true);
    } finally {
      prepared.dispose();
    }
  });
});
