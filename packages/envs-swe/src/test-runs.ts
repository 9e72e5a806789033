// Running a task's tests and reading per-test results. Tests run through a `TestExecutor`: the
// grader's is a fresh container of the task image (see swe-grader.ts), where each runner, once
// the tests are done and before it writes its results, stops every other process in the
// container, and the grader reads the result file only after the container itself is stopped —
// nothing the code under test started can rewrite it. Results never come from what the run prints.
//
// pytest starts as `python3 -I -B -c <launcher>`: isolated (no PYTHON* variables, no user site,
// the repository last on sys.path, so the installed pytest wins over a planted `pytest.py`), with
// an in-memory plugin that records each test's worst outcome and checks, from inside the test
// process, for the tricks a change can play there (see assets/pytest-launcher.py). Node's test runner runs
// through a runner script (`run()` of `node:test` per file, each file in a child process) that
// collects the TAP report in its own memory; a generated entry freezes `node:assert` and
// `node:test`, imports the test file and registers a sentinel test with a random name, so a file
// whose sentinel did not pass stopped early and none of its tests count as passed.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type SandboxV1, safeParseJson } from '@shears/core';
import { z } from 'zod';
import type { SweTestRunner } from './task-schema.js';

export type TestStatus = 'passed' | 'failed' | 'missing';

export interface TestRunResult {
  statuses: Map<string, TestStatus>;
  output: string;
  exitCode: number | null;
  timedOut: boolean;
  /** The runner wrote its results (with this run's nonce) and, for node, every file finished. */
  complete: boolean;
  /** What the runner saw the code under test tamper with (every test then counts as failed). */
  tampered: string[];
  /** The result file was there but not this run's (forged) or malformed. */
  forged: boolean;
}

/** Where and how a test run happens: a fresh grading container, or any sandbox (for local runs). */
export interface TestExecutor {
  /** A scratch directory outside the repository, absolute. */
  readonly tempDir: string;
  /**
   * The executor's processes are alone in their own container, so a runner may stop every other
   * process before it writes its results. Never true for a process sandbox on a shared host.
   */
  readonly ownsProcessTree: boolean;
  writeFiles(files: ReadonlyArray<{ path: string; data: string | Uint8Array; mode?: number }>): Promise<void>;
  run(
    argv: readonly string[],
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<{ output: string; exitCode: number | null; timedOut: boolean }>;
  /** Returns once nothing the run started is left (the grader stops the whole container). */
  settle(): Promise<void>;
  /** A file's bytes, or undefined when it does not exist. */
  readFile(path: string): Promise<Uint8Array | undefined>;
  /** Removes the scratch directory where the executor outlives the run. */
  cleanUp?(): Promise<void>;
}

/** POSIX single-quote quoting. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** A test executor over any sandbox: commands through its shell, no process-tree ownership. */
export function sandboxTestExecutor(
  sandbox: SandboxV1,
  options: { signal?: AbortSignal } = {},
): TestExecutor {
  const tempDir = `${sandbox.tempDir}/shears-tests-${randomUUID()}`;
  return {
    tempDir,
    ownsProcessTree: false,
    async writeFiles(files) {
      for (const file of files)
        await sandbox.writeFile(file.path, file.data, {
          ...(options.signal ? { signal: options.signal } : {}),
          ...(file.mode !== undefined ? { mode: file.mode } : {}),
        });
    },
    async run(argv, runOptions) {
      const result = await sandbox.exec(argv.map(shellQuote).join(' '), {
        timeoutMs: runOptions.timeoutMs,
        ...(runOptions.signal ? { signal: runOptions.signal } : {}),
      });
      return { output: result.output, exitCode: result.exitCode, timedOut: result.timedOut };
    },
    async settle() {},
    async readFile(path) {
      try {
        return await sandbox.readFile(path, options.signal ? { signal: options.signal } : {});
      } catch {
        return undefined;
      }
    },
    async cleanUp() {
      await sandbox.exec(`rm -rf ${shellQuote(tempDir)}`, { timeoutMs: 30_000 }).catch(() => undefined);
    },
  };
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
 * The module node's runner runs for one test file. It freezes `node:assert` (and its strict
 * variant) and `node:test` so code under test cannot swap assertions or the test functions for
 * no-ops, loads protected CommonJS files (tests, test support) only from bytes whose hash is the
 * task's, deletes itself (the sentinel name is not left on disk), imports the test file and
 * registers the sentinel last: it is reported only if every test before it finished and the
 * process did not exit first.
 */
function nodeTestEntry(
  file: string,
  sentinel: string,
  protectedFiles: Readonly<Record<string, string | null>> = {},
): string {
  return [
    "import assert from 'node:assert';",
    "import { createHash } from 'node:crypto';",
    "import { readFileSync, unlinkSync } from 'node:fs';",
    "import Module, { createRequire } from 'node:module';",
    "import { resolve } from 'node:path';",
    "import { pathToFileURL } from 'node:url';",
    "const nodeTest = createRequire(import.meta.url)('node:test');",
    'Object.freeze(assert);',
    'Object.freeze(assert.strict);',
    'Object.freeze(nodeTest);',
    // Test files and test support load only as the task put them (checked bytes, CommonJS).
    `const protectedFiles = ${JSON.stringify(protectedFiles)};`,
    "const compileJs = Module._extensions['.js'];",
    "Module._extensions['.js'] = function (module, filename) {",
    '  const expected = protectedFiles[filename];',
    '  if (expected === undefined) return compileJs(module, filename);',
    '  const source = readFileSync(filename);',
    "  if (createHash('sha256').update(source).digest('hex') !== expected)",
    "    throw new Error('shears: test file ' + filename + ' was changed during the run');",
    "  module._compile(source.toString('utf8'), filename);",
    '};',
    'unlinkSync(new URL(import.meta.url));',
    `await import(pathToFileURL(resolve(${JSON.stringify(file)})).href);`,
    `nodeTest.test(${JSON.stringify(sentinel)}, () => {});`,
    '',
  ].join('\n');
}

/**
 * Stops every process of the container except PID 1 (the container's init), its oldest child
 * (the container's own command) and the caller and its ancestors: stop first, then kill, a few
 * rounds, so nothing can fork its way out. Only where the caller owns the container (a secret
 * flag) and PID 1 is Docker's init — never on a shared host.
 */
const STOP_OTHERS_NODE = String.raw`
function stopEverythingElse(enabled) {
  if (!enabled) return 0;
  let init = '';
  try { init = readFileSync('/proc/1/comm', 'utf8').trim(); } catch {}
  if (init !== 'docker-init' && init !== 'tini') return 0;
  const stat = (pid) => {
    try {
      const text = readFileSync('/proc/' + pid + '/stat', 'utf8');
      const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
      return { state: rest[0], ppid: Number(rest[1]) };
    } catch { return null; }
  };
  const pids = () => readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number);
  const keep = new Set([1, process.pid]);
  for (let pid = process.pid; ; ) {
    const info = stat(pid);
    if (!info || !info.ppid || keep.has(info.ppid)) break;
    keep.add(info.ppid);
    pid = info.ppid;
  }
  const children = pids().filter((pid) => stat(pid)?.ppid === 1);
  if (children.length > 0) keep.add(Math.min(...children));
  let stopped = 0;
  for (let round = 0; round < 8; round += 1) {
    const victims = pids().filter((pid) => {
      if (keep.has(pid)) return false;
      const info = stat(pid);
      return info !== null && info.state !== 'Z';
    });
    if (victims.length === 0) break;
    for (const pid of victims) { try { process.kill(pid, 'SIGSTOP'); } catch {} }
    for (const pid of victims) { try { process.kill(pid, 'SIGKILL'); } catch {} }
    stopped += victims.length;
  }
  return stopped;
}
`;

/**
 * The node runner script: reads (and deletes) its secret — nonce, report path, the entries to
 * run, the protected files' hashes — and keeps the protected files (tests, test support) in memory
 * before any code under test runs. Before each file and at the end it stops every other process
 * and checks the protected files, restoring (and reporting) any that changed. It runs each entry
 * with `run()` of `node:test` (the file runs in a child process), keeps each file's TAP report in
 * memory and prints it for people; at the end it writes the reports, what was tampered with and the
 * nonce, and exits at once.
 */
const NODE_RUNNER = String.raw`
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { run } from 'node:test';
import { tap } from 'node:test/reporters';
${STOP_OTHERS_NODE}
const secretPath = process.argv[2];
const secret = JSON.parse(readFileSync(secretPath, 'utf8'));
unlinkSync(secretPath);
const writeAll = (fd, text) => {
  const data = Buffer.from(text);
  for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset);
};
// Test files and test support as the task put them, read before any code under test runs.
const tampered = [];
const original = new Map();
const digest = (data) => createHash('sha256').update(data).digest('hex');
const readOrNull = (path) => { try { return readFileSync(path); } catch { return null; } };
for (const [path, expected] of Object.entries(secret.protected || {})) {
  const data = readOrNull(path);
  if ((data === null ? null : digest(data)) !== expected) tampered.push('test file ' + path + ' differs from the task before the run');
  original.set(path, data);
}
// Between files: nothing of the previous file's run is left, and every protected file is as it was.
const restore = () => {
  stopEverythingElse(secret.killOthers === true);
  for (const [path, data] of original) {
    const now = readOrNull(path);
    if (data === null ? now === null : now !== null && now.equals(data)) continue;
    const note = 'test file ' + path + ' was changed during the run';
    if (!tampered.includes(note)) tampered.push(note);
    try {
      if (data === null) rmSync(path, { force: true, recursive: true });
      else { mkdirSync(dirname(path), { recursive: true }); rmSync(path, { force: true, recursive: true }); writeFileSync(path, data); }
    } catch (error) {
      tampered.push('could not restore ' + path + ': ' + String(error && error.message ? error.message : error));
    }
  }
};
const reports = {};
for (const { file, entry } of secret.files) {
  restore();
  let text = '';
  try {
    for await (const chunk of run({ files: [entry] }).compose(tap)) text += chunk;
  } catch (error) {
    text += '\n# shears: the runner failed: ' + String(error && error.message ? error.message : error) + '\n';
  }
  reports[file] = text;
  writeAll(1, '### shears-file ' + file + '\n' + text + '\n');
}
restore();
const stopped = stopEverythingElse(secret.killOthers === true);
const fd = openSync(secret.report, 'w', 0o600);
writeAll(fd, JSON.stringify({ nonce: secret.nonce, reports, stopped, tampered }));
closeSync(fd);
process.exit(0);
`;

/**
 * The pytest launcher (assets/pytest-launcher.py, shipped in the package beside dist/ and src/; its
 * header says what it checks). Run as `python3 -I -B -c <launcher> <secret path> <pytest args>`.
 */
const PYTEST_LAUNCHER_FILE = new URL('../assets/pytest-launcher.py', import.meta.url);
let pytestLauncher: string | undefined;
function readPytestLauncher(): string {
  pytestLauncher ??= readFileSync(PYTEST_LAUNCHER_FILE, 'utf8');
  return pytestLauncher;
}

/** What the pytest launcher writes at the end of a session (see `assets/pytest-launcher.py`). */
const pytestResultFileSchema = z.object({
  nonce: z.string(),
  results: z.record(z.string(), z.enum(['passed', 'failed', 'missing'])),
  tampered: z.array(z.string()),
  exitstatus: z.number(),
  stopped: z.number().optional(),
});

/** What the node runner writes at the end (see `NODE_RUNNER`). */
const nodeResultFileSchema = z.object({
  nonce: z.string(),
  reports: z.record(z.string(), z.string()),
  stopped: z.number().optional(),
  tampered: z.array(z.string()).default([]),
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
): {
  statuses: Map<string, TestStatus>;
  note: string;
  tampered: string[];
  complete: boolean;
  forged: boolean;
} {
  const statuses = new Map<string, TestStatus>();
  const none = { statuses, tampered: [], complete: false };
  if (text === undefined)
    return {
      ...none,
      forged: false,
      note: 'no result file: pytest stopped before the session finished (os._exit, a crash, killed or timed out); no test counts as passed',
    };
  const parsed = safeParseJson(text, { source: 'pytest result file', schema: pytestResultFileSchema });
  if (!parsed.success)
    return { ...none, forged: true, note: `${parsed.error.message}; no test counts as passed` };
  if (parsed.value.nonce !== nonce)
    return {
      ...none,
      forged: true,
      note: "the result file does not carry this run's nonce (forged); no test counts as passed",
    };
  if (parsed.value.tampered.length > 0) {
    for (const id of ids) statuses.set(id, 'failed');
    return {
      statuses,
      tampered: parsed.value.tampered,
      complete: true,
      forged: false,
      note: `pytest was tampered with from inside the test process (${parsed.value.tampered.join('; ')}); every test counts as failed`,
    };
  }
  for (const [id, status] of Object.entries(parsed.value.results)) statuses.set(id, status);
  return {
    statuses,
    tampered: [],
    complete: true,
    forged: false,
    note: `results read from the result file (pytest exit status ${parsed.value.exitstatus})`,
  };
}

function splitNodeId(id: string): { file: string; name: string } {
  const index = id.indexOf('::');
  return index < 0 ? { file: id, name: '' } : { file: id.slice(0, index), name: id.slice(index + 2) };
}

export interface RunTestsOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Absolute paths of the files the agent's change added or modified (for the pytest launcher's checks). */
  changedFiles?: readonly string[];
  /**
   * Test files and test support as the task put them (absolute path → SHA-256, null for a path
   * that must not exist): a change during the run is tampering (pytest: checked as modules are
   * compiled; node: checked and restored before each file).
   */
  protectedFiles?: Readonly<Record<string, string | null>>;
}

/**
 * Runs the given test ids and reports each as passed, failed or missing (never ran). `target` is
 * a test executor (the grader's fresh container) or any sandbox (run through its shell).
 */
export async function runTests(
  target: TestExecutor | SandboxV1,
  runner: SweTestRunner,
  ids: readonly string[],
  options: RunTestsOptions,
): Promise<TestRunResult> {
  const executor: TestExecutor =
    'run' in target ? target : sandboxTestExecutor(target, options.signal ? { signal: options.signal } : {});
  try {
    return await runWith(executor, runner, ids, options);
  } finally {
    await executor.cleanUp?.();
  }
}

async function runWith(
  executor: TestExecutor,
  runner: SweTestRunner,
  ids: readonly string[],
  options: RunTestsOptions,
): Promise<TestRunResult> {
  const statuses = new Map<string, TestStatus>(ids.map((id) => [id, 'missing']));
  const empty = {
    statuses,
    output: '',
    exitCode: 0,
    timedOut: false,
    complete: true,
    tampered: [],
    forged: false,
  };
  if (ids.length === 0) return empty;
  const dir = executor.tempDir;
  const nonce = randomUUID();
  const reportPath = `${dir}/results-${randomUUID()}.json`;
  const secretPath = `${dir}/secret-${randomUUID()}`;
  const runOptions = { timeoutMs: options.timeoutMs, ...(options.signal ? { signal: options.signal } : {}) };
  if (runner.runner === 'pytest') {
    const secret = {
      nonce,
      report: reportPath,
      changed: options.changedFiles ?? [],
      protected: Object.fromEntries(
        Object.entries(options.protectedFiles ?? {}).filter(
          (entry): entry is [string, string] => entry[1] !== null,
        ),
      ),
      killOthers: executor.ownsProcessTree,
    };
    await executor.writeFiles([{ path: secretPath, data: JSON.stringify(secret), mode: 0o600 }]);
    const run = await executor.run(
      [
        'python3',
        '-I',
        '-B',
        '-c',
        readPytestLauncher(),
        secretPath,
        '-rA',
        '-q',
        '-p',
        'no:cacheprovider',
        ...runner.args,
        ...ids,
      ],
      runOptions,
    );
    await executor.settle();
    const report = await executor.readFile(reportPath);
    const read = readPytestResultFile(report ? Buffer.from(report).toString('utf8') : undefined, nonce, ids);
    for (const [id, status] of read.statuses) if (statuses.has(id)) statuses.set(id, status);
    return {
      statuses,
      output: `${run.output}\n### shears: ${read.note}`,
      exitCode: run.exitCode,
      timedOut: run.timedOut,
      complete: read.complete,
      tampered: read.tampered,
      forged: read.forged,
    };
  }
  const files = [...new Set(ids.map((id) => splitNodeId(id).file))];
  const sentinel = `shears-end-of-file-${randomUUID()}`;
  const runnerPath = `${dir}/runner-${randomUUID()}.mjs`;
  const entries = files.map((file, index) => ({ file, entry: `${dir}/entry-${index}-${randomUUID()}.mjs` }));
  await executor.writeFiles([
    ...entries.map(({ file, entry }) => ({
      path: entry,
      data: nodeTestEntry(
        file,
        sentinel,
        Object.fromEntries(
          Object.entries(options.protectedFiles ?? {}).filter(
            (item): item is [string, string] => item[1] !== null && /\.c?js$/.test(item[0]),
          ),
        ),
      ),
    })),
    { path: runnerPath, data: NODE_RUNNER },
    {
      path: secretPath,
      data: JSON.stringify({
        nonce,
        report: reportPath,
        files: entries,
        protected: options.protectedFiles ?? {},
        killOthers: executor.ownsProcessTree,
      }),
      mode: 0o600,
    },
  ]);
  const run = await executor.run(['node', runnerPath, secretPath], runOptions);
  await executor.settle();
  const bytes = await executor.readFile(reportPath);
  const notes: string[] = [];
  const tampered: string[] = [];
  let complete = false;
  let forged = false;
  if (!bytes) notes.push('no result file: the runner stopped before it finished; no test counts as passed');
  else {
    const parsed = safeParseJson(Buffer.from(bytes).toString('utf8'), {
      source: 'node runner result file',
      schema: nodeResultFileSchema,
    });
    if (!parsed.success) {
      forged = true;
      notes.push(`${parsed.error.message}; no test counts as passed`);
    } else if (parsed.value.nonce !== nonce) {
      forged = true;
      notes.push("the result file does not carry this run's nonce (forged); no test counts as passed");
    } else {
      complete = true;
      tampered.push(...parsed.value.tampered);
      for (const file of files) {
        const fileStatuses = parseTapReport(parsed.value.reports[file] ?? '');
        const finished = fileStatuses.get(sentinel) === 'passed';
        if (!finished) {
          complete = false;
          notes.push(
            `${file} stopped before its last test (process.exit, a crash, a kill): none of its tests count as passed`,
          );
        }
        for (const [name, status] of fileStatuses) {
          const id = `${file}::${name}`;
          if (!statuses.has(id)) continue;
          statuses.set(id, finished || status !== 'passed' ? status : 'failed');
        }
      }
      if (tampered.length > 0) {
        for (const id of ids) statuses.set(id, 'failed');
        notes.push(
          `the code under test tampered with the test files (${tampered.join('; ')}); every test counts as failed`,
        );
      } else notes.push('results read from the result file');
    }
  }
  return {
    statuses,
    output: `${run.output}\n${notes.map((note) => `### shears: ${note}`).join('\n')}`,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    complete,
    tampered,
    forged,
  };
}
