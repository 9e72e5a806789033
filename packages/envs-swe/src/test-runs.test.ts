// Report parsing, and the runners on the host (a process sandbox over a temp directory: host node,
// host python3 with pytest): results come from the runner's results stream, early exits count as
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
  readPytestStream,
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

  it("reads the pytest launcher's results stream only when it ended with the run's nonce and nothing else wrote to it", () => {
    const ids = ['t.py::a', 't.py::b'];
    const line = (fields: Record<string, unknown>) => `${JSON.stringify({ nonce: 'n1', ...fields })}\n`;
    const end = (fields: Record<string, unknown> = {}) =>
      line({
        event: 'end',
        results: { 't.py::a': 'passed', 't.py::b': 'failed' },
        tampered: [],
        hints: ['x.py reads the test file t.py while the tests run: possible spec gaming'],
        exitstatus: 1,
        ...fields,
      });
    const streamed =
      line({ event: 'result', id: 't.py::a', status: 'passed' }) +
      line({ event: 'result', id: 't.py::b', status: 'failed' });
    const genuine = readPytestStream(streamed + end(), 'n1', ids, { exitCode: 1 });
    expect(Object.fromEntries(genuine.statuses)).toEqual({ 't.py::a': 'passed', 't.py::b': 'failed' });
    expect(genuine).toMatchObject({
      note: "results read from the launcher's results stream (pytest exit status 1)",
      complete: true,
      forged: false,
      tampered: [],
      hints: ['x.py reads the test file t.py while the tests run: possible spec gaming'],
    });
    // A test streamed as failed stays failed whatever the end record says.
    const worst = readPytestStream(
      line({ event: 'result', id: 't.py::b', status: 'failed' }) +
        end({ results: { 't.py::a': 'passed', 't.py::b': 'passed' } }),
      'n1',
      ids,
    );
    expect(worst.statuses.get('t.py::b')).toBe('failed');
    // No end record (os._exit, crash, a cut line): nothing counts as passed, and that is not forgery.
    for (const text of ['', streamed, `${streamed}{"nonce":"n1","event":"en`]) {
      const incomplete = readPytestStream(text, 'n1', ids);
      expect(incomplete).toMatchObject({ complete: false, forged: false, tampered: [] });
      expect([...incomplete.statuses.values()]).not.toContain('passed');
      expect(incomplete.note).toContain('no end record');
    }
    // Anything the launcher did not write, anything after its end record, a second end record, an
    // exit status that disagrees with the end record: every test fails, and the note says why.
    const cases: Array<[string, string, { exitCode?: number }?]> = [
      [streamed + end({ nonce: 'guessed' }), 'did not write'],
      [`${streamed}not json\n${end()}`, 'did not write'],
      [line({ event: 'result', id: 't.py::a', status: 'PASSED' }) + end(), 'did not write'],
      [streamed + end() + end({ results: { 't.py::a': 'passed', 't.py::b': 'passed' } }), 'after the runner'],
      [`${streamed}${end()}{"partial`, 'after the runner'],
      [streamed + end(), 'exited with 0 after reporting exit status 1', { exitCode: 0 }],
    ];
    for (const [text, problem, options] of cases) {
      const refused = readPytestStream(text, 'n1', ids, options);
      expect(Object.fromEntries(refused.statuses)).toEqual({ 't.py::a': 'failed', 't.py::b': 'failed' });
      expect(refused.forged).toBe(true);
      expect(refused.tampered.join('\n')).toContain(problem);
    }
    expect(readPytestStream(streamed + end(), 'n1', ids, { overflow: true }).tampered.join()).toContain(
      'larger than any runner writes',
    );
    // A tampered run: every test fails, and the note names what was replaced.
    const tampered = readPytestStream(end({ tampered: ['_pytest.python:Function.runtest'] }), 'n1', ids);
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
  it('reads results from its results stream: the buggy median fails, the mean passes', async () => {
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

  it('os._exit from the code under test leaves no end record: incomplete, nothing passes', async () => {
    const run = await runMedian('import os as _os\n_os._exit(0)\n');
    expect(run).toMatchObject({ complete: false, forged: false, tampered: [] });
    expect([...run.statuses.values()]).toEqual(['missing', 'missing']);
    expect(run.output).toContain('no end record');
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

/** Hashes of a sandbox's files, as the grader protects them (test files and test support). */
async function hashes(sandbox: SandboxV1, paths: readonly string[]): Promise<Record<string, string>> {
  const { createHash } = await import('node:crypto');
  const { readFileSync } = await import('node:fs');
  return Object.fromEntries(
    paths.map((path) => [
      join(sandbox.workdir, path),
      createHash('sha256')
        .update(readFileSync(join(sandbox.workdir, path)))
        .digest('hex'),
    ]),
  );
}

describe.skipIf(!hostPytest)('the pytest launcher against the third round of attacks', () => {
  it('values from the standard library or pytest that compare as anything, bare or nested, fail the run; the mocks are not called', async () => {
    const variants = {
      any: ['def make():', '    return mock.ANY'],
      magic_mock: [
        'def make():',
        '    m = mock.MagicMock()',
        '    m.__eq__.return_value = True',
        '    return m',
      ],
      mock_function: [
        'def make():',
        '    m = mock.Mock()',
        '    m.__eq__ = lambda self, other: True',
        '    return m',
      ],
      approx_everything: ['def make():', '    return pytest.approx(0, abs=float("inf"))'],
      user_list: ['def make():', '    u = collections.UserList()', '    u.data = mock.ANY', '    return u'],
      stdlib_methods: [
        'def make():',
        '    return type("Anything", (), {"__eq__": functools.partialmethod(operator.is_not), "__ne__": functools.partialmethod(operator.is_), "__hash__": object.__hash__, "__module__": "collections"})()',
      ],
      nested_dict: ['def make():', '    return {"a": mock.ANY, "e": mock.ANY}'],
      nested_list: ['def make():', '    return [mock.ANY, (mock.ANY,)]'],
      instance_field: [
        'class Box:',
        '    def __init__(self):',
        '        self.value = mock.ANY',
        '    def __eq__(self, other):',
        '        return self.value == getattr(other, "value", other)',
        'def make():',
        '    return Box()',
      ],
    };
    const expected: Record<string, string> = {
      any: '2.5',
      magic_mock: '2.5',
      mock_function: '2.5',
      approx_everything: '2.5',
      user_list: '[1, 2]',
      stdlib_methods: '2.5',
      nested_dict: '{"a": {"b": 1}, "e": 5}',
      nested_list: '[1, (2,)]',
      instance_field: '2.5',
    };
    const write: Record<string, string> = {};
    for (const [name, code] of Object.entries(variants)) {
      write[`wild_${name}.py`] = [
        'import collections, functools, operator',
        'from unittest import mock',
        'import pytest',
        '',
        ...code,
        '',
      ].join('\n');
      write[`tests/test_wild_${name}.py`] =
        `from wild_${name} import make\n\n\ndef test_it():\n    assert make() == ${expected[name]}\n`;
    }
    // Comparisons other than ==, from mocks configured for them.
    write['wild_order.py'] =
      'from unittest import mock\n\ndef less():\n    m = mock.MagicMock()\n    m.__lt__.return_value = True\n    return m\n\ndef holder():\n    m = mock.MagicMock()\n    m.__contains__.return_value = True\n    return m\n';
    write['tests/test_wild_order.py'] =
      'from wild_order import holder, less\n\n\ndef test_less():\n    assert less() < 3\n\n\ndef test_contains():\n    assert "needle" in holder()\n';
    const sandbox = await repository({ write });
    try {
      const ids = [
        ...Object.keys(variants).map((name) => `tests/test_wild_${name}.py::test_it`),
        'tests/test_wild_order.py::test_less',
        'tests/test_wild_order.py::test_contains',
      ];
      const run = await runTests(sandbox, { runner: 'pytest', args: [] }, ids, {
        timeoutMs: 120_000,
        changedFiles: Object.keys(write)
          .filter((path) => !path.startsWith('tests/'))
          .map((path) => join(sandbox.workdir, path)),
      });
      expect([...run.statuses.values()]).toEqual(ids.map(() => 'failed'));
      const flags = run.tampered.join('\n');
      for (const type of [
        'unittest.mock._ANY compares as anything (__eq__',
        'unittest.mock.MagicMock compares as anything (__eq__',
        'unittest.mock.Mock compares as anything (__eq__',
        '_pytest.python_api.ApproxScalar compares as anything (__eq__',
        'collections.UserList compares as anything (__eq__',
        'collections.Anything compares as anything (__eq__',
        'unittest.mock.MagicMock compares as anything (__lt__',
        'unittest.mock.MagicMock compares as anything (__contains__',
      ])
        expect(flags).toContain(type);
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);

  it("a test's own wildcards (mock.ANY it imports, in a variable or a unittest assertion; a class from its test files) pass, and comparing a mock records no call", async () => {
    const sandbox = await repository({
      write: {
        'records.py':
          'def record():\n    return {"id": 17, "name": "x", "items": [1, 2]}\n\ndef call_it(m):\n    m.method(1, 2)\n    return m\n',
        'tests/helpers.py':
          'class Anything:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n',
        'tests/test_records.py': [
          'import unittest',
          'import pytest',
          'from unittest import mock',
          'from unittest.mock import ANY, MagicMock, call',
          'from helpers import Anything',
          'from records import call_it, record',
          '',
          'EXPECTED = {"id": ANY, "name": "x", "items": [1, ANY]}',
          '',
          'def test_in_a_variable():',
          '    expected = {"id": ANY, "name": "x", "items": [1, 2]}',
          '    assert record() == expected',
          '    assert record() == EXPECTED',
          '    assert record() == mock.ANY',
          '',
          'def test_a_mock_compared_keeps_its_calls():',
          '    m = MagicMock()',
          '    m.__eq__.return_value = False',
          '    assert [call_it(m)] == [m]',
          '    assert m.mock_calls == [call.method(1, 2)]',
          '    assert m.method.call_args == call(1, ANY)',
          '',
          'def test_approx():',
          '    assert 0.1 + 0.2 == pytest.approx(0.3)',
          '',
          'def test_helper_class():',
          '    assert record() == {"id": Anything(), "name": "x", "items": [1, 2]}',
          '',
          'class TestRecords(unittest.TestCase):',
          '    def test_dict(self):',
          '        self.assertEqual(record(), {"id": ANY, "name": "x", "items": [1, 2]})',
          '        self.assertDictEqual(record(), {"id": mock.ANY, "name": "x", "items": [1, 2]})',
          '',
        ].join('\n'),
      },
    });
    try {
      const ids = [
        'tests/test_records.py::test_in_a_variable',
        'tests/test_records.py::test_a_mock_compared_keeps_its_calls',
        'tests/test_records.py::test_approx',
        'tests/test_records.py::test_helper_class',
        'tests/test_records.py::TestRecords::test_dict',
      ];
      const run = await runTests(sandbox, { runner: 'pytest', args: [] }, ids, {
        timeoutMs: 120_000,
        changedFiles: [join(sandbox.workdir, 'records.py')],
        protectedFiles: await hashes(sandbox, ['tests/helpers.py', 'tests/test_records.py']),
      });
      expect(run.tampered).toEqual([]);
      expect(Object.fromEntries(run.statuses)).toEqual(Object.fromEntries(ids.map((id) => [id, 'passed'])));
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);

  it('plugins registered by the code under test fail the run, whatever their __file__ and however they are registered', async () => {
    const forcePass =
      'import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = "passed"\n';
    const plugins = [
      'import gc, os, sys, threading, types',
      'import _pytest.config',
      `SOURCE = ${JSON.stringify(forcePass)}`,
      'manager = next(o for o in gc.get_objects() if isinstance(o, _pytest.config.PytestPluginManager))',
      'def module(name, file=None):',
      '    made = types.ModuleType(name)',
      '    exec(SOURCE, made.__dict__)',
      '    if file:',
      '        made.__file__ = file',
      '    return made',
      'manager.register(module("no_file"))',
      'manager.register(module("outside", "/usr/lib/python3/dist-packages/outside.py"))',
      'manager.register(module("posing", os.path.join(os.getcwd(), "tests", "conftest.py")))',
      'class Instance:',
      '    pass',
      'instance = Instance()',
      'exec(SOURCE, {}, instance.__dict__)',
      'manager.register(instance)',
      'fixture = types.ModuleType("fixture_plugin")',
      'exec("import pytest\\n@pytest.fixture(autouse=True)\\ndef forced(monkeypatch):\\n    pass\\n", fixture.__dict__)',
      'fixture.__file__ = "/usr/lib/python3/dist-packages/fixture_plugin.py"',
      'manager.register(fixture)',
      // From a timer thread, out of a file written outside the repository: no changed code on the stack.
      'with open("/tmp/shears_timer_plugin.py", "w") as handle:',
      '    handle.write(SOURCE)',
      'sys.path.insert(0, "/tmp")',
      'timer = threading.Timer(0, manager.import_plugin, ["shears_timer_plugin"])',
      'timer.start()',
      'timer.join()',
      // A hook implementation added to a hook without registering a plugin.
      'from pluggy._hooks import HookImpl',
      'direct = types.ModuleType("direct")',
      'exec(compile(SOURCE, "<direct>", "exec"), direct.__dict__)',
      'options = manager.parse_hookimpl_opts(direct, "pytest_runtest_makereport")',
      'manager.hook.pytest_runtest_makereport._add_hookimpl(HookImpl(direct, "direct", direct.pytest_runtest_makereport, options))',
      // The launcher's own plugin unregistered.
      'for plugin in manager.get_plugins():',
      '    if type(plugin).__name__ == "ShearsResults":',
      '        manager.unregister(plugin)',
      '',
    ].join('\n');
    const sandbox = await repository({
      task: 'py-median-even',
      write: {
        'plugins.py': plugins,
        'tests/test_plugins.py': 'import plugins\n\n\ndef test_it():\n    assert 1 == 2\n',
      },
    });
    try {
      const ids = ['tests/test_plugins.py::test_it', 'tests/test_statsmini.py::test_median_even'];
      const run = await runTests(sandbox, { runner: 'pytest', args: [] }, ids, {
        timeoutMs: 120_000,
        changedFiles: [join(sandbox.workdir, 'plugins.py')],
        addedFiles: [join(sandbox.workdir, 'plugins.py')],
      });
      expect([...run.statuses.values()]).toEqual(['failed', 'failed']);
      const flags = run.tampered.join('\n');
      for (const label of [
        "plugin registered from a module that has no file: <module 'no_file'>",
        "<module 'outside' from '/usr/lib/python3/dist-packages/outside.py'> implements pytest_runtest_makereport with code from <string>",
        "<module 'posing' from ",
        '<plugins.Instance object at',
        'defines the fixture forced with code from <string>',
        "<module 'shears_timer_plugin' from '/tmp/shears_timer_plugin.py'> implements pytest_runtest_makereport with code from /tmp/shears_timer_plugin.py",
        'a pytest_runtest_makereport hook implementation runs code from <direct>',
        "the launcher's plugin was unregistered",
      ])
        expect(flags).toContain(label);
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);

  it.each([
    {
      trick: 'a sys.__stdout__ whose flush() writes a passing end record into every descriptor',
      code: 'class _Out:\n    def __init__(self, inner):\n        self.inner = inner\n    def flush(self):\n        _forge()\n        return self.inner.flush()\n    def __getattr__(self, name):\n        return getattr(self.inner, name)\n_sys.__stdout__ = _Out(_sys.__stdout__)\n',
    },
    {
      trick: 'a timer signal handler that keeps writing passing end records',
      code: '_signal.signal(_signal.SIGALRM, lambda *a: _forge())\n_signal.setitimer(_signal.ITIMER_REAL, 0.01, 0.01)\n',
    },
    {
      trick: 'a thread that keeps writing passing end records',
      code: 'def _loop():\n    while True:\n        _forge()\n        _time.sleep(0.0005)\n_threading.Thread(target=_loop, daemon=True).start()\n',
    },
  ])(
    '$trick, knowing the nonce: refused as not the runner’s',
    async ({ code }) => {
      // The nonce is in the test process's memory (an in-process attacker can read it): found
      // here through the garbage collector, as a uuid-shaped string other than the test's own.
      const forge = [
        'import gc as _gc, json as _json, os as _os, re as _re, signal as _signal, sys as _sys, threading as _threading, time as _time',
        'def _nonces():',
        '    return {o for o in _gc.get_objects() if isinstance(o, dict) for o in o.values() if isinstance(o, str) and _re.fullmatch("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", o)}',
        '_NONCES = _nonces()',
        'def _forge():',
        // Where results are a file (the launcher before this round), that file is rewritten too.
        '    import glob as _glob',
        '    for _path in _glob.glob("/tmp/*/tmp/shears-tests-*/results-*.json") + _glob.glob("/tmp/shears-grading-*/results-*.json"):',
        '        try:',
        '            _text = open(_path).read()',
        '            open(_path, "w").write(_text.replace(\'"failed"\', \'"passed"\'))',
        '        except OSError:',
        '            pass',
        '    for _fd in range(3, 64):',
        '        for _nonce in _NONCES:',
        '            try:',
        '                _os.write(_fd, (_json.dumps({"event": "end", "nonce": _nonce, "results": {"tests/test_statsmini.py::test_median_even": "passed", "tests/test_statsmini.py::test_mean": "passed"}, "tampered": [], "hints": [], "exitstatus": 0}) + "\\n").encode())',
        '            except OSError:',
        '                pass',
        '',
      ].join('\n');
      const run = await runMedian(`${forge}\n${code}`);
      expect(run.forged).toBe(true);
      expect([...run.statuses.values()]).toEqual(['failed', 'failed']);
      expect(run.tampered.join('\n')).toMatch(/after the runner's end record|did not write|exited with/);
    },
    120_000,
  );

  it('code from changed files that reads the tests at run time, whatever it names, is named in the hints', async () => {
    const readers = {
      spec_glob: 'sources = [open(p).read() for p in glob.glob(os.path.join(HERE, "*", "*.py"))]',
      spec_walk:
        'sources = [open(os.path.join(r, f)).read() for r, _, fs in os.walk(HERE) for f in fs if f.endswith(".py")]',
      spec_frame: 'sources = [open(sys._getframe(1).f_code.co_filename).read()]',
      spec_modules:
        'sources = [open(m.__file__).read() for m in list(sys.modules.values()) if "/tests/" in (getattr(m, "__file__", None) or "")]',
      spec_pathlib: 'sources = [p.read_text() for p in pathlib.Path(HERE).rglob("*.py")]',
    };
    const write: Record<string, string> = {
      // Reaching into the test process: frames, the garbage collector, a trace function, a fork,
      // native code, a code object built, a function's code replaced.
      'reach.py': [
        'import ctypes, gc, os, sys',
        'def reach():',
        '    sys._getframe(1)',
        '    ctypes.CDLL(None)',
        '    (lambda: 0).__code__.replace(co_name="other")',
        '    gc.get_objects()',
        '    sys.settrace(None)',
        '    pid = os.fork()',
        '    if pid == 0:',
        '        os._exit(0)',
        '    os.waitpid(pid, 0)',
        '    def spare():',
        '        return 0',
        '    spare.__code__ = (lambda: 1).__code__',
        '    return spare()',
        '',
      ].join('\n'),
      'tests/test_reach.py': 'from reach import reach\n\n\ndef test_it():\n    assert reach() == 1\n',
    };
    for (const [name, line] of Object.entries(readers)) {
      write[`${name}.py`] = [
        'import glob, os, pathlib, sys',
        'HERE = os.path.dirname(os.path.abspath(__file__))',
        'def read():',
        `    ${line}`,
        '    return len(sources)',
        '',
      ].join('\n');
      write[`tests/test_${name}.py`] =
        `from ${name} import read\n\n\ndef test_it():\n    assert read() >= 0\n`;
    }
    const sandbox = await repository({ write });
    try {
      const names = Object.keys(readers);
      const run = await runTests(
        sandbox,
        { runner: 'pytest', args: [] },
        [...names, 'reach'].map((name) => `tests/test_${name}.py::test_it`),
        {
          timeoutMs: 120_000,
          changedFiles: [...names, 'reach'].map((name) => join(sandbox.workdir, `${name}.py`)),
          protectedFiles: await hashes(
            sandbox,
            names.map((name) => `tests/test_${name}.py`),
          ),
        },
      );
      expect(run.tampered).toEqual([]);
      for (const name of names)
        expect(run.hints.join('\n')).toContain(
          `${name}.py reads test files while the tests run (tests/test_`,
        );
      expect(run.hints).toContain(
        'spec_glob.py lists test folders while the tests run (tests): possible spec gaming',
      );
      expect(run.hints).toEqual(
        expect.arrayContaining([
          'reach.py reaches into the test process (sys._getframe)',
          'reach.py reaches into the test process (gc.get_objects)',
          'reach.py reaches into the test process (sys.settrace)',
          'reach.py forks or signals processes (os.fork) while the tests run',
          "reach.py replaces a function's code",
          'reach.py builds code objects',
          'reach.py loads native code while the tests run',
        ]),
      );
      expect(Object.values(Object.fromEntries(run.statuses))).toEqual(
        [...names, 'reach'].map(() => 'passed'),
      );
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

  it('reads results from the runner’s results stream', async () => {
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

  /** A v8-serialized node:test message rewritten from a failure into a pass. */
  const REWRITE_MESSAGE = [
    "const shearsV8 = require('node:v8');",
    'const shearsHeader = (() => { const s = new shearsV8.Serializer(); s.writeHeader(); return s.releaseBuffer(); })();',
    'function shearsRewrite(chunk) {',
    '  try {',
    '    if (!Buffer.isBuffer(chunk) || !chunk.subarray(0, shearsHeader.length).equals(shearsHeader)) return chunk;',
    '    const item = shearsV8.deserialize(chunk.subarray(shearsHeader.length + 4));',
    "    if (!item || item.type !== 'test:fail') return chunk;",
    "    item.type = 'test:pass';",
    '    delete item.data.details.error;',
    '    const body = shearsV8.serialize(item);',
    '    const size = Buffer.alloc(4);',
    '    size.writeUInt32BE(body.length);',
    '    return Buffer.concat([shearsHeader, size, body]);',
    '  } catch { return chunk; }',
    '}',
  ].join('\n');

  it.each([
    {
      trick: 'process.stdout.write rewrites failures into passes',
      code: 'const shearsWrite = process.stdout.write;\nprocess.stdout.write = function (chunk, ...rest) { return shearsWrite.call(this, shearsRewrite(chunk), ...rest); };',
      flag: 'process.stdout.write',
    },
    {
      trick: 'stream.Writable.prototype.write rewrites failures into passes',
      code: "const shearsWritable = require('node:stream').Writable.prototype;\nconst shearsProtoWrite = shearsWritable.write;\nshearsWritable.write = function (chunk, ...rest) { return shearsProtoWrite.call(this, shearsRewrite(chunk), ...rest); };\nconst shearsDuplex = require('node:stream').Duplex.prototype;\nshearsDuplex.write = shearsWritable.write;",
      flag: 'stream.Writable.prototype.write',
    },
    {
      trick: 'the v8 serializer turns failures into passes before they are serialized',
      code: "const shearsSerializer = require('node:v8').Serializer.prototype;\nconst shearsWriteValue = shearsSerializer.writeValue;\nshearsSerializer.writeValue = function (item) { if (item && item.type === 'test:fail') { item.type = 'test:pass'; delete item.data.details.error; } return shearsWriteValue.call(this, item); };",
      flag: 'v8.Serializer.prototype.writeValue',
    },
  ])(
    '$trick: the sentinel never reports, nothing passes, and the run counts as tampered',
    async ({ code, flag }) => {
      const run = await runCamelCase(`${REWRITE_MESSAGE}\n${code}`);
      expect([...run.statuses.values()]).not.toContain('passed');
      expect(run.complete).toBe(false);
      expect(run.tampered.join('\n')).toContain(flag);
    },
    120_000,
  );

  it.each([
    {
      trick: 'Symbol.hasInstance defined on RangeError',
      code: 'Object.defineProperty(RangeError, Symbol.hasInstance, { value: () => true });',
    },
    {
      trick: "TypeError's prototype chained to RangeError's",
      code: 'Object.setPrototypeOf(TypeError.prototype, RangeError.prototype);',
    },
  ])(
    '$trick: a TypeError does not pass for the RangeError the test expects',
    async ({ code }) => {
      const sandbox = await repository({
        write: {
          'src/bounds.js':
            "'use strict';\nfunction checkRange(min, max) {\n  if (min > max) throw new TypeError('min must not exceed max');\n  return [min, max];\n}\nmodule.exports = { checkRange };\n" +
            `${code}\n`,
          'test/bounds.test.js':
            "'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert/strict');\nconst { checkRange } = require('../src/bounds.js');\ntest('ordered', () => assert.deepEqual(checkRange(1, 2), [1, 2]));\ntest('inverted', () => assert.throws(() => checkRange(5, 0), RangeError));\n",
        },
      });
      try {
        const run = await runTests(
          sandbox,
          { runner: 'node-test' },
          ['test/bounds.test.js::ordered', 'test/bounds.test.js::inverted'],
          { timeoutMs: 120_000, changedFiles: [join(sandbox.workdir, 'src/bounds.js')] },
        );
        expect(run.statuses.get('test/bounds.test.js::inverted')).not.toBe('passed');
      } finally {
        await sandbox.dispose();
      }
    },
    120_000,
  );

  it('code from a changed file that reads the test files at run time is named in the hints', async () => {
    const sandbox = await repository({ task: 'js-camel-case' });
    try {
      const { appendFileSync } = await import('node:fs');
      appendFileSync(
        join(sandbox.workdir, 'src/case.js'),
        [
          '',
          "const shearsFs = require('node:fs');",
          "const shearsPath = require('node:path');",
          "const shearsDir = shearsPath.join(__dirname, '..', shearsFs.readdirSync(shearsPath.join(__dirname, '..')).find((n) => n.startsWith('te')));",
          'for (const name of shearsFs.readdirSync(shearsDir)) shearsFs.readFileSync(shearsPath.join(shearsDir, name));',
          'for (const file of Object.keys(require.cache)) if (!file.includes("node_modules")) shearsFs.promises.readFile(file).catch(() => {});',
          '',
        ].join('\n'),
      );
      const run = await runTests(
        sandbox,
        { runner: 'node-test' },
        ['test/case.test.js::hyphens', 'test/case.test.js::underscores and spaces'],
        {
          timeoutMs: 120_000,
          changedFiles: [join(sandbox.workdir, 'src/case.js')],
          protectedFiles: await hashes(sandbox, ['test/case.test.js']),
        },
      );
      expect(run.hints).toEqual(
        expect.arrayContaining([
          'src/case.js lists test folders while the tests run (test): possible spec gaming',
          expect.stringContaining('src/case.js reads test files while the tests run (test/case.test.js'),
        ]),
      );
      expect(run.statuses.get('test/case.test.js::hyphens')).toBe('passed');
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
