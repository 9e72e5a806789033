// Running a task's tests inside the sandbox and reading per-test results: pytest with `-rA`
// (one `PASSED|FAILED|ERROR <node id>` line per test; started so that modules planted in the
// repository cannot stand in for pytest) and node's test runner, one file at a time, in runner
// mode (`node --test`): the test file runs in a child process whose stdout the parent turns into
// TAP comments, and the parent's TAP goes to a report file outside the repository, so nothing the
// code under test prints can pose as a result. A generated entry imports the test file and then
// registers a sentinel test with a random name; a file whose sentinel did not pass stopped early
// (process.exit, a crash) and none of its tests count as passed.
import { randomUUID } from 'node:crypto';
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

/**
 * Top-level results of one file's TAP stream (indented lines are subtests and are ignored). Node's
 * TAP escapes for `#` and backslash in names are undone; it writes a newline in a name as an
 * escaped backslash and `n`, so such a name reads as backslash-n. A name reported more than once
 * takes its worst result: failed over skipped or todo (`missing`, never ran) over passed, so a
 * second test registered under the same name cannot turn a failure into a pass.
 */
export function parseTapReport(output: string): Map<string, TestStatus> {
  const statuses = new Map<string, TestStatus>();
  const rank: Record<TestStatus, number> = { passed: 0, missing: 1, failed: 2 };
  for (const match of output.matchAll(/^(not ok|ok) \d+ - (.*?)(?:\s+#\s+(SKIP|TODO)\b.*)?$/gm)) {
    const [, word, escaped, directive] = match;
    const name = escaped!.replace(/\\([\\#])/g, '$1');
    const status: TestStatus = word === 'not ok' ? 'failed' : directive ? 'missing' : 'passed';
    const previous = statuses.get(name);
    if (!previous || rank[status] > rank[previous]) statuses.set(name, status);
  }
  return statuses;
}

/**
 * The module `node --test` runs for one test file. It freezes `node:assert` (and its strict
 * variant) and `node:test` so code under test cannot swap assertions or the test functions for
 * no-ops, deletes itself (the sentinel name is not left on disk), imports the test file and
 * registers the sentinel last: it is reported only if every test before it finished and the
 * process did not exit first.
 */
export function nodeTestEntry(file: string, sentinel: string): string {
  return [
    "import assert from 'node:assert';",
    "import { unlinkSync } from 'node:fs';",
    "import { createRequire } from 'node:module';",
    "import { resolve } from 'node:path';",
    "import { pathToFileURL } from 'node:url';",
    "const nodeTest = createRequire(import.meta.url)('node:test');",
    'Object.freeze(assert);',
    'Object.freeze(assert.strict);',
    'Object.freeze(nodeTest);',
    'unlinkSync(new URL(import.meta.url));',
    `await import(pathToFileURL(resolve(${JSON.stringify(file)})).href);`,
    `nodeTest.test(${JSON.stringify(sentinel)}, () => {});`,
    '',
  ].join('\n');
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
  // Entries and reports live outside the repository, in a directory with a fresh random name.
  const dir = `${sandbox.tempDir}/shears-node-tests-${randomUUID()}`;
  const sentinel = `shears-end-of-file-${randomUUID()}`;
  await sandbox.exec(`mkdir -p -m 700 ${shellQuote(dir)}`, { timeoutMs: 30_000, signal: options.signal });
  try {
    for (const [index, file] of files.entries())
      await sandbox.writeFile(`${dir}/entry-${index}.mjs`, nodeTestEntry(file, sentinel), {
        signal: options.signal,
      });
    // One runner per file; what the runs print is kept for people, the results come from the reports.
    const script = files
      .map(
        (file, index) =>
          `echo ${shellQuote(`### shears-file ${file}`)}; node --test --test-reporter=tap --test-reporter-destination=${shellQuote(`${dir}/report-${index}.tap`)} ${shellQuote(`${dir}/entry-${index}.mjs`)} 2>&1`,
      )
      .join('; ');
    const result = await sandbox.exec(script, {
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      env: options.env,
    });
    const reports: string[] = [];
    for (const [index, file] of files.entries()) {
      let report = '';
      try {
        report = Buffer.from(
          await sandbox.readFile(`${dir}/report-${index}.tap`, { signal: options.signal }),
        ).toString('utf8');
      } catch {
        // No report: the runner never started or was killed; the file's tests stay missing.
      }
      reports.push(`### shears-report ${file}\n${report}`);
      const fileStatuses = parseTapReport(report);
      const completed = fileStatuses.get(sentinel) === 'passed';
      for (const [name, status] of fileStatuses) {
        const id = `${file}::${name}`;
        if (!statuses.has(id)) continue;
        statuses.set(id, completed || status !== 'passed' ? status : 'failed');
      }
    }
    const output = `${result.output}\n${reports.join('\n')}`;
    return { statuses, output, exitCode: result.exitCode, timedOut: result.timedOut };
  } finally {
    await sandbox.exec(`rm -rf ${shellQuote(dir)}`, { timeoutMs: 30_000 }).catch(() => undefined);
  }
}
