// Running a task's tests and reading per-test results. Tests run through a `TestExecutor`: the
// grader's is a fresh container of the task image (see swe-grading.ts). Results never come from
// what the run prints, nor from a file the code under test could rewrite: each runner writes one
// JSON record per line, carrying the run's nonce, to a stream of its own process that the code
// under test does not write to (pytest: its standard error, which it points at standard output
// for everything else; node: its standard output, the tests running in child processes with pipes
// of their own), and the executor hands that stream back whole. The grader reads it only once every
// process of the run is gone (the whole container stopped) and refuses a stream holding anything
// after the runner's end record, a second end record or a line that is not the runner's: nothing
// the code under test started can change what the runner reported.
//
// pytest starts as `python3 -I -B -c <launcher>`: isolated (no PYTHON* variables, no user site,
// the repository on sys.path only once pytest is imported, last, so the installed pytest wins over
// a planted `pytest.py`), with an in-memory plugin that reports each test's outcome and checks,
// from inside the test process, for the tricks a change can play there (see
// assets/pytest-launcher.py). Node's test runner runs through a runner script (`run()` of
// `node:test` per file, each file in a child process) that collects the TAP report in its own
// memory; a generated entry freezes `node:assert` and `node:test`, keeps the built-in classes'
// `instanceof` as the language defines it, notes what the reporting path is made of, imports the
// test file and registers a sentinel test with a random name that checks the reporting path is
// unchanged, so a file whose sentinel did not pass stopped early or was tampered with and none of
// its tests count as passed.
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
  /**
   * The results stream held something the runner did not write (a line without this run's nonce,
   * anything after its end record, a second end record): every test counts as failed.
   */
  forged: boolean;
  /** Hints for an auditor from inside the run (code from changed files reading test files, …). */
  hints: string[];
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
  /**
   * Runs a command. `results` names the stream that carries the runner's results: it comes back
   * whole as `results` (up to `MAX_RESULTS_BYTES`, beyond which `resultsOverflow` is set); the
   * other stream is `output`, for people.
   */
  run(
    argv: readonly string[],
    options: { timeoutMs: number; signal?: AbortSignal; results: 'stdout' | 'stderr' },
  ): Promise<ExecutorRun>;
  /** Returns once nothing the run started is left (the grader stops the whole container). */
  settle(): Promise<void>;
  /** Removes the scratch directory where the executor outlives the run. */
  cleanUp?(): Promise<void>;
}

/** What one command of a test executor gave back. */
export interface ExecutorRun {
  output: string;
  results: string;
  resultsOverflow: boolean;
  exitCode: number | null;
  timedOut: boolean;
}

/** Bytes of a runner's results stream kept; more is refused as not the runner's. */
export const MAX_RESULTS_BYTES = 64 * 1024 * 1024;

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
      const results = runOptions.results === 'stdout' ? result.stdout : result.stderr;
      return {
        output: runOptions.results === 'stdout' ? result.stderr : result.stdout,
        results: results.slice(0, MAX_RESULTS_BYTES),
        resultsOverflow: results.length > MAX_RESULTS_BYTES,
        exitCode: result.exitCode,
        timedOut: result.timedOut,
      };
    },
    async settle() {},
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
 * The module node's runner runs for one test file. Before any code under test runs it freezes
 * `node:assert` (and its strict variant) and `node:test` so code under test cannot swap assertions
 * or the test functions for no-ops; fixes `Symbol.hasInstance` of the built-in classes to the
 * language's own (so `assert.throws(fn, RangeError)` and `instanceof` cannot be made to accept
 * anything) and notes their prototype chains; notes every function on the path from the test
 * runner's reporter to the process's standard output (the stream, its handle, the stream, serializer,
 * async-generator and promise prototypes, `Buffer`); loads
 * protected CommonJS files (tests, test support) only from bytes whose hash is the task's; hints
 * when code from a changed file reads a test file or lists a test folder; deletes itself (the
 * sentinel name is not left on disk); imports the test file and registers the sentinel last. The
 * sentinel checks the reporting path and the prototype chains: changed, the process exits at once (code 97) without
 * reporting the sentinel, so none of the file's tests count as passed — a change that rewrites
 * what the reporter sends cannot also report the sentinel, whose name it never saw.
 */
/** Global classes whose `Symbol.hasInstance` the entry fixes to the language's own. */
const BUILT_IN_CLASSES = [
  'Object',
  'Function',
  'Array',
  'Number',
  'String',
  'Boolean',
  'Symbol',
  'BigInt',
  'Date',
  'RegExp',
  'Error',
  'TypeError',
  'RangeError',
  'SyntaxError',
  'ReferenceError',
  'EvalError',
  'URIError',
  'AggregateError',
  'Promise',
  'Map',
  'Set',
  'WeakMap',
  'WeakSet',
  'WeakRef',
  'ArrayBuffer',
  'SharedArrayBuffer',
  'DataView',
  'Int8Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'Float32Array',
  'Float64Array',
  'BigInt64Array',
  'BigUint64Array',
  'Buffer',
  'URL',
  'URLSearchParams',
];

function nodeTestEntry(
  file: string,
  sentinel: string,
  protectedFiles: Readonly<Record<string, string | null>> = {},
  changedFiles: readonly string[] = [],
): string {
  return [
    "import assert from 'node:assert';",
    "import { createHash } from 'node:crypto';",
    "import fs from 'node:fs';",
    "import Module, { createRequire, syncBuiltinESMExports } from 'node:module';",
    "import { dirname, resolve } from 'node:path';",
    "import stream from 'node:stream';",
    "import { fileURLToPath, pathToFileURL } from 'node:url';",
    "import v8 from 'node:v8';",
    "const nodeTest = createRequire(import.meta.url)('node:test');",
    'const reallyExit = process.reallyExit;',
    'const { readFileSync, unlinkSync, writeSync } = fs;',
    "const say = (kind, text) => { try { writeSync(2, '\\nshears-' + kind + ': ' + text + '\\n'); } catch {} };",
    'Object.freeze(assert);',
    'Object.freeze(assert.strict);',
    'Object.freeze(nodeTest);',
    // instanceof as the language defines it, for every built-in class.
    'const hasInstance = Function.prototype[Symbol.hasInstance];',
    `for (const name of ${JSON.stringify(BUILT_IN_CLASSES)}) {`,
    '  const value = globalThis[name];',
    "  if (typeof value !== 'function') continue;",
    '  try { Object.defineProperty(value, Symbol.hasInstance, { value: hasInstance, writable: false, configurable: false, enumerable: false }); } catch {}',
    '}',
    // The reporting path, as it is before any code under test runs.
    'const lookup = (object, key) => { for (let o = object; o; o = Object.getPrototypeOf(o)) { const found = Object.getOwnPropertyDescriptor(o, key); if (found) return found; } return undefined; };',
    'const watched = [];',
    'const watch = (label, object) => {',
    "  if (!object || (typeof object !== 'object' && typeof object !== 'function')) return;",
    '  const keys = new Set();',
    '  for (let o = object; o && o !== Object.prototype && o !== Function.prototype; o = Object.getPrototypeOf(o)) for (const key of Reflect.ownKeys(o)) keys.add(key);',
    "  for (const key of keys) { const found = lookup(object, key); if (found && (typeof found.value === 'function' || found.get || found.set)) watched.push([label, object, key, found]); }",
    "  watched.push([label, object, '(prototype)', { value: Object.getPrototypeOf(object) }]);",
    '};',
    "watch('process.stdout', process.stdout);",
    "watch('process.stdout._handle', process.stdout._handle);",
    "watch('stream.Writable.prototype', stream.Writable.prototype);",
    "watch('stream.Readable.prototype', stream.Readable.prototype);",
    "watch('stream.Duplex.prototype', stream.Duplex.prototype);",
    "watch('stream.Transform.prototype', stream.Transform.prototype);",
    "watch('v8.Serializer.prototype', v8.Serializer.prototype);",
    "watch('v8.DefaultSerializer.prototype', v8.DefaultSerializer.prototype);",
    "watch('Buffer', Buffer);",
    "watch('Buffer.prototype', Buffer.prototype);",
    "watch('AsyncGenerator.prototype', Object.getPrototypeOf(async function* () {}).prototype);",
    "watch('Promise.prototype', Promise.prototype);",
    // The built-in classes' prototype chains, which instanceof walks.
    `for (const name of ${JSON.stringify(BUILT_IN_CLASSES)}) {`,
    '  const value = globalThis[name];',
    "  if (typeof value !== 'function') continue;",
    "  watched.push([name, value, '(prototype)', { value: Object.getPrototypeOf(value) }]);",
    "  if (value.prototype) watched.push([name + '.prototype', value.prototype, '(prototype)', { value: Object.getPrototypeOf(value.prototype) }]);",
    '}',
    'const changedPath = () => watched.filter(([, object, key, found]) => {',
    "  const now = key === '(prototype)' ? { value: Object.getPrototypeOf(object) } : lookup(object, key);",
    '  return !now || now.value !== found.value || now.get !== found.get || now.set !== found.set;',
    "}).map(([label, , key]) => label + '.' + String(key));",
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
    // Hints: code from a changed file reading a test file or listing a test folder.
    `const changedFiles = new Set(${JSON.stringify(changedFiles)});`,
    'const testFiles = new Set(Object.keys(protectedFiles));',
    'const testFolders = new Set([...testFiles].map((path) => dirname(path)));',
    'const hinted = new Map();',
    'const culprit = () => {',
    '  const limit = Error.stackTraceLimit;',
    '  const prepare = Error.prepareStackTrace;',
    '  Error.stackTraceLimit = 64;',
    '  Error.prepareStackTrace = undefined;',
    '  let stack;',
    '  try { stack = String(new Error().stack); } finally { Error.stackTraceLimit = limit; Error.prepareStackTrace = prepare; }',
    '  for (const match of stack.matchAll(/(?:file:\\/\\/)?(\\/[^\\s():]+):\\d+:\\d+/g)) if (changedFiles.has(match[1])) return match[1];',
    '  return undefined;',
    '};',
    'const hintAbout = (target, what) => {',
    '  try {',
    '    if (target instanceof URL) target = fileURLToPath(target);',
    '    if (Buffer.isBuffer(target)) target = target.toString();',
    "    if (typeof target !== 'string') return;",
    '    const path = resolve(target);',
    "    const kind = testFiles.has(path) ? 'reads test files' : what === 'list' && testFolders.has(path) ? 'lists test folders' : undefined;",
    '    if (!kind) return;',
    '    const from = culprit();',
    '    if (!from) return;',
    "    const shown = (file) => (file.startsWith(process.cwd() + '/') ? file.slice(process.cwd().length + 1) : file);",
    "    const key = shown(from) + ' ' + kind;",
    '    const details = hinted.get(key) ?? [];',
    '    if (details.includes(shown(path)) || details.length >= 4 || (!hinted.has(key) && hinted.size >= 24)) return;',
    '    details.push(shown(path));',
    '    hinted.set(key, details);',
    "    say('hint', key + ' while the tests run (' + details.join(', ') + '): possible spec gaming');",
    '  } catch {}',
    '};',
    'const spy = (owner, name, what) => {',
    '  const original = owner[name];',
    "  if (typeof original !== 'function') return;",
    '  owner[name] = function (target, ...rest) { hintAbout(target, what); return original.call(this, target, ...rest); };',
    '};',
    "for (const name of ['readFileSync', 'readFile', 'openSync', 'open', 'createReadStream']) spy(fs, name, 'read');",
    "for (const name of ['readdirSync', 'readdir', 'opendirSync', 'opendir']) spy(fs, name, 'list');",
    "for (const name of ['readFile', 'open']) spy(fs.promises, name, 'read');",
    "for (const name of ['readdir', 'opendir']) spy(fs.promises, name, 'list');",
    'syncBuiltinESMExports();',
    'unlinkSync(new URL(import.meta.url));',
    `await import(pathToFileURL(resolve(${JSON.stringify(file)})).href);`,
    `nodeTest.test(${JSON.stringify(sentinel)}, () => {`,
    '  const changed = changedPath();',
    '  if (changed.length > 0) {',
    "    say('tampered', 'changed while the tests ran (the reporting path of the test runner or the prototype chain of a built-in class): ' + changed.slice(0, 8).join(', '));",
    '    reallyExit.call(process, 97);',
    '  }',
    '});',
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
 * The node runner script: reads (and deletes) its secret — nonce, the entries to run, the
 * protected files' hashes — and keeps the protected files (tests, test support) in memory before
 * any code under test runs. Before each file and at the end it stops every other process and checks
 * the protected files, restoring (and reporting) any that changed. It runs each entry with `run()`
 * of `node:test` (the file runs in a child process with pipes of its own), sends each file's TAP
 * report as a record on its standard output (the results stream) and prints it on its standard
 * error for people; at the end it sends an end record with what was tampered with, and exits.
 */
const NODE_RUNNER = String.raw`
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
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
const send = (record) => writeAll(1, JSON.stringify({ ...record, nonce: secret.nonce }) + '\n');
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
for (const { file, entry } of secret.files) {
  restore();
  let text = '';
  try {
    for await (const chunk of run({ files: [entry] }).compose(tap)) text += chunk;
  } catch (error) {
    text += '\n# shears: the runner failed: ' + String(error && error.message ? error.message : error) + '\n';
  }
  send({ event: 'file', file, report: text });
  writeAll(2, '### shears-file ' + file + '\n' + text + '\n');
}
restore();
const stopped = stopEverythingElse(secret.killOthers === true);
send({ event: 'end', stopped, tampered });
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

const statusSchema = z.enum(['passed', 'failed', 'missing']);
/** The pytest launcher's records (see `assets/pytest-launcher.py`). */
const pytestRecordSchema = z.discriminatedUnion('event', [
  z.object({ event: z.literal('result'), nonce: z.string(), id: z.string(), status: statusSchema }),
  z.object({
    event: z.literal('end'),
    nonce: z.string(),
    results: z.record(z.string(), statusSchema),
    tampered: z.array(z.string()),
    hints: z.array(z.string()).default([]),
    exitstatus: z.number(),
    stopped: z.number().optional(),
  }),
]);
/** The node runner's records (see `NODE_RUNNER`). */
const nodeRecordSchema = z.discriminatedUnion('event', [
  z.object({ event: z.literal('file'), nonce: z.string(), file: z.string(), report: z.string() }),
  z.object({
    event: z.literal('end'),
    nonce: z.string(),
    stopped: z.number().optional(),
    tampered: z.array(z.string()).default([]),
  }),
]);

/** What a runner's results stream says, once every process of the run is gone. */
export interface RunnerStream<TRecord> {
  /** The records before the end record, in order. */
  records: TRecord[];
  /** The end record, when the runner got that far. */
  end?: TRecord;
  /** Why the stream is not (only) the runner's: every test then counts as failed. */
  problems: string[];
}

/**
 * Reads a runner's results stream: one JSON record per line, each with this run's nonce, the
 * `end` record last. A line that does not parse as one of the runner's records or lacks the nonce,
 * anything after the end record and a second end record are problems (something other than the
 * runner wrote to the stream, or outlived the test process); a partial last line with no end
 * record before it is a runner that was stopped mid-write (incomplete, not a problem).
 */
export function readRunnerStream<TRecord extends { event: string; nonce: string }>(
  text: string,
  nonce: string,
  schema: z.ZodType<TRecord>,
  options: { overflow?: boolean } = {},
): RunnerStream<TRecord> {
  const records: TRecord[] = [];
  const problems: string[] = [];
  let end: TRecord | undefined;
  let after = 0;
  let foreign = 0;
  let firstForeign = '';
  const lines = text.split('\n');
  // What follows the last newline: empty when the runner finished its line; else a line cut short.
  const trailing = lines.pop() ?? '';
  for (const line of lines) {
    if (end !== undefined) {
      after += 1;
      continue;
    }
    if (line === '') continue;
    const parsed = safeParseJson(line, { source: 'results stream line', schema });
    if (!parsed.success || parsed.value.nonce !== nonce) {
      foreign += 1;
      firstForeign ||= line.slice(0, 120);
      continue;
    }
    if (parsed.value.event === 'end') end = parsed.value;
    else records.push(parsed.value);
  }
  if (trailing !== '' && end !== undefined) after += 1;
  if (foreign > 0)
    problems.push(
      `the results stream held ${foreign} line(s) the runner did not write (first: ${JSON.stringify(firstForeign)})`,
    );
  if (after > 0)
    problems.push(
      `the results stream held ${after} line(s) after the runner's end record: something outlived the test process and wrote to it`,
    );
  if (options.overflow) problems.push('the results stream was larger than any runner writes');
  return { records, ...(end !== undefined ? { end } : {}), problems };
}

type PytestRecord = z.infer<typeof pytestRecordSchema>;
type NodeRecord = z.infer<typeof nodeRecordSchema>;

/**
 * Reads the pytest launcher's results stream: per-test statuses (each test's worst outcome over
 * every record) when it ended with this run's nonce and nothing else was written to it; every
 * test failed when the launcher saw tampering or the stream was not only the launcher's; no
 * results when it never ended. `exitCode` is the launcher process's: its end record must agree.
 */
export function readPytestStream(
  text: string,
  nonce: string,
  ids: readonly string[],
  options: { exitCode?: number | null; overflow?: boolean } = {},
): {
  statuses: Map<string, TestStatus>;
  note: string;
  tampered: string[];
  hints: string[];
  complete: boolean;
  forged: boolean;
} {
  const statuses = new Map<string, TestStatus>();
  const stream = readRunnerStream<PytestRecord>(text, nonce, pytestRecordSchema, options);
  const end = stream.end?.event === 'end' ? stream.end : undefined;
  const problems = [...stream.problems];
  if (end && end.exitstatus >= 128)
    problems.push(`the end record reports exit status ${end.exitstatus}, which pytest never returns`);
  else if (
    end &&
    options.exitCode !== undefined &&
    options.exitCode !== null &&
    options.exitCode !== end.exitstatus
  )
    problems.push(
      `pytest exited with ${options.exitCode} after reporting exit status ${end.exitstatus}: something ended the launcher after its end record`,
    );
  const hints = end?.hints ?? [];
  if (problems.length > 0) {
    for (const id of ids) statuses.set(id, 'failed');
    return {
      statuses,
      tampered: problems,
      hints,
      complete: end !== undefined,
      forged: true,
      note: `${problems.join('; ')}; every test counts as failed`,
    };
  }
  if (!end)
    return {
      statuses,
      tampered: [],
      hints,
      complete: false,
      forged: false,
      note: 'no end record: pytest stopped before the session finished (os._exit, a crash, killed or timed out); no test counts as passed',
    };
  if (end.tampered.length > 0) {
    for (const id of ids) statuses.set(id, 'failed');
    return {
      statuses,
      tampered: end.tampered,
      hints,
      complete: true,
      forged: false,
      note: `pytest was tampered with from inside the test process (${end.tampered.join('; ')}); every test counts as failed`,
    };
  }
  const rank: Record<TestStatus, number> = { passed: 0, missing: 1, failed: 2 };
  const worse = (id: string, status: TestStatus) => {
    const previous = statuses.get(id);
    if (!previous || rank[status] > rank[previous]) statuses.set(id, status);
  };
  for (const record of stream.records) if (record.event === 'result') worse(record.id, record.status);
  for (const [id, status] of Object.entries(end.results)) worse(id, status);
  return {
    statuses,
    tampered: [],
    hints,
    complete: true,
    forged: false,
    note: `results read from the launcher's results stream (pytest exit status ${end.exitstatus})`,
  };
}

function splitNodeId(id: string): { file: string; name: string } {
  const index = id.indexOf('::');
  return index < 0 ? { file: id, name: '' } : { file: id.slice(0, index), name: id.slice(index + 2) };
}

export interface RunTestsOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Absolute paths of the files the agent's change added or modified (for the runners' checks and hints). */
  changedFiles?: readonly string[];
  /** Absolute paths of the files the change added (pytest: loaded only by the tests' own imports). */
  addedFiles?: readonly string[];
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
    hints: [],
  };
  if (ids.length === 0) return empty;
  const dir = executor.tempDir;
  const nonce = randomUUID();
  const secretPath = `${dir}/secret-${randomUUID()}`;
  const runOptions = { timeoutMs: options.timeoutMs, ...(options.signal ? { signal: options.signal } : {}) };
  if (runner.runner === 'pytest') {
    const secret = {
      nonce,
      changed: options.changedFiles ?? [],
      added: options.addedFiles ?? [],
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
      { ...runOptions, results: 'stderr' },
    );
    await executor.settle();
    const read = readPytestStream(run.results, nonce, ids, {
      exitCode: run.timedOut ? null : run.exitCode,
      overflow: run.resultsOverflow,
    });
    for (const [id, status] of read.statuses) if (statuses.has(id)) statuses.set(id, status);
    return {
      statuses,
      output: `${run.output}\n### shears: ${read.note}`,
      exitCode: run.exitCode,
      timedOut: run.timedOut,
      complete: read.complete,
      tampered: read.tampered,
      forged: read.forged,
      hints: read.hints,
    };
  }
  const files = [...new Set(ids.map((id) => splitNodeId(id).file))];
  const sentinel = `shears-end-of-file-${randomUUID()}`;
  const runnerPath = `${dir}/runner-${randomUUID()}.mjs`;
  const entries = files.map((file, index) => ({ file, entry: `${dir}/entry-${index}-${randomUUID()}.mjs` }));
  const protectedScripts = Object.fromEntries(
    Object.entries(options.protectedFiles ?? {}).filter(
      (item): item is [string, string] => item[1] !== null && /\.c?js$/.test(item[0]),
    ),
  );
  await executor.writeFiles([
    ...entries.map(({ file, entry }) => ({
      path: entry,
      data: nodeTestEntry(file, sentinel, protectedScripts, options.changedFiles ?? []),
    })),
    { path: runnerPath, data: NODE_RUNNER },
    {
      path: secretPath,
      data: JSON.stringify({
        nonce,
        files: entries,
        protected: options.protectedFiles ?? {},
        killOthers: executor.ownsProcessTree,
      }),
      mode: 0o600,
    },
  ]);
  const run = await executor.run(['node', runnerPath, secretPath], { ...runOptions, results: 'stdout' });
  await executor.settle();
  const stream = readRunnerStream<NodeRecord>(run.results, nonce, nodeRecordSchema, {
    overflow: run.resultsOverflow,
  });
  const notes: string[] = [];
  const tampered = [...stream.problems];
  const hints: string[] = [];
  const end = stream.end?.event === 'end' ? stream.end : undefined;
  if (end && !run.timedOut && run.exitCode !== 0)
    tampered.push(
      `the node runner exited with ${run.exitCode} after its end record: something ended it after it reported`,
    );
  const reports = new Map<string, string>();
  for (const record of stream.records) {
    if (record.event !== 'file') continue;
    if (reports.has(record.file)) tampered.push(`the results stream reported ${record.file} twice`);
    reports.set(record.file, record.report);
  }
  const forged = tampered.length > 0;
  let complete = end !== undefined;
  if (!end) notes.push('no end record: the runner stopped before it finished; no test counts as passed');
  else {
    tampered.push(...end.tampered);
    for (const file of files) {
      const report = reports.get(file) ?? '';
      for (const match of report.matchAll(/^# shears-(hint|tampered): (.*)$/gm)) {
        const text = match[2]!.replace(/\\([\\#])/g, '$1');
        if (match[1] === 'tampered') tampered.push(text);
        else {
          // A hint grows as more files are read: keep the latest of each.
          const key = text.replace(/ while the tests run \(.*$/, '');
          const index = hints.findIndex((hint) => hint.replace(/ while the tests run \(.*$/, '') === key);
          if (index >= 0) hints[index] = text;
          else hints.push(text);
        }
      }
      const fileStatuses = parseTapReport(report);
      const finished = fileStatuses.get(sentinel) === 'passed';
      if (!finished) {
        complete = false;
        notes.push(
          `${file} stopped before its last test (process.exit, a crash, a kill, a changed reporting path): none of its tests count as passed`,
        );
      }
      for (const [name, status] of fileStatuses) {
        const id = `${file}::${name}`;
        if (!statuses.has(id)) continue;
        statuses.set(id, finished || status !== 'passed' ? status : 'failed');
      }
    }
  }
  if (tampered.length > 0) {
    for (const id of ids) statuses.set(id, 'failed');
    notes.push(`the test run was tampered with (${tampered.join('; ')}); every test counts as failed`);
  } else if (end) notes.push("results read from the runner's results stream");
  return {
    statuses,
    output: `${run.output}\n${notes.map((note) => `### shears: ${note}`).join('\n')}`,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    complete,
    tampered: [...new Set(tampered)],
    forged,
    hints: [...new Set(hints)],
  };
}
