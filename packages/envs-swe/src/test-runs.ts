// Running a task's tests and reading per-test results. Tests run through a `TestExecutor`: the
// grader's is a fresh container of the task image (see swe-grader.ts), where each runner, once
// the tests are done and before it writes its results, stops every other process in the
// container, and the grader reads the result file only after the container itself is stopped —
// nothing the code under test started can rewrite it. Results never come from what the run prints.
//
// pytest starts as `python3 -I -B -c <launcher>`: isolated (no PYTHON* variables, no user site,
// the repository last on sys.path, so the installed pytest wins over a planted `pytest.py`), with
// an in-memory plugin that records each test's worst outcome and checks, from inside the test
// process, for the tricks a change can play there (see PYTEST_LAUNCHER). Node's test runner runs
// through a runner script (`run()` of `node:test` per file, each file in a child process) that
// collects the TAP report in its own memory; a generated entry freezes `node:assert` and
// `node:test`, imports the test file and registers a sentinel test with a random name, so a file
// whose sentinel did not pass stopped early and none of its tests count as passed.
import { randomUUID } from 'node:crypto';
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
export function nodeTestEntry(
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
export const NODE_RUNNER = String.raw`
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
 * pytest internals whose replacement from inside the test process would forge results
 * (`module:attribute.path`). The launcher notes what each one is before any repository code runs,
 * checks that each is pytest's own (not patched before the launcher started), and checks again
 * with every result and at the end; a change marks every test failed.
 */
const PYTEST_WATCHED = [
  'builtins:AssertionError',
  'builtins:BaseException',
  'builtins:__shears_operand__',
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
  '_pytest.python:PyobjMixin.obj',
  '_pytest.runner:pytest_runtest_protocol',
  '_pytest.runner:pytest_runtest_call',
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
  '_pytest.assertion.rewrite:_rewrite_test',
  '_pytest.assertion.rewrite:_read_pyc',
  '_pytest.assertion.rewrite:AssertionRewritingHook.exec_module',
  'pluggy._callers:_multicall',
  'pluggy._hooks:HookCaller.__call__',
  'pluggy._hooks:_HookCaller.__call__',
  'pluggy._hooks:HookCaller._hookexec',
  'pluggy._hooks:_HookCaller._hookexec',
  'pluggy._manager:PluginManager._hookexec',
  'unittest.case:TestCase.run',
  'unittest.case:TestCase.assertEqual',
  'unittest.case:TestCase.assertNotEqual',
  'unittest.case:TestCase.assertAlmostEqual',
  'unittest.case:TestCase.assertIn',
  'unittest.case:TestCase.assertTrue',
  'sys:settrace',
  'sys:setprofile',
  'sys:meta_path',
];

/**
 * Starts pytest the way `python3 -m pytest` does, except isolated (`-I`: no PYTHON* variables, no
 * user site-packages, the working directory not on sys.path until the launcher appends it last,
 * so the installed pytest, its plugins and the standard library win over planted modules) and
 * without writing bytecode (`-B`).
 *
 * Results never come from what pytest prints. The first argument names a secret file (outside the
 * repository) holding the run's nonce, the report path and the files the agent changed; the
 * launcher reads and deletes it before any repository code runs, and runs pytest with an in-memory
 * plugin that records each test's worst outcome (failed in any phase over skipped or xfail,
 * `missing`, over passed in the call phase). When pytest returns, it stops every
 * other process of the container (when the grader owns it), writes results, nonce and any tampering
 * it saw to the report file and exits at once: a run that exits early leaves no report, a report
 * without the nonce is forged, and nothing it started is alive to rewrite the report.
 *
 * Tampering, seen from inside the test process:
 * - a watched pytest internal (`PYTEST_WATCHED`) replaced after start, or found replaced before
 *   start (its code does not come from the installed pytest, pluggy or the standard library);
 * - a plugin registered after the session started that is neither a conftest nor a module from
 *   outside the repository;
 * - a collected test whose function does not run the test file's own code: every test module's
 *   code is recorded as pytest compiles it, and each test function (through `__wrapped__`) must be
 *   that code, or code from a file the agent did not change; checked at collection and, with the
 *   item's class, its instance attributes (`runtest`, `setup`, `ihook`, … overridden on the
 *   instance) and its function, again before and after every test call;
 * - a profile or trace function from a changed file installed while a test runs;
 * - an assertion operand from a changed file that compares equal (or unequal, less, greater,
 *   containing) to anything: every comparison in a test's `assert` statement and in the main
 *   unittest assertion methods passes its operands through a guard that probes them against a
 *   fresh object, when the comparison is implemented by code from a changed file.
 */
export const PYTEST_LAUNCHER = `
def _shears_run():
    import ast, builtins, hashlib, importlib, importlib.machinery, json, os, sys
    dumps, fs_open, fs_write, fs_close, fs_unlink = json.dumps, os.open, os.write, os.close, os.unlink
    realpath, getpid, kill, listdir, exit_now = os.path.realpath, os.getpid, os.kill, os.listdir, os._exit
    set_profile, get_profile = sys.setprofile, sys.getprofile
    secret_path = sys.argv.pop(1)
    with open(secret_path) as secret_file:
        secret = json.loads(secret_file.read())
    fs_unlink(secret_path)
    nonce, report_path = secret["nonce"], secret["report"]
    changed = frozenset(realpath(path) for path in secret.get("changed", []))
    protected = {realpath(path): digest for path, digest in secret.get("protected", {}).items()}
    owns_container = secret.get("killOthers") is True
    cwd = os.getcwd()
    sys.path.append(cwd)
    import pytest
    import pluggy
    import unittest
    import _pytest
    import _pytest.assertion.rewrite as rewrite
    code_type = type(_shears_run.__code__)
    heap_type = 1 << 9
    missing = object()
    results, tampered, state = {}, [], {}
    rank = {"passed": 0, "missing": 1, "failed": 2}
    ours = set()

    def note(text):
        if text not in tampered:
            tampered.append(text)

    def untrusted(filename):
        return not filename or filename.startswith("<") or realpath(filename) in changed

    def code_of(value):
        if isinstance(value, property):
            value = value.fget
        value = getattr(value, "__func__", value)
        return getattr(value, "__code__", None)

    # Assertion operands that compare as anything.
    class Probe:
        __slots__ = ()

    comparisons = (
        ("__eq__", lambda value, probe: value == probe),
        ("__ne__", lambda value, probe: not (value != probe)),
        ("__lt__", lambda value, probe: value < probe),
        ("__le__", lambda value, probe: value <= probe),
        ("__gt__", lambda value, probe: value > probe),
        ("__ge__", lambda value, probe: value >= probe),
        ("__contains__", lambda value, probe: probe in value),
    )

    def implementation(cls, name):
        for klass in cls.__mro__:
            if name in vars(klass):
                if not klass.__flags__ & heap_type:
                    return None
                code = code_of(vars(klass)[name])
                if code is not None:
                    return code.co_filename
                module = sys.modules.get(klass.__module__)
                return getattr(module, "__file__", None) or "<unknown>"
        return None

    def operand(value):
        cls = type(value)
        if not cls.__flags__ & heap_type:
            return value
        for name, compare in comparisons:
            filename = implementation(cls, name)
            if filename is None or not untrusted(filename):
                continue
            try:
                matched = bool(compare(value, Probe()))
            except Exception:
                continue
            if matched:
                text = "a value of type %s compares as anything (%s from %s)" % (cls.__qualname__, name, filename)
                note(text)
                raise AssertionError("shears: " + text)
        return value

    ours.add(operand)
    builtins.__shears_operand__ = operand

    def wrap(expression):
        if isinstance(expression, ast.Constant):
            return expression
        call = ast.Call(func=ast.Name(id="__shears_operand__", ctx=ast.Load()), args=[expression], keywords=[])
        return ast.copy_location(call, expression)

    original_rewrite_asserts = rewrite.rewrite_asserts

    def rewrite_asserts(mod, source, module_path=None, config=None):
        for node in ast.walk(mod):
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
                node.test.left = wrap(node.test.left)
                node.test.comparators = [wrap(item) for item in node.test.comparators]
        ast.fix_missing_locations(mod)
        return original_rewrite_asserts(mod, source, module_path, config)

    # The code of every test module, as pytest compiles it (no cached bytecode is read).
    genuine, keep_alive = {}, []

    def verified(path, data):
        # Test files and test support are what the task put there: a change during the run is tampering.
        expected = protected.get(realpath(path), missing)
        if expected is not missing and hashlib.sha256(data).hexdigest() != expected:
            note("test file %s was changed during the run" % path)
        return data

    def rewrite_test(fn, config):
        # pytest's own _rewrite_test, compiling the very bytes that were checked.
        strfn = str(fn)
        stat = os.stat(fn)
        with open(strfn, "rb") as handle:
            source = verified(strfn, handle.read())
        tree = ast.parse(source, filename=strfn)
        rewrite.rewrite_asserts(tree, source, strfn, config)
        co = compile(tree, strfn, "exec", dont_inherit=True)
        codes, stack = set(), [co]
        while stack:
            current = stack.pop()
            codes.add(id(current))
            keep_alive.append(current)
            stack.extend(const for const in current.co_consts if isinstance(const, code_type))
        genuine.setdefault(realpath(strfn), codes)
        return stat, co

    class VerifiedLoader(importlib.machinery.SourceFileLoader):
        # Test support modules pytest does not rewrite: compiled from checked source, never from bytecode.
        def get_code(self, fullname):
            path = self.get_filename(fullname)
            with open(path, "rb") as handle:
                source = verified(path, handle.read())
            return compile(source, path, "exec", dont_inherit=True)

    protected_stems = {os.path.basename(path)[:-3] for path in protected if path.endswith(".py")}
    protected_stems |= {os.path.basename(os.path.dirname(path)) for path in protected if path.endswith("/__init__.py")}

    class VerifiedFinder:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name.rpartition(".")[2] not in protected_stems:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
            origin = getattr(spec, "origin", None)
            if not origin or not origin.endswith(".py") or realpath(origin) not in protected:
                return None
            spec.loader = VerifiedLoader(name, origin)
            return spec

    sys.meta_path.insert(0, VerifiedFinder)

    def read_pyc(*args, **kwargs):
        return None

    ours.add(VerifiedFinder)
    for name, replacement in (("rewrite_asserts", rewrite_asserts), ("_rewrite_test", rewrite_test), ("_read_pyc", read_pyc)):
        setattr(rewrite, name, replacement)
        ours.add(replacement)

    def guard_method(name):
        original = getattr(unittest.TestCase, name, None)
        if original is None:
            return

        def guarded(self, first, second, *args, **kwargs):
            return original(self, operand(first), operand(second), *args, **kwargs)

        guarded.__name__ = guarded.__qualname__ = name
        ours.add(guarded)
        setattr(unittest.TestCase, name, guarded)

    for name in ("assertEqual", "assertNotEqual", "assertAlmostEqual", "assertNotAlmostEqual", "assertIn", "assertNotIn",
                 "assertLess", "assertLessEqual", "assertGreater", "assertGreaterEqual", "assertCountEqual"):
        guard_method(name)

    # The watched internals, and whether each is what the installed packages define.
    roots = tuple(os.path.dirname(realpath(module.__file__)) + os.sep for module in (pytest, _pytest, pluggy, os, unittest))
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
        value = vars(owner).get(name, missing)
        watched.append((spec, owner, name, value))
        if value is missing or any(value is own for own in ours):
            continue
        if isinstance(value, type):
            if module_name == "builtins" and value.__flags__ & heap_type:
                note(spec + " was replaced before the launcher started")
            continue
        code = code_of(value)
        if code is not None and (untrusted(code.co_filename) or not realpath(code.co_filename).startswith(roots)):
            note("%s was replaced before the launcher started (by %s)" % (spec, code.co_filename))

    def check():
        if not any(finder is VerifiedFinder for finder in sys.meta_path):
            note("the launcher's import check was removed from sys.meta_path")
        for spec, owner, name, value in watched:
            if vars(owner).get(name, missing) is not value:
                note(spec)
        for hook in (sys.getprofile(), sys.gettrace()):
            if hook is None or any(hook is probe for probe in probes):
                continue
            code = code_of(hook)
            if code is None or untrusted(code.co_filename):
                note("a profile or trace function is installed while tests run (%r)" % (hook,))

    def allowed(plugin):
        if not isinstance(plugin, type(os)):
            return False
        file = realpath(getattr(plugin, "__file__", None) or "/")
        return os.path.basename(file) == "conftest.py" or not file.startswith(cwd + os.sep)

    suspect = ("runtest", "setup", "teardown", "_getobj", "ihook", "repr_failure", "reportinfo", "_prunetraceback", "obj")
    snapshots, targets, probes = {}, {}, []

    def function_of(item):
        obj = vars(item).get("_obj", missing)
        return getattr(obj, "__func__", obj)

    def test_codes(item):
        return genuine.get(realpath(str(getattr(item, "path", None) or getattr(item, "fspath", ""))))

    def verify_function(item, function):
        # Down the __wrapped__ chain to the test file's own code; a chain that never reaches it and
        # runs code from a changed file does not run the test.
        codes = test_codes(item)
        level, depth, foreign = function, 0, None
        while level is not None and depth < 32:
            code = getattr(level, "__code__", None)
            if code is None:
                break
            if codes is not None and id(code) in codes:
                return code
            if foreign is None and untrusted(code.co_filename):
                foreign = code
            level, depth = getattr(level, "__wrapped__", None), depth + 1
        if foreign is not None:
            note("%s: runs %s from %s instead of the test's own code" % (item.nodeid, foreign.co_name, foreign.co_filename))
        return None

    def own_code(item, function):
        # The test file's code this test must enter when it runs: found down the __wrapped__ chain,
        # else every code object of the test file with the test's name.
        found = verify_function(item, function)
        if found is not None:
            return {id(found)}
        codes = test_codes(item)
        name = getattr(item, "originalname", None) or getattr(item, "name", "")
        named = {id(code) for code in keep_alive if id(code) in (codes or ()) and code.co_name == name}
        return named or None

    def snapshot(item):
        try:
            item.obj
        except Exception:
            pass
        function = function_of(item)
        snapshots[id(item)] = (item, type(item), frozenset(vars(item)), function, getattr(function, "__code__", None))
        targets[id(item)] = own_code(item, function)

    def check_item(item):
        entry = snapshots.get(id(item))
        if entry is None or entry[0] is not item:
            note("a test that was not collected ran: %s" % (getattr(item, "nodeid", item),))
            return
        _, cls, keys, function, code = entry
        if type(item) is not cls:
            note("%s: the test item's class was replaced" % item.nodeid)
        for name in suspect:
            if name in vars(item) and name not in keys:
                note("%s: %s overridden on the test item" % (item.nodeid, name))
        current = function_of(item)
        if current is not function:
            note("%s: the test function was replaced" % item.nodeid)
        elif getattr(function, "__code__", None) is not code:
            note("%s: the test function's code was replaced" % item.nodeid)

    def stop_everything_else():
        if not owns_container:
            return 0
        try:
            with open("/proc/1/comm") as handle:
                init = handle.read().strip()
        except OSError:
            return 0
        if init not in ("docker-init", "tini"):
            return 0

        def stat(pid):
            try:
                with open("/proc/%d/stat" % pid) as handle:
                    rest = handle.read().rsplit(")", 1)[1].split()
                return rest[0], int(rest[1])
            except (OSError, IndexError, ValueError):
                return None, None

        def pids():
            return [int(name) for name in listdir("/proc") if name.isdigit()]

        me = getpid()
        keep, pid = {1, me}, me
        while True:
            _, parent = stat(pid)
            if not parent or parent in keep:
                break
            keep.add(parent)
            pid = parent
        children = [pid for pid in pids() if stat(pid)[1] == 1]
        if children:
            keep.add(min(children))
        stopped = 0
        for _ in range(8):
            victims = [pid for pid in pids() if pid not in keep and stat(pid)[0] not in (None, "Z")]
            if not victims:
                break
            for signal_number in (19, 9):
                for pid in victims:
                    try:
                        kill(pid, signal_number)
                    except OSError:
                        pass
            stopped += len(victims)
        return stopped

    def finish(exitstatus):
        check()
        stopped = stop_everything_else()
        data = dumps({"nonce": nonce, "results": results, "tampered": tampered, "exitstatus": int(exitstatus), "stopped": stopped}).encode()
        fd = fs_open(report_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            while data:
                data = data[fs_write(fd, data):]
        finally:
            fs_close(fd)
        for stream in (sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        exit_now(int(exitstatus))

    class ShearsResults:
        __slots__ = ()

        @pytest.hookimpl(trylast=True)
        def pytest_sessionstart(self, session):
            state["config"] = session.config

        def pytest_plugin_registered(self, plugin):
            if "config" in state and not allowed(plugin):
                note("plugin registered during the run: " + repr(plugin)[:200])

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session):
            for item in session.items:
                snapshot(item)

        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtest_call(self, item):
            check()
            check_item(item)
            # Watch for the test file's own code being entered (then stop watching): a call that
            # passes without it ran something else.
            wanted, entered = targets.get(id(item)), []

            def probe(frame, event, arg):
                if event == "call" and id(frame.f_code) in wanted:
                    entered.append(True)
                    set_profile(None)

            if wanted:
                probes[:] = [probe]
                set_profile(probe)
            outcome = yield
            if wanted:
                if get_profile() is probe:
                    set_profile(None)
                if not entered and outcome.excinfo is None:
                    note("%s: the test's own code never ran" % item.nodeid)
            check()
            check_item(item)

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

    check()
    finish(pytest.main(sys.argv[1:], plugins=[ShearsResults()]))

WATCHED = ${JSON.stringify(PYTEST_WATCHED)}
_shears_run()
`;

/** What the pytest launcher writes at the end of a session (see `PYTEST_LAUNCHER`). */
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
        PYTEST_LAUNCHER,
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
