import { describe, expect, it } from 'vitest';
import { parsePytestReport, parseTapReport, readPytestResultFile, shellQuote } from './test-runs.js';

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
    expect(genuine.note).toBe('results read from the result file (pytest exit status 1)');
    // No file (os._exit, crash), a forged file and a malformed file: nothing counts as passed.
    expect(readPytestResultFile(undefined, 'n1', ids)).toEqual({
      statuses: new Map(),
      note: expect.stringContaining('no result file: pytest stopped before the session finished'),
    });
    expect(readPytestResultFile(file({ nonce: 'guessed' }), 'n1', ids)).toEqual({
      statuses: new Map(),
      note: expect.stringContaining("does not carry this run's nonce"),
    });
    const malformed = readPytestResultFile(file({ results: { 't.py::a': 'PASSED' } }), 'n1', ids);
    expect(malformed.statuses.size).toBe(0);
    expect(malformed.note).toContain('pytest result file');
    expect(malformed.note).toContain('results.t.py::a');
    // A tampered run: every test fails, and the note names what was replaced.
    const tampered = readPytestResultFile(file({ tampered: ['_pytest.python:Function.runtest'] }), 'n1', ids);
    expect(Object.fromEntries(tampered.statuses)).toEqual({ 't.py::a': 'failed', 't.py::b': 'failed' });
    expect(tampered.note).toContain('_pytest.python:Function.runtest');
  });

  it('quotes for POSIX shells', () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
  });
});
