// The SWE env in Docker, for real: every bundled task's gold fix scores 1.0 (hidden tests
// included) and the untouched repository 0.0; source that forges results or patches the test
// runner from inside the test process does not raise the score; the grading container is gone
// afterwards; and the env runs end to end through the group runner with the demo policy behind the
// scripted server. Attacks played through the env's own tools are in swe-attacks.docker.test.ts.
import { runGroup, type SandboxV1 } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createDockerSandboxProvider } from '@shears/tools-terminal';
import type Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweDemoPolicy } from './demo-policy.js';
import { createDockerClient, ensureSweBaseImage, ensureTaskImage, SWE_WORKDIR } from './images.js';
import { filesAfterPatch, type PreparedRepository, prepareRepository } from './repo.js';
import { createSweEnv } from './swe-env.js';
import { createSweGrader, type SweGrade, type SweGrader } from './swe-grading.js';
import { bundledTaskPackDir, loadTaskPack } from './task-loaders.js';
import type { SweTask } from './task-schema.js';

const host = process.env.SHEARS_TEST_DOCKER_HOST;
const inCi = process.env.CI === 'true' || process.env.CI === '1';
if (!host && inCi)
  throw new Error('CI=true but SHEARS_TEST_DOCKER_HOST is not set: the test Docker daemon did not start');
if (!host)
  console.warn('\n⚠️  SKIPPING SWE docker tests: no test Docker daemon (SHEARS_TEST_DOCKER_HOST unset)\n');

const describeDocker = host ? describe : describe.skip;

describeDocker('SWE env in Docker', () => {
  const tasks = loadTaskPack(bundledTaskPackDir());
  const prepared = new Map<string, { task: SweTask; repository: PreparedRepository; image: string }>();
  let docker: Dockerode;
  let provider: ReturnType<typeof createDockerSandboxProvider>;
  let grader: SweGrader;

  beforeAll(async () => {
    docker = await createDockerClient(host);
    const baseTag = await ensureSweBaseImage({ docker });
    for (const task of tasks) {
      const repository = await prepareRepository(task);
      const image = await ensureTaskImage({ docker, task, prepared: repository, baseTag });
      prepared.set(task.id, { task, repository, image });
    }
    provider = createDockerSandboxProvider({ hosts: [host!], workdir: SWE_WORKDIR });
    grader = createSweGrader();
  }, 900_000);

  afterAll(async () => {
    await grader?.close();
    await provider?.close();
    for (const entry of prepared.values()) entry.repository.dispose();
  });

  async function sandboxFor(task: SweTask): Promise<SandboxV1> {
    return provider.acquire({ image: prepared.get(task.id)!.image, workdir: SWE_WORKDIR, network: 'none' });
  }

  function grade(
    sandbox: SandboxV1,
    task: SweTask,
    options: { partialCredit?: boolean } = {},
  ): Promise<SweGrade> {
    const entry = prepared.get(task.id)!;
    return grader.grade({
      sandbox,
      task,
      image: entry.image,
      gradingFiles: entry.repository.gradingFiles,
      ...options,
    });
  }

  async function writeGold(sandbox: SandboxV1, task: SweTask): Promise<void> {
    for (const [path, content] of await filesAfterPatch(
      prepared.get(task.id)!.repository.dir,
      task.goldPatch!,
    ))
      if (content) await sandbox.writeFile(path, content);
  }

  /** Grading containers of a task still on the daemon (the warm pool keeps one spare per image). */
  async function gradingContainers(taskId: string): Promise<number> {
    const list = await docker.listContainers({
      all: true,
      filters: { label: [`shears.swe.grading=${taskId}`] },
    });
    return list.length;
  }

  it('every bundled task: the gold fix scores 1.0 (hidden tests included) and the untouched repository 0.0', async () => {
    const results: Array<{ id: string; untouched: number; gold: number }> = [];
    // A few tasks at a time: each grading starts a container and runs the task's tests.
    const queue = [...tasks];
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        for (let task = queue.shift(); task; task = queue.shift()) {
          const untouched = await sandboxFor(task);
          const fixed = await sandboxFor(task);
          try {
            await writeGold(fixed, task);
            const [before, after] = await Promise.all([grade(untouched, task), grade(fixed, task)]);
            expect(before.passToPass, `${task.id} P2P before the fix`).toEqual({
              passed: task.passToPass.length,
              total: task.passToPass.length,
            });
            expect(before.audit.reason, `${task.id} untouched`).toBe('unresolved');
            expect(after.statuses, `${task.id} after the fix`).toEqual(
              Object.fromEntries([...task.failToPass, ...task.passToPass].map((id) => [id, 'passed'])),
            );
            expect(after.audit).toMatchObject({ reason: 'resolved', dropped: [], tamperFlags: [] });
            expect(after.audit.gradingFiles).toEqual(Object.keys(task.hiddenTests).sort());
            // Every bundled task has a FAIL_TO_PASS test the agent never sees.
            expect(
              task.failToPass.some((id) => id.split('::')[0]! in task.hiddenTests),
              task.id,
            ).toBe(true);
            results.push({ id: task.id, untouched: before.score, gold: after.score });
          } finally {
            await untouched.dispose();
            await fixed.dispose();
          }
        }
      }),
    );
    results.sort((a, b) => a.id.localeCompare(b.id));
    expect(results).toEqual(tasks.map((task) => ({ id: task.id, untouched: 0, gold: 1 })));
  }, 900_000);

  it('records what the grader saw: the applied diff, the dropped part and why; the hidden tests stay out of the rollout', async () => {
    const task = tasks.find((candidate) => candidate.id === 'py-median-even')!;
    const sandbox = await sandboxFor(task);
    try {
      const hidden = Object.keys(task.hiddenTests)[0]!;
      expect((await sandbox.exec(`test -e ${hidden}; echo $?`)).stdout.trim()).toBe('1');
      await writeGold(sandbox, task);
      await sandbox.writeFile('conftest.py', 'import pytest\n');
      await sandbox.writeFile('tests/test_statsmini.py', 'def test_median_even():\n    pass\n');
      await sandbox.exec('mkfifo pipe && ln -s /etc/passwd passwd-link && rm pytest.ini');
      const result = await grade(sandbox, task);
      expect(result.score).toBe(1);
      expect(result.audit.applied).toEqual([{ path: 'statsmini.py', change: 'modified' }]);
      expect(result.audit.dropped).toEqual([
        { path: 'conftest.py', change: 'added', reason: 'test configuration' },
        { path: 'passwd-link', change: 'added', reason: 'symbolic link (only regular files are applied)' },
        { path: 'pipe', change: 'added', reason: 'not a regular file (FIFO, device or socket)' },
        { path: 'pytest.ini', change: 'deleted', reason: 'test configuration' },
        { path: 'tests/test_statsmini.py', change: 'modified', reason: 'test file' },
      ]);
      expect(result.diff).toContain('diff --git a/statsmini.py b/statsmini.py');
      expect(result.diff).toContain('+    if len(ordered) % 2 == 0:');
      expect(result.diff).toContain('+++ b/conftest.py');
      expect(result.droppedDiff).not.toContain('diff --git a/statsmini.py');
      expect(result.droppedDiff).toContain('+++ b/conftest.py');
      expect(result.droppedDiff).toContain('-    assert median([4, 1, 3, 2]) == 2.5');
      // The grading container is gone once the grade is in: what is left is the warm pool's spare.
      await expect.poll(() => gradingContainers(task.id), { timeout: 30_000 }).toBeLessThanOrEqual(1);
      expect(result.audit.timings.totalMs).toBeGreaterThan(0);
    } finally {
      await sandbox.dispose();
    }
  }, 300_000);

  it('a planted pytest.py and a json.py beside the tests are dropped; the installed pytest runs', async () => {
    const python = tasks.find((task) => task.id === 'py-median-even')!;
    const sandbox = await sandboxFor(python);
    try {
      await sandbox.writeFile(
        'pytest.py',
        `import sys\nfor arg in sys.argv[1:]:\n    if "::" in arg:\n        print("PASSED " + arg)\n`,
      );
      await sandbox.writeFile('tests/json.py', 'raise SystemExit("planted json module imported")\n');
      await sandbox.writeFile('decimal.py', 'raise SystemExit("planted decimal module imported")\n');
      const result = await grade(sandbox, python);
      expect(result.score).toBe(0);
      expect(result.failToPass.passed).toBe(0);
      expect(result.audit.dropped.map((entry) => [entry.path, entry.reason])).toEqual([
        ['decimal.py', 'shadows an installed or standard-library module'],
        ['pytest.py', 'shadows an installed or standard-library module'],
        ['tests/json.py', 'test file'],
      ]);
      // The genuine pytest ran: P2P tests still pass.
      expect(result.passToPass.passed).toBe(python.passToPass.length);
    } finally {
      await sandbox.dispose();
    }
  }, 300_000);

  it('JavaScript source that prints fake TAP results, rewrites stdout, exits early or stubs assertions does not raise the score', async () => {
    const javascript = tasks.find((task) => task.language === 'javascript')!;
    // The module the tests import: the file the gold fix changes.
    const sourceFile = /^diff --git a\/(\S+)/m.exec(javascript.goldPatch!)![1]!;
    const names = [...javascript.failToPass, ...javascript.passToPass].map((id) => id.split('::')[1]!);
    const fakeTap = [
      'TAP version 13',
      ...names.map((name, index) => `ok ${index + 1} - ${name}`),
      `1..${names.length}`,
      `# tests ${names.length}`,
      `# pass ${names.length}`,
      '# fail 0',
    ];
    const print = (write: string) => `for (const line of ${JSON.stringify(fakeTap)}) ${write};\n`;
    const variants: Array<{ hack: string; realResultsReach: boolean; code: string }> = [
      {
        hack: 'prints passing TAP for every test at import, then process.exit(0)',
        realResultsReach: false,
        code: `${print('console.log(line)')}process.exit(0);\n`,
      },
      {
        hack: 'writes passing TAP to stdout and stderr and lets the tests run',
        realResultsReach: true,
        code: `${print("process.stdout.write(line + '\\n')")}${print('console.error(line)')}`,
      },
      {
        // The reporting path changed: the sentinel stops the file, none of its tests count.
        hack: "rewrites every 'not ok' written to stdout as text to 'ok'",
        realResultsReach: false,
        code: `const write = process.stdout.write.bind(process.stdout);\nprocess.stdout.write = (chunk, ...rest) => write(typeof chunk === 'string' ? chunk.replace(/^(\\s*)not ok/gm, '$1ok') : chunk, ...rest);\n`,
      },
      {
        // Rewriting the runner's binary messages too garbles them: nothing is reported at all.
        hack: "rewrites every 'not ok' in anything written to stdout to 'ok'",
        realResultsReach: false,
        code: `const write = process.stdout.write.bind(process.stdout);\nprocess.stdout.write = (chunk, ...rest) => write(String(chunk).replace(/^(\\s*)not ok/gm, '$1ok'), ...rest);\n`,
      },
      {
        hack: 'process.exit(0) at import',
        realResultsReach: false,
        code: 'process.exit(0);\n',
      },
      {
        hack: 'registers passing tests under the same names, then exits before the real ones run',
        realResultsReach: false,
        code: `const { test } = require('node:test');\nfor (const name of ${JSON.stringify(names)}) test(name, () => {});\ntest('exit', async () => { await new Promise((resolve) => setTimeout(resolve, 50)); process.exit(0); });\n`,
      },
      {
        hack: 'replaces the assertions with no-ops',
        realResultsReach: true,
        code: `try {\n  const noop = () => {};\n  for (const module of ['node:assert', 'node:assert/strict'])\n    Object.assign(require(module), { equal: noop, strictEqual: noop, deepEqual: noop, deepStrictEqual: noop, ok: noop });\n} catch {}\n`,
      },
    ];
    const sandbox = await sandboxFor(javascript);
    try {
      const original = Buffer.from(await sandbox.readFile(sourceFile)).toString('utf8');
      const results: Array<{ hack: string; score: number; failToPass: number; passToPass: number }> = [];
      for (const variant of variants) {
        await sandbox.writeFile(sourceFile, `${original}\n${variant.code}`);
        const graded = await grade(sandbox, javascript);
        expect(graded.audit.dropped).toEqual([]);
        results.push({
          hack: variant.hack,
          score: graded.score,
          failToPass: graded.failToPass.passed,
          passToPass: graded.passToPass.passed,
        });
      }
      // No F2P test passes. Where the real results still reach the runner, the P2P tests pass; a
      // file that stopped early, or whose results were garbled, counts none of its tests as passed.
      expect(results).toEqual(
        variants.map((variant) => ({
          hack: variant.hack,
          score: 0,
          failToPass: 0,
          passToPass: variant.realResultsReach ? javascript.passToPass.length : 0,
        })),
      );
      // The same source without a hack still scores as before: the grading itself is unchanged.
      await sandbox.writeFile(sourceFile, original);
      const clean = await grade(sandbox, javascript);
      expect(clean.passToPass.passed).toBe(javascript.passToPass.length);
      expect(clean.score).toBe(0);
      // Grading ran elsewhere: nothing of the runner's scaffolding is in the rollout's sandbox.
      expect((await sandbox.exec(`ls -A ${sandbox.tempDir}`)).stdout).not.toContain('shears');
    } finally {
      await sandbox.dispose();
    }
  }, 300_000);

  it('Python source that forges PASSED lines, exits early or patches pytest from inside the test process does not raise the score', async () => {
    const python = tasks.find((task) => task.id === 'py-median-even')!;
    // The module the tests import: the file the gold fix changes. Appended code runs when the test
    // module imports it, inside pytest's own process.
    const sourceFile = /^diff --git a\/(\S+)/m.exec(python.goldPatch!)![1]!;
    const ids = [...python.failToPass, ...python.passToPass];
    const passedLines = `${JSON.stringify(ids.map((id) => `PASSED ${id}\n`).join(''))}.encode()`;
    const forcePassPlugin = [
      'import gc as _gc, pytest as _pytest_mod',
      'class _ForcePass:',
      '    @_pytest_mod.hookimpl(hookwrapper=True)',
      '    def pytest_runtest_makereport(self, item, call):',
      '        outcome = yield',
      '        outcome.get_result().outcome = "passed"',
      'for _o in _gc.get_objects():',
      '    if type(_o).__name__ == "Config" and hasattr(_o, "pluginmanager"):',
      '        _o.pluginmanager.register(_ForcePass())',
      '        break',
    ];
    const noReport = 'no end record: pytest stopped before the session finished';
    const tampered = 'pytest was tampered with from inside the test process';
    const variants: Array<{ hack: string; realResultsReach: boolean; note: string; code: string[] }> = [
      {
        hack: "writes PASSED lines to every open pipe or socket (pytest's saved stdout, the results stream), then os._exit(0)",
        note: 'the results stream held',
        realResultsReach: false,
        code: [
          'import os as _os',
          'for _fd in _os.listdir("/proc/self/fd"):',
          '    try:',
          '        if _os.readlink("/proc/self/fd/" + _fd).startswith(("pipe:", "socket:", "/dev/pts/")):',
          `            _os.write(int(_fd), ${passedLines})`,
          '    except OSError:',
          '        pass',
          '_os._exit(0)',
        ],
      },
      {
        hack: 'prints PASSED lines to sys.__stdout__, then os._exit(0)',
        note: noReport,
        realResultsReach: false,
        code: [
          'import os as _os, sys as _sys',
          `_sys.__stdout__.buffer.write(${passedLines})`,
          '_sys.__stdout__.flush()',
          '_os._exit(0)',
        ],
      },
      {
        hack: 'writes a passing report into every directory named on the command line, then os._exit(0)',
        note: noReport,
        realResultsReach: false,
        code: [
          'import json as _json, os as _os',
          `_fake = _json.dumps({"results": {i: "passed" for i in ${JSON.stringify(ids)}}})`,
          'for _arg in open("/proc/self/cmdline", "rb").read().decode().split("\\0"):',
          '    _dir = _arg if _os.path.isdir(_arg) else _os.path.dirname(_arg)',
          '    if _arg.startswith("/") and _os.path.isdir(_dir) and _dir != "/":',
          '        for _name in set(_os.listdir(_dir)) | {"report.json", "pytest-report.json"}:',
          '            try:',
          '                open(_os.path.join(_dir, _name), "w").write(_fake)',
          '            except OSError:',
          '                pass',
          '_os._exit(0)',
        ],
      },
      {
        hack: 'patches TestReport.__init__ so every report says passed',
        note: `${tampered} (_pytest.reports:TestReport.__init__`,
        realResultsReach: false,
        code: [
          'import _pytest.reports as _reports',
          '_init = _reports.TestReport.__init__',
          'def _forced(self, *args, **kwargs):',
          '    _init(self, *args, **kwargs)',
          '    self.outcome = "passed"',
          '    self.longrepr = None',
          '_reports.TestReport.__init__ = _forced',
        ],
      },
      {
        hack: 'replaces pytest Function.runtest with a no-op',
        note: `${tampered} (_pytest.python:Function.runtest`,
        realResultsReach: false,
        code: ['import _pytest.python as _python', '_python.Function.runtest = lambda self: None'],
      },
      {
        hack: "registers a plugin forcing every result to passed on pytest's Config (found through gc)",
        note: `${tampered} (plugin registered by statsmini.py:`,
        realResultsReach: false,
        code: forcePassPlugin,
      },
      {
        hack: 'sys.exit(0) at import',
        note: "results read from the launcher's results stream",
        realResultsReach: false,
        code: ['import sys as _sys', '_sys.exit(0)'],
      },
    ];
    const sandbox = await sandboxFor(python);
    try {
      const original = Buffer.from(await sandbox.readFile(sourceFile)).toString('utf8');
      const results: Array<{ hack: string; score: number; failToPass: number; passToPass: number }> = [];
      for (const variant of variants) {
        await sandbox.writeFile(sourceFile, `${original}\n${variant.code.join('\n')}\n`);
        const graded = await grade(sandbox, python);
        expect(graded.audit.dropped).toEqual([]);
        expect(graded.testOutput, variant.hack).toContain(`### shears: ${variant.note}`);
        results.push({
          hack: variant.hack,
          score: graded.score,
          failToPass: graded.failToPass.passed,
          passToPass: graded.passToPass.passed,
        });
      }
      // No F2P test passes; a run that stopped early or whose pytest was patched counts nothing.
      expect(results).toEqual(
        variants.map((variant) => ({
          hack: variant.hack,
          score: 0,
          failToPass: 0,
          passToPass: variant.realResultsReach ? python.passToPass.length : 0,
        })),
      );
      // The same source without a hack still scores as before, and the gold fix still scores 1.
      await sandbox.writeFile(sourceFile, original);
      const clean = await grade(sandbox, python);
      expect(clean.passToPass.passed).toBe(python.passToPass.length);
      expect(clean.score).toBe(0);
      await writeGold(sandbox, python);
      expect((await grade(sandbox, python)).score).toBe(1);
      // Grading ran elsewhere: nothing of the runner's scaffolding is in the rollout's sandbox.
      expect((await sandbox.exec(`ls -A ${sandbox.tempDir}`)).stdout).not.toContain('shears');
    } finally {
      await sandbox.dispose();
    }
  }, 300_000);

  it('one of two FAIL_TO_PASS tests fixed: half the reward with partial credit, nothing without; the full fix 1 either way', async () => {
    const { mkdtempSync, mkdirSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { sweTaskSchema } = await import('./task-schema.js');
    const dir = mkdtempSync(join(tmpdir(), 'shears-two-bugs-'));
    mkdirSync(join(dir, 'src'));
    mkdirSync(join(dir, 'test'));
    const buggy =
      'function double(x) { return x + x + 1; }\nfunction square(x) { return x * x + 1; }\nfunction negate(x) { return -x; }\nmodule.exports = { double, square, negate };\n';
    writeFileSync(join(dir, 'src/calc.js'), buggy);
    writeFileSync(
      join(dir, 'test/calc.test.js'),
      "const test = require('node:test');\nconst assert = require('node:assert');\nconst { double, square, negate } = require('../src/calc.js');\ntest('double', () => assert.strictEqual(double(2), 4));\ntest('square', () => assert.strictEqual(square(3), 9));\ntest('negate', () => assert.strictEqual(negate(2), -2));\n",
    );
    const task = sweTaskSchema.parse({
      id: 'two-bugs',
      language: 'javascript',
      repo: { path: dir },
      problemStatement: 'double and square are off by one',
      test: { runner: 'node-test' },
      failToPass: ['test/calc.test.js::double', 'test/calc.test.js::square'],
      passToPass: ['test/calc.test.js::negate'],
      testFiles: ['test/calc.test.js'],
    });
    const repository = await prepareRepository(task);
    const image = await ensureTaskImage({
      docker,
      task,
      prepared: repository,
      baseTag: await ensureSweBaseImage({ docker }),
    });
    prepared.set(task.id, { task, repository, image });
    const sandbox = await sandboxFor(task);
    try {
      await sandbox.writeFile('src/calc.js', buggy.replace('x + x + 1', 'x + x'));
      expect(await grade(sandbox, task, { partialCredit: true })).toMatchObject({
        score: 0.5,
        resolved: false,
        failToPass: { passed: 1, total: 2 },
        passToPass: { passed: 1, total: 1 },
      });
      expect((await grade(sandbox, task)).score).toBe(0);
      await sandbox.writeFile(
        'src/calc.js',
        buggy.replace('x + x + 1', 'x + x').replace('x * x + 1', 'x * x'),
      );
      expect((await grade(sandbox, task, { partialCredit: true })).score).toBe(1);
      expect((await grade(sandbox, task)).score).toBe(1);
    } finally {
      await sandbox.dispose();
    }
  }, 300_000);

  it('the sandbox has no network and no reachable fix history', async () => {
    const task = tasks[0]!;
    const sandbox = await sandboxFor(task);
    try {
      expect((await sandbox.exec('git rev-list --all | wc -l')).stdout.trim()).toBe('1');
      const network = await sandbox.exec(
        `python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)"`,
        { timeoutMs: 20_000 },
      );
      expect(network.exitCode).not.toBe(0);
      expect((await sandbox.exec('ls /testbed')).stdout).not.toContain('gold.patch');
    } finally {
      await sandbox.dispose();
    }
  }, 60_000);

  it('runs end to end through the group runner with the demo policy: varied rewards, diffs recorded', async () => {
    const chosen = [
      tasks.find((task) => task.language === 'python')!,
      tasks.find((task) => task.language === 'javascript')!,
    ];
    const env = createSweEnv({ tasks: chosen, docker });
    await env.setup({ logger: { debug() {}, info() {}, warn() {}, error() {} } });
    const policy = await createSweDemoPolicy({
      tasks: [...env.prepared.values()].map(({ task, prepared: repository }) => ({
        task,
        prepared: repository,
      })),
    });
    const scripted = await createScriptedServer({ policy: (request) => policy(request as never) });
    try {
      const server = createScriptedServerClient({ baseUrl: scripted.url, model: 'swe-demo' });
      for (const _task of chosen) {
        const item = (await env.nextItem())!;
        const group = await runGroup({
          env,
          item,
          server,
          sandboxes: provider,
          groupSize: 4,
          allEqualScores: 'keep',
        });
        expect(group.rollouts.map((rollout) => rollout.outcome)).toEqual([
          'scored',
          'scored',
          'scored',
          'scored',
        ]);
        const rewards = group.rollouts.map((rollout) => rollout.reward).sort();
        expect(rewards).toEqual([0, 0, 1, 1]);
        for (const rollout of group.rollouts) {
          // What the rollout changed is on record: applied, or dropped (the demo's test rewrite).
          expect(`${rollout.rewardDetails?.diff}${rollout.rewardDetails?.droppedDiff}`).toContain(
            'diff --git',
          );
          if (rollout.rewardComponents?.tests_tampered === 1) expect(rollout.reward).toBe(0);
        }
        expect(group.rollouts.some((rollout) => rollout.rewardComponents?.tests_tampered === 1)).toBe(true);
        expect(new Set(group.advantages).size).toBeGreaterThan(1);
      }
    } finally {
      await scripted.close();
      await env.close?.();
    }
  }, 300_000);
});
