// Report parsing, and the runners on the host (a process sandbox over a temp directory: host node,
// host python3 with pytest): results come from the runner's result file, early exits count as
// incomplete, and the pytest launcher's checks catch tricks played from inside the test process
// while leaving ordinary code alone. In Docker, end to end: swe-env.docker.test.ts and
// swe-attacks.docker.test.ts.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import { createTempSandboxProvider } from '@shears/core/test';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledTaskPackDir } from './task-loaders.js';
import {
  parsePytestReport,
  parseTapReport,
  readPytestResultFile,
  runTests,
  shellQuote,
  type TestRunResult,
} from './test-runs.js';

const hostPytest = spawnSync('python3', ['-I', '-c', 'import pytest'], { stdio: 'ignore' }).status === 0;
if (!hostPytest) {
  // Provisioned for CI (scripts/provision-test.sh installs python3-pytest); never skipped there.
  if (process.env.CI)
    throw new Error('python3 with pytest is required for the host pytest runner tests under CI');
  console.warn('\n⚠️  SKIPPING the host pytest runner tests: python3 with pytest not found\n');
}

describe('test report parsing', () => {
  it('reads pytest -rA summaries, set-up errors counting as failures', () => {
    const output = `..FE
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[1-2]
FAILED tests/test_a.py::test_two - AssertionError: assert 3 == 2
ERROR tests/test_a.py::test_three - fixture 'db' not found
PASSED tests/test_a.py::test_four
ERROR tests/test_a.py::test_four - teardown failed
SKIPPED [1] tests/test_a.py:40: no network
========================= 3 passed, 1 failed, 2 errors in 0.05s =========================`;
    expect(Object.fromEntries(parsePytestReport(output))).toEqual({
      'tests/test_a.py::test_one': 'passed',
      'tests/test_a.py::test_param[1-2]': 'passed',
      'tests/test_a.py::test_two': 'failed',
      'tests/test_a.py::test_three': 'failed',
      'tests/test_a.py::test_four': 'failed',
    });
  });

  it('reads top-level TAP results and ignores subtests and skips', () => {
    const output = `TAP version 13
# Subtest: adds
ok 1 - adds
  ---
  duration_ms: 0.5
  ...
# Subtest: group
    # Subtest: inner
    not ok 1 - inner
not ok 2 - group
ok 3 - skipped one # SKIP not today
ok 4 - name with - dash
1..4`;
    expect(Object.fromEntries(parseTapReport(output))).toEqual({
      adds: 'passed',
      group: 'failed',
      'skipped one': 'missing',
      'name with - dash': 'passed',
    });
  });

  it('gives a name reported more than once its worst result, so a second pass cannot hide a failure', () => {
    const output = `ok 1 - fixed
not ok 2 - fixed
ok 3 - skipped later
ok 4 - skipped later # SKIP
not ok 5 - failed first
ok 6 - failed first
ok 7 - twice
ok 8 - twice`;
    expect(Object.fromEntries(parseTapReport(output))).toEqual({
      fixed: 'failed',
      'skipped later': 'missing',
      'failed first': 'failed',
      twice: 'passed',
    });
  });

  it("undoes the escapes node's TAP reporter writes for # and backslash", () => {
    // What node 18 and 20 print for test('a # b \\ c').
    expect([...parseTapReport(String.raw`ok 1 - a \# b \\ c`).keys()]).toEqual(['a # b \\ c']);
  });

  it("reads the pytest launcher's result file only when it carries the run's nonce and no tampering", () => {
    const ids = ['t.py::a', 't.py::b'];
    const file = (fields: Record<string, unknown>) =>
      JSON.stringify({
        nonce: 'n1',
        results: { 't.py::a': 'passed', 't.py::b': 'failed' },
        tampered: [],
        exitstatus: 1,
        ...fields,
      });
    const genuine = readPytestResultFile(file({}), 'n1', ids);
    expect(Object.fromEntries(genuine.statuses)).toEqual({ 't.py::a': 'passed', 't.py::b': 'failed' });
    expect(genuine).toMatchObject({
      note: 'results read from the result file (pytest exit status 1)',
      complete: true,
      forged: false,
      tampered: [],
    });
    // No file (os._exit, crash), a forged file and a malformed file: nothing counts as passed.
    expect(readPytestResultFile(undefined, 'n1', ids)).toMatchObject({
      statuses: new Map(),
      complete: false,
      forged: false,
      note: expect.stringContaining('no result file: pytest stopped before the session finished'),
    });
    expect(readPytestResultFile(file({ nonce: 'guessed' }), 'n1', ids)).toMatchObject({
      statuses: new Map(),
      forged: true,
      note: expect.stringContaining("does not carry this run's nonce"),
    });
    const malformed = readPytestResultFile(file({ results: { 't.py::a': 'PASSED' } }), 'n1', ids);
    expect(malformed.statuses.size).toBe(0);
    expect(malformed.forged).toBe(true);
    expect(malformed.note).toContain('pytest result file');
    expect(malformed.note).toContain('results.t.py::a');
    // A tampered run: every test fails, and the note names what was replaced.
    const tampered = readPytestResultFile(file({ tampered: ['_pytest.python:Function.runtest'] }), 'n1', ids);
    expect(Object.fromEntries(tampered.statuses)).toEqual({ 't.py::a': 'failed', 't.py::b': 'failed' });
    expect(tampered.tampered).toEqual(['_pytest.python:Function.runtest']);
    expect(tampered.note).toContain('_pytest.python:Function.runtest');
  });

  it('quotes for POSIX shells', () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
  });
});

const provider = createTempSandboxProvider();
afterAll(() => provider.close());

/** A process sandbox holding a bundled task's repository (or files given), plus appended source. */
async function repository(files: { task?: string; write?: Record<string, string> }): Promise<SandboxV1> {
  const sandbox = await provider.acquire();
  if (files.task)
    cpSync(join(bundledTaskPackDir(), files.task, 'repo'), sandbox.workdir, { recursive: true });
  for (const [path, content] of Object.entries(files.write ?? {})) {
    mkdirSync(join(sandbox.workdir, path, '..'), { recursive: true });
    writeFileSync(join(sandbox.workdir, path), content);
  }
  return sandbox;
}

const MEDIAN_IDS = ['tests/test_statsmini.py::test_median_even', 'tests/test_statsmini.py::test_mean'];

async function runMedian(appended: string): Promise<TestRunResult> {
  const sandbox = await repository({ task: 'py-median-even' });
  try {
    const source = join(sandbox.workdir, 'statsmini.py');
    const { readFileSync } = await import('node:fs');
    writeFileSync(source, `${readFileSync(source, 'utf8')}\n${appended}\n`);
    return await runTests(sandbox, { runner: 'pytest', args: [] }, MEDIAN_IDS, {
      timeoutMs: 120_000,
      changedFiles: [source],
    });
  } finally {
    await sandbox.dispose();
  }
}

describe.skipIf(!hostPytest)('the pytest launcher on the host', () => {
  it('reads results from its result file: the buggy median fails, the mean passes', async () => {
    const run = await runMedian('');
    expect(Object.fromEntries(run.statuses)).toEqual({
      'tests/test_statsmini.py::test_median_even': 'failed',
      'tests/test_statsmini.py::test_mean': 'passed',
    });
    expect(run).toMatchObject({ complete: true, tampered: [], forged: false, timedOut: false });
    // The people's summary is still printed.
    expect(run.output).toContain('short test summary info');
  }, 120_000);

  it.each([
    {
      trick: 'a return value whose __eq__ is always true',
      code: 'class _Any(float):\n    def __eq__(self, other):\n        return True\n    __hash__ = float.__hash__\n_real = median\ndef median(values):\n    return _Any(_real(values))\n',
      flag: 'compares as anything (__eq__ from',
    },
    {
      trick: 'a profile hook that swaps the test functions for no-ops once the test module is loaded',
      code: 'import sys as _s\ndef _swap(frame, event, arg):\n    if event == "return" and frame.f_code.co_name == "<module>" and "test_" in frame.f_code.co_filename:\n        for _k, _v in list(frame.f_globals.items()):\n            if _k.startswith("test_") and callable(_v):\n                _v.__code__ = (lambda: None).__code__\n        _s.setprofile(None)\n_s.setprofile(_swap)\n',
      flag: "instead of the test's own code",
    },
    {
      trick: 'a per-instance runtest override on every collected item',
      code: 'import sys as _s\ndef _hook(frame, event, arg):\n    if event == "call" and frame.f_code.co_name == "pytest_runtestloop":\n        for _item in frame.f_locals["session"].items:\n            _item.runtest = lambda: None\n        _s.setprofile(None)\n_s.setprofile(_hook)\n',
      flag: 'runtest overridden on the test item',
    },
    {
      trick: 'TestReport.__init__ patched so every report says passed',
      code: 'import _pytest.reports as _r\n_init = _r.TestReport.__init__\ndef _forced(self, *a, **k):\n    _init(self, *a, **k)\n    self.outcome = "passed"\n_r.TestReport.__init__ = _forced\n',
      flag: '_pytest.reports:TestReport.__init__',
    },
    {
      trick: 'the assertion guard replaced by an identity function',
      code: 'import builtins as _b\n_b.__shears_operand__ = lambda value: value\n',
      flag: 'builtins:__shears_operand__',
    },
    {
      trick: 'a trace function left installed while the tests run',
      code: 'import sys as _s\ndef _trace(frame, event, arg):\n    return None\n_s.settrace(_trace)\n',
      flag: 'a profile or trace function is installed while tests run',
    },
  ])(
    '$trick: every test counts as failed, and the flag says why',
    async ({ code, flag }) => {
      const run = await runMedian(code);
      expect(Object.fromEntries(run.statuses)).toEqual({
        'tests/test_statsmini.py::test_median_even': 'failed',
        'tests/test_statsmini.py::test_mean': 'failed',
      });
      expect(run.tampered.join('\n')).toContain(flag);
    },
    120_000,
  );

  it('os._exit from the code under test leaves no result file: incomplete, nothing passes', async () => {
    const run = await runMedian('import os as _os\n_os._exit(0)\n');
    expect(run).toMatchObject({ complete: false, forged: false, tampered: [] });
    expect([...run.statuses.values()]).toEqual(['missing', 'missing']);
    expect(run.output).toContain('no result file');
  }, 120_000);

  it('leaves ordinary code alone: dataclass equality, mock.ANY, a decorated test, a tracer that cleans up, unittest', async () => {
    const sandbox = await repository({
      write: {
        'shapes.py': [
          'import dataclasses, sys',
          '',
          '@dataclasses.dataclass',
          'class Point:',
          '    x: int',
          '    y: int',
          '',
          'def origin():',
          '    return Point(0, 0)',
          '',
          'def traced(fn):',
          '    calls = []',
          '    sys.settrace(lambda frame, event, arg: calls.append(event))',
          '    try:',
          '        fn()',
          '    finally:',
          '        sys.settrace(None)',
          '    return len(calls)',
          '',
        ].join('\n'),
        'helpers.py':
          'import functools\n\ndef logged(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n    return wrapper\n',
        'tests/test_shapes.py': [
          'import unittest',
          'from unittest import mock',
          'from helpers import logged',
          'from shapes import Point, origin, traced',
          '',
          'def test_dataclass_equality():',
          '    assert origin() == Point(0, 0)',
          '    assert origin() != Point(1, 0)',
          '',
          'def test_mock_any():',
          '    assert origin() == mock.ANY',
          '    assert [origin(), 1] == [mock.ANY, 1]',
          '',
          '@logged',
          'def test_decorated():',
          '    assert traced(lambda: None) >= 0',
          '',
          'class TestShapes(unittest.TestCase):',
          '    def test_equal(self):',
          '        self.assertEqual(origin(), Point(0, 0))',
          '        self.assertIn(1, [1, 2])',
          '',
        ].join('\n'),
      },
    });
    try {
      const ids = [
        'tests/test_shapes.py::test_dataclass_equality',
        'tests/test_shapes.py::test_mock_any',
        'tests/test_shapes.py::test_decorated',
        'tests/test_shapes.py::TestShapes::test_equal',
      ];
      const run = await runTests(sandbox, { runner: 'pytest', args: [] }, ids, {
        timeoutMs: 120_000,
        // The code under test is the agent's change: its classes are the ones the guard probes.
        changedFiles: [join(sandbox.workdir, 'shapes.py'), join(sandbox.workdir, 'helpers.py')],
      });
      expect(run.tampered).toEqual([]);
      expect(Object.fromEntries(run.statuses)).toEqual(Object.fromEntries(ids.map((id) => [id, 'passed'])));
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);

  it("a decorator from a changed file that skips the test it wraps: the test's own code never ran", async () => {
    const sandbox = await repository({
      write: {
        'helpers.py':
          'import functools\n\ndef logged(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n        return None\n    return wrapper\n',
        'tests/test_calc.py':
          'from helpers import logged\n\n@logged\ndef test_add():\n    assert 2 + 2 == 5\n',
      },
    });
    try {
      const run = await runTests(sandbox, { runner: 'pytest', args: [] }, ['tests/test_calc.py::test_add'], {
        timeoutMs: 120_000,
        changedFiles: [join(sandbox.workdir, 'helpers.py')],
      });
      expect(run.statuses.get('tests/test_calc.py::test_add')).toBe('failed');
      expect(run.tampered).toEqual(["tests/test_calc.py::test_add: the test's own code never ran"]);
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);

  it('test modules and test support changed on disk by the code under test, before pytest loads them, are caught', async () => {
    const calc =
      'import pathlib\n\nhere = pathlib.Path(__file__).parent / "tests"\n(here / "test_later.py").write_text("def test_later():\\n    pass\\n")\n(here / "support.py").write_text("EXPECTED = 5\\n")\n\ndef add(a, b):\n    return a - b\n';
    const sandbox = await repository({
      write: {
        'calc.py': calc,
        'tests/test_first.py': 'from calc import add\n\ndef test_first():\n    assert add(1, 1) == 0\n',
        'tests/test_later.py': 'from calc import add\n\ndef test_later():\n    assert add(2, 3) == 5\n',
        'tests/test_support.py':
          'from support import EXPECTED\nfrom calc import add\n\ndef test_support():\n    assert add(2, 3) == EXPECTED\n',
        'tests/support.py': 'EXPECTED = 6\n',
      },
    });
    try {
      const { createHash } = await import('node:crypto');
      const { readFileSync } = await import('node:fs');
      const protectedFiles = Object.fromEntries(
        ['tests/test_first.py', 'tests/test_later.py', 'tests/test_support.py', 'tests/support.py'].map(
          (path) => [
            join(sandbox.workdir, path),
            createHash('sha256')
              .update(readFileSync(join(sandbox.workdir, path)))
              .digest('hex'),
          ],
        ),
      );
      const ids = [
        'tests/test_first.py::test_first',
        'tests/test_later.py::test_later',
        'tests/test_support.py::test_support',
      ];
      const run = await runTests(
        sandbox,
        { runner: 'pytest', args: ['--rootdir', '.', '-p', 'no:randomly'] },
        ids,
        {
          timeoutMs: 120_000,
          changedFiles: [join(sandbox.workdir, 'calc.py')],
          protectedFiles,
        },
      );
      expect(run.tampered).toEqual([
        `test file ${join(sandbox.workdir, 'tests/test_later.py')} was changed during the run`,
        `test file ${join(sandbox.workdir, 'tests/support.py')} was changed during the run`,
      ]);
      expect([...run.statuses.values()]).toEqual(['failed', 'failed', 'failed']);
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);

  it('a unittest assertEqual against an always-equal value fails with the flag', async () => {
    const sandbox = await repository({
      write: {
        'calc.py':
          'class _Any(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n\ndef add(a, b):\n    return _Any(0)\n',
        'tests/test_calc.py':
          'import unittest\nfrom calc import add\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n',
      },
    });
    try {
      const run = await runTests(
        sandbox,
        { runner: 'pytest', args: [] },
        ['tests/test_calc.py::TestAdd::test_add'],
        {
          timeoutMs: 120_000,
          changedFiles: [join(sandbox.workdir, 'calc.py')],
        },
      );
      expect(run.statuses.get('tests/test_calc.py::TestAdd::test_add')).toBe('failed');
      expect(run.tampered.join('\n')).toContain('compares as anything');
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);
});

describe("node's test runner on the host", () => {
  const ids = ['test/case.test.js::hyphens', 'test/case.test.js::underscores and spaces'];
  async function runCamelCase(appended: string): Promise<TestRunResult> {
    const sandbox = await repository({ task: 'js-camel-case' });
    try {
      const { appendFileSync } = await import('node:fs');
      appendFileSync(join(sandbox.workdir, 'src/case.js'), `\n${appended}\n`);
      return await runTests(sandbox, { runner: 'node-test' }, ids, { timeoutMs: 120_000 });
    } finally {
      await sandbox.dispose();
    }
  }

  it('reads results from the runner’s result file', async () => {
    const run = await runCamelCase('');
    expect(Object.fromEntries(run.statuses)).toEqual({
      'test/case.test.js::hyphens': 'passed',
      'test/case.test.js::underscores and spaces': 'failed',
    });
    expect(run.complete).toBe(true);
  }, 120_000);

  it('a test file rewritten by the code under test before it runs is restored, and the run counts as tampered', async () => {
    const sandbox = await repository({ task: 'js-camel-case' });
    try {
      const { appendFileSync, readFileSync } = await import('node:fs');
      const { createHash } = await import('node:crypto');
      const later = join(sandbox.workdir, 'test/later.test.js');
      const laterSource =
        "'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert/strict');\nconst { toCamelCase } = require('../src/case.js');\ntest('later', () => assert.equal(toCamelCase('a_b'), 'aB'));\n";
      writeFileSync(later, laterSource);
      appendFileSync(
        join(sandbox.workdir, 'src/case.js'),
        `\nrequire('node:fs').writeFileSync(${JSON.stringify(later)}, "require('node:test')('later', () => {});\\n");\n`,
      );
      const hash = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
      const visible = join(sandbox.workdir, 'test/case.test.js');
      const run = await runTests(
        sandbox,
        { runner: 'node-test' },
        ['test/case.test.js::hyphens', 'test/later.test.js::later'],
        {
          timeoutMs: 120_000,
          protectedFiles: {
            [visible]: hash(visible),
            [later]: createHash('sha256').update(laterSource).digest('hex'),
          },
        },
      );
      expect(run.tampered).toEqual([`test file ${later} was changed during the run`]);
      expect([...run.statuses.values()]).toEqual(['failed', 'failed']);
      expect(readFileSync(later, 'utf8')).toBe(laterSource);
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);

  it('passing TAP printed by the code under test, then process.exit(0): incomplete, nothing passes', async () => {
    const run = await runCamelCase(
      `for (const line of ['TAP version 13', 'ok 1 - hyphens', 'ok 2 - underscores and spaces', '1..2']) console.log(line);\nprocess.exit(0);`,
    );
    expect(run.complete).toBe(false);
    expect([...run.statuses.values()]).not.toContain('passed');
    expect(run.output).toContain('stopped before its last test');
  }, 120_000);
});
