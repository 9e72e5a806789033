// Running a task's tests inside the sandbox and reading per-test results. pytest starts so that
// modules planted in the repository cannot stand in for it, with an in-memory plugin that writes
// each test's outcome, a per-run nonce and any tampering it saw with pytest's internals to a result
// file outside the repository at the end of the session; results come only from that file, never
// from what the run prints (`-rA` output is kept for people). Node's test runner runs one file at a
// time, in runner mode (`node --test`): the test file runs in a child process whose stdout the
// parent turns into TAP comments, and the parent's TAP goes to a report file outside the
// repository, so nothing the code under test prints can pose as a result. A generated entry imports
// the test file and then registers a sentinel test with a random name; a file whose sentinel did
// not pass stopped early (process.exit, a crash) and none of its tests count as passed.
import { randomUUID } from 'node:crypto';
import { type SandboxV1, safeParseJson } from '@shears/core';
import { z } from 'zod';
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

/**
 * Reads pytest's `-rA` summary lines. Not used for grading (anything the code under test prints
 * can pose as such a line; grading reads the launcher's result file): for reading logs.
 */
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
 * pytest internals whose replacement from inside the test process would forge results
 * (`module:attribute.path`). The launcher notes what each one is before any repository code runs
 * and checks again with every result and at the end; a change marks every test failed.
 */
const PYTEST_WATCHED = [
  'builtins:AssertionError',
  'builtins:BaseException',
  'pytest:fail',
  'pytest:skip',
  'pytest:xfail',
  'pytest:raises',
  'pytest:approx',
  '_pytest.outcomes:fail',
  '_pytest.outcomes:skip',
  '_pytest.outcomes:xfail',
  '_pytest.outcomes:OutcomeException',
  '_pytest.python_api:raises',
  '_pytest.python_api:approx',
  '_pytest.raises:raises',
  '_pytest.python:pytest_pyfunc_call',
  '_pytest.python:Function.runtest',
  '_pytest.python:Function.setup',
  '_pytest.runner:pytest_runtest_protocol',
  '_pytest.runner:runtestprotocol',
  '_pytest.runner:call_and_report',
  '_pytest.runner:call_runtest_hook',
  '_pytest.runner:check_interactive_exception',
  '_pytest.runner:pytest_runtest_makereport',
  '_pytest.runner:CallInfo.from_call',
  '_pytest.runner:CallInfo.__init__',
  '_pytest.reports:BaseReport.passed',
  '_pytest.reports:BaseReport.failed',
  '_pytest.reports:BaseReport.skipped',
  '_pytest.reports:TestReport.__init__',
  '_pytest.reports:TestReport.from_item_and_call',
  '_pytest.skipping:pytest_runtest_makereport',
  '_pytest.skipping:pytest_runtest_call',
  '_pytest.skipping:pytest_runtest_setup',
  '_pytest.main:pytest_runtestloop',
  '_pytest.config:Config.cwd_relative_nodeid',
  '_pytest.assertion.rewrite:rewrite_asserts',
  '_pytest.assertion.rewrite:AssertionRewritingHook.exec_module',
  'pluggy._callers:_multicall',
  'pluggy._hooks:HookCaller.__call__',
  'pluggy._hooks:_HookCaller.__call__',
  'pluggy._hooks:HookCaller._hookexec',
  'pluggy._hooks:_HookCaller._hookexec',
  'pluggy._manager:PluginManager._hookexec',
];

/**
 * Starts pytest the way `python3 -m pytest` does, except that the working directory goes to the
 * end of `sys.path` instead of the front (`-P` keeps it off; the launcher appends it): the
 * installed pytest, its plugins and the standard library always win over a `pytest.py`,
 * `_pytest/` or `json.py` planted in the repository, while the repository's own modules still
 * import as before.
 *
 * Results never come from what pytest prints. The first argument names a secret file (outside the
 * repository) holding a random nonce and the report path; the launcher reads and deletes it before
 * any repository code runs, keeps both only in local variables, and runs pytest with an in-memory
 * plugin that records each test's worst outcome (`pytest_runtest_logreport`: failed in any phase
 * over skipped or xfail, `missing`, over passed in the call phase). Only at `pytest_sessionfinish`
 * does it write the results, the nonce and any tampering it saw to the report file: a run that
 * exits early (`os._exit`, a crash) leaves no report, and a report without the nonce is forged.
 * Tampering is a watched pytest internal (`PYTEST_WATCHED`) replaced after start, or a plugin
 * registered after the session started that is neither a conftest nor a module from outside the
 * repository. Functions the writer needs are bound before the tests run.
 */
export const PYTEST_LAUNCHER = String.raw`
def _shears_run():
    import importlib, json, os, sys
    dumps, fs_open, fs_write, fs_close, fs_unlink = json.dumps, os.open, os.write, os.close, os.unlink
    secret_path = sys.argv.pop(1)
    with open(secret_path) as secret_file:
        nonce, report_path = secret_file.read().split("\n")[:2]
    fs_unlink(secret_path)
    cwd = os.getcwd()
    sys.path.append(cwd)
    import pytest
    missing = object()
    watched = []
    for spec in WATCHED:
        module_name, _, path = spec.partition(":")
        try:
            owner = importlib.import_module(module_name)
            *parents, name = path.split(".")
            for parent in parents:
                owner = getattr(owner, parent)
        except (ImportError, AttributeError):
            continue
        watched.append((spec, owner, name, vars(owner).get(name, missing)))
    results, tampered, state = {}, [], {}
    rank = {"passed": 0, "missing": 1, "failed": 2}

    def check():
        for spec, owner, name, value in watched:
            if vars(owner).get(name, missing) is not value and spec not in tampered:
                tampered.append(spec)

    def allowed(plugin):
        if not isinstance(plugin, type(os)):
            return False
        file = os.path.realpath(getattr(plugin, "__file__", None) or "/")
        return os.path.basename(file) == "conftest.py" or not file.startswith(cwd + os.sep)

    class ShearsResults:
        __slots__ = ()

        @pytest.hookimpl(trylast=True)
        def pytest_sessionstart(self, session):
            state["config"] = session.config

        def pytest_plugin_registered(self, plugin):
            if "config" in state and not allowed(plugin):
                tampered.append("plugin registered during the run: " + repr(plugin)[:200])

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_logreport(self, report):
            check()
            if report.failed:
                status = "failed"
            elif report.skipped:
                status = "missing"
            elif report.when == "call":
                status = "passed"
            else:
                return
            config = state.get("config")
            nodeid = config.cwd_relative_nodeid(report.nodeid) if config else report.nodeid
            if rank[status] > rank.get(results.get(nodeid), -1):
                results[nodeid] = status

        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(self, session, exitstatus):
            check()
            text = dumps({"nonce": nonce, "results": results, "tampered": tampered, "exitstatus": int(exitstatus)})
            fd = fs_open(report_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                fs_write(fd, text.encode())
            finally:
                fs_close(fd)

    return pytest.main(sys.argv[1:], plugins=[ShearsResults()])

WATCHED = ${JSON.stringify(PYTEST_WATCHED)}
raise SystemExit(int(_shears_run()))
`;

/** What the pytest launcher writes at the end of a session (see `PYTEST_LAUNCHER`). */
const pytestResultFileSchema = z.object({
  nonce: z.string(),
  results: z.record(z.string(), z.enum(['passed', 'failed', 'missing'])),
  tampered: z.array(z.string()),
  exitstatus: z.number(),
});

/**
 * Reads the pytest launcher's result file: per-test statuses when it carries this run's nonce and
 * no tampering was seen; otherwise no results (or every test failed, when pytest was tampered
 * with) and a note saying why, for the test output.
 */
export function readPytestResultFile(
  text: string | undefined,
  nonce: string,
  ids: readonly string[],
): { statuses: Map<string, TestStatus>; note: string } {
  const statuses = new Map<string, TestStatus>();
  if (text === undefined)
    return {
      statuses,
      note: 'no result file: pytest stopped before the session finished (os._exit, a crash, killed or timed out); no test counts as passed',
    };
  const parsed = safeParseJson(text, { source: 'pytest result file', schema: pytestResultFileSchema });
  if (!parsed.success) return { statuses, note: `${parsed.error.message}; no test counts as passed` };
  if (parsed.value.nonce !== nonce)
    return {
      statuses,
      note: "the result file does not carry this run's nonce (forged); no test counts as passed",
    };
  if (parsed.value.tampered.length > 0) {
    for (const id of ids) statuses.set(id, 'failed');
    return {
      statuses,
      note: `pytest was tampered with from inside the test process (${parsed.value.tampered.join('; ')}); every test counts as failed`,
    };
  }
  for (const [id, status] of Object.entries(parsed.value.results)) statuses.set(id, status);
  return {
    statuses,
    note: `results read from the result file (pytest exit status ${parsed.value.exitstatus})`,
  };
}

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
    // The secret (nonce and report path) and the report live outside the repository, in a
    // directory with a fresh random name; the launcher deletes the secret before the tests run.
    const dir = `${sandbox.tempDir}/shears-pytest-${randomUUID()}`;
    const nonce = randomUUID();
    const reportPath = `${dir}/results-${randomUUID()}.json`;
    await sandbox.exec(`mkdir -p -m 700 ${shellQuote(dir)}`, { timeoutMs: 30_000, signal: options.signal });
    try {
      const secretPath = `${dir}/secret-${randomUUID()}`;
      await sandbox.writeFile(secretPath, `${nonce}\n${reportPath}\n`, { signal: options.signal });
      const args = [
        'python3',
        '-P',
        '-c',
        PYTEST_LAUNCHER,
        secretPath,
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
      let report: string | undefined;
      try {
        report = Buffer.from(await sandbox.readFile(reportPath, { signal: options.signal })).toString('utf8');
      } catch {
        // No report: pytest never reached the end of its session.
      }
      const read = readPytestResultFile(report, nonce, ids);
      for (const [id, status] of read.statuses) if (statuses.has(id)) statuses.set(id, status);
      const output = `${result.output}\n### shears: ${read.note}`;
      return { statuses, output, exitCode: result.exitCode, timedOut: result.timedOut };
    } finally {
      await sandbox.exec(`rm -rf ${shellQuote(dir)}`, { timeoutMs: 30_000 }).catch(() => undefined);
    }
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
