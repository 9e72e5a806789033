// Running a task's tests inside the sandbox and reading per-test results: pytest with `-rA`
// (one `PASSED|FAILED|ERROR <node id>` line per test; started so that modules planted in the
// repository cannot stand in for pytest) and node's test runner with the TAP
// reporter, one file at a time (top-level `ok N - name` / `not ok N - name`).
import type { SandboxV1 } from '@shears/core';
import type { SweTestRunner } from './task-schema.js';

export type TestStatus = 'passed' | 'failed' | 'missing';

export interface TestRunResult {
  statuses: Map<string, TestStatus>;
  output: string;
  exitCode: number;
  timedOut: boolean;
}

/** POSIX single-quote quoting. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function parsePytestReport(output: string): Map<string, 'passed' | 'failed'> {
  const statuses = new Map<string, 'passed' | 'failed'>();
  for (const match of output.matchAll(
    /^(PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED)\s+(\S+?)(?:\s+-\s.*)?$/gm,
  )) {
    const [, word, id] = match;
    if (word === 'SKIPPED' || word === 'XFAIL') continue;
    // A test that errors in set-up or teardown counts as failed even if its call passed.
    if (statuses.get(id!) === 'failed') continue;
    statuses.set(id!, word === 'PASSED' || word === 'XPASS' ? 'passed' : 'failed');
  }
  return statuses;
}

/** Top-level results of one file's TAP stream (indented lines are subtests and are ignored). */
export function parseTapReport(output: string): Map<string, 'passed' | 'failed'> {
  const statuses = new Map<string, 'passed' | 'failed'>();
  for (const match of output.matchAll(/^(not ok|ok) \d+ - (.*?)(?:\s+#\s+(SKIP|TODO)\b.*)?$/gm)) {
    const [, word, name, directive] = match;
    if (directive) continue;
    const previous = statuses.get(name!);
    statuses.set(name!, previous === 'failed' || word === 'not ok' ? 'failed' : 'passed');
  }
  return statuses;
}

function splitNodeId(id: string): { file: string; name: string } {
  const index = id.indexOf('::');
  return index < 0 ? { file: id, name: '' } : { file: id.slice(0, index), name: id.slice(index + 2) };
}

/**
 * Starts pytest the way `python3 -m pytest` does, except that the working directory goes to the
 * end of `sys.path` instead of the front (`-P` keeps it off; the launcher appends it): the
 * installed pytest, its plugins and the standard library always win over a `pytest.py`,
 * `_pytest/` or `json.py` planted in the repository, while the repository's own modules still
 * import as before.
 */
export const PYTEST_LAUNCHER =
  'import os, sys; sys.path.append(os.getcwd()); import pytest; sys.exit(pytest.console_main())';

/** Runs the given test ids and reports each as passed, failed or missing (never ran). */
export async function runTests(
  sandbox: SandboxV1,
  runner: SweTestRunner,
  ids: readonly string[],
  options: { timeoutMs: number; signal?: AbortSignal; env?: Record<string, string> },
): Promise<TestRunResult> {
  const statuses = new Map<string, TestStatus>(ids.map((id) => [id, 'missing']));
  if (ids.length === 0) return { statuses, output: '', exitCode: 0, timedOut: false };
  if (runner.runner === 'pytest') {
    const args = [
      'python3',
      '-P',
      '-c',
      PYTEST_LAUNCHER,
      '-rA',
      '-q',
      '-p',
      'no:cacheprovider',
      ...runner.args,
      ...ids,
    ]
      .map(shellQuote)
      .join(' ');
    const result = await sandbox.exec(args, {
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      env: options.env,
    });
    for (const [id, status] of parsePytestReport(result.output))
      if (statuses.has(id)) statuses.set(id, status);
    return { statuses, output: result.output, exitCode: result.exitCode, timedOut: result.timedOut };
  }
  const files = [...new Set(ids.map((id) => splitNodeId(id).file))];
  // One node process per file; markers separate the files' TAP streams in the combined output.
  const script = files
    .map(
      (file) =>
        `echo ${shellQuote(`### shears-file ${file}`)}; node --test-reporter=tap ${shellQuote(file)} 2>&1`,
    )
    .join('; ');
  const result = await sandbox.exec(script, {
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    env: options.env,
  });
  const sections = result.output.split(/^### shears-file (.*)$/m);
  for (let index = 1; index < sections.length; index += 2) {
    const file = sections[index]!.trim();
    for (const [name, status] of parseTapReport(sections[index + 1] ?? '')) {
      const id = `${file}::${name}`;
      if (statuses.has(id)) statuses.set(id, status);
    }
  }
  return { statuses, output: result.output, exitCode: result.exitCode, timedOut: result.timedOut };
}
