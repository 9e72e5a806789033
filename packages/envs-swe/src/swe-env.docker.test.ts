// The SWE env in Docker, for real: every bundled task's gold fix scores 1.0 and the untouched
// repository 0.0; tampering with the tests in a container does not raise the score; and the env
// runs end to end through the group runner with the demo policy behind the scripted server.
import { runGroup, type SandboxV1 } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createDockerSandboxProvider, createTerminalTool } from '@shears/tools-terminal';
import type Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweDemoPolicy } from './demo-policy.js';
import { createDockerClient, ensureSweBaseImage, ensureTaskImage, SWE_WORKDIR } from './images.js';
import { filesAfterPatch, type PreparedRepository, prepareRepository } from './repo.js';
import { createSweEnv } from './swe-env.js';
import { gradeSweRollout } from './swe-grading.js';
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

  beforeAll(async () => {
    docker = await createDockerClient(host);
    const baseTag = await ensureSweBaseImage({ docker });
    for (const task of tasks) {
      const repository = await prepareRepository(task);
      const image = await ensureTaskImage({ docker, task, prepared: repository, baseTag });
      prepared.set(task.id, { task, repository, image });
    }
    provider = createDockerSandboxProvider({ hosts: [host!], workdir: SWE_WORKDIR });
  }, 900_000);

  afterAll(async () => {
    await provider?.close();
    for (const entry of prepared.values()) entry.repository.dispose();
  });

  async function sandboxFor(task: SweTask): Promise<SandboxV1> {
    return provider.acquire({ image: prepared.get(task.id)!.image, workdir: SWE_WORKDIR, network: 'none' });
  }

  it('every bundled task: the gold fix scores 1.0 and the untouched repository 0.0', async () => {
    const results: Array<{ id: string; untouched: number; gold: number }> = [];
    // A few tasks at a time: each grading starts a container and runs the task's tests.
    const queue = [...tasks];
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        for (let task = queue.shift(); task; task = queue.shift()) {
          const entry = prepared.get(task.id)!;
          const untouched = await sandboxFor(task);
          const fixed = await sandboxFor(task);
          try {
            for (const [path, content] of await filesAfterPatch(entry.repository.dir, task.goldPatch!)) {
              if (content) await fixed.writeFile(path, content);
            }
            const [before, after] = await Promise.all([
              gradeSweRollout({ sandbox: untouched, task, protectedFiles: entry.repository.protectedFiles }),
              gradeSweRollout({ sandbox: fixed, task, protectedFiles: entry.repository.protectedFiles }),
            ]);
            expect(before.passToPass, `${task.id} P2P before the fix`).toEqual({
              passed: task.passToPass.length,
              total: task.passToPass.length,
            });
            expect(after.statuses, `${task.id} after the fix`).toEqual(
              Object.fromEntries([...task.failToPass, ...task.passToPass].map((id) => [id, 'passed'])),
            );
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
  }, 600_000);

  it('editing or deleting tests, or planting a conftest.py, does not raise the score', async () => {
    const python = tasks.find((task) => task.language === 'python')!;
    const javascript = tasks.find((task) => task.language === 'javascript')!;
    const pythonEntry = prepared.get(python.id)!;
    // A conftest that turns every test result into a pass.
    const conftest = `import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    report.outcome = "passed"\n`;
    const planted = await sandboxFor(python);
    try {
      await planted.writeFile('conftest.py', conftest);
      const grade = await gradeSweRollout({
        sandbox: planted,
        task: python,
        protectedFiles: pythonEntry.repository.protectedFiles,
      });
      expect(grade.score).toBe(0);
      expect(grade.removedFiles).toEqual(['conftest.py']);
    } finally {
      await planted.dispose();
    }
    const rewritten = await sandboxFor(python);
    try {
      const testFile = python.testFiles[0]!;
      const names = [...python.failToPass, ...python.passToPass].map((id) => id.split('::')[1]!);
      await rewritten.writeFile(
        testFile,
        names.map((name) => `def ${name}():\n    assert True\n`).join('\n'),
      );
      const grade = await gradeSweRollout({
        sandbox: rewritten,
        task: python,
        protectedFiles: pythonEntry.repository.protectedFiles,
      });
      expect(grade.score).toBe(0);
      expect(grade.tamperedFiles).toEqual([testFile]);
    } finally {
      await rewritten.dispose();
    }
    const deleted = await sandboxFor(javascript);
    try {
      await deleted.exec('rm -rf test');
      const grade = await gradeSweRollout({
        sandbox: deleted,
        task: javascript,
        protectedFiles: prepared.get(javascript.id)!.repository.protectedFiles,
      });
      expect(grade.score).toBe(0);
      expect(grade.tamperedFiles).toEqual(javascript.testFiles);
    } finally {
      await deleted.dispose();
    }
  }, 300_000);

  it('a planted pytest.py, a tests/pyproject.toml loading a plugin, or a background process rewriting the tests does not raise the score', async () => {
    const python = tasks.find(
      (task) => task.language === 'python' && task.testFiles[0]!.startsWith('tests/'),
    )!;
    const entry = prepared.get(python.id)!;
    const grade = (sandbox: SandboxV1) =>
      gradeSweRollout({
        sandbox,
        task: python,
        protectedFiles: entry.repository.protectedFiles,
        baseCommit: entry.repository.baseCommit,
      });
    const testFile = python.testFiles[0]!;
    const names = [...python.failToPass, ...python.passToPass].map((id) => id.split('::')[1]!);
    const hackedTests = names.map((name) => `def ${name}():\n    assert True\n`).join('\n');
    // A plugin that turns every test result into a pass.
    const forcePass = `import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = "passed"\n`;

    // 1. A fake pytest at the root: `python3 -m pytest` would run it, and it prints a pass per id.
    const fakePytest = await sandboxFor(python);
    try {
      await fakePytest.writeFile(
        'pytest.py',
        `import sys\nfor arg in sys.argv[1:]:\n    if "::" in arg:\n        print("PASSED " + arg)\n`,
      );
      await fakePytest.writeFile('tests/json.py', 'raise SystemExit("planted json module imported")\n');
      const result = await grade(fakePytest);
      expect(result.score).toBe(0);
      expect(result.failToPass.passed).toBe(0);
      expect(result.removedFiles).toEqual(['pytest.py', 'tests/json.py']);
      // The genuine pytest ran: P2P tests still pass.
      expect(result.passToPass.passed).toBe(python.passToPass.length);
    } finally {
      await fakePytest.dispose();
    }

    // 2. pytest.ini at the root is protected, but a pyproject.toml nearer the tests is found first.
    const plugin = await sandboxFor(python);
    try {
      await plugin.writeFile('shears_force_pass.py', forcePass);
      await plugin.writeFile(
        'tests/pyproject.toml',
        '[tool.pytest.ini_options]\naddopts = "-p shears_force_pass"\npythonpath = [".."]\n',
      );
      // Hidden from `git status` through .gitignore: ignored files are removed too.
      await plugin.exec("printf 'tests/pyproject.toml\\n' >> .git/info/exclude");
      const result = await grade(plugin);
      expect(result.score).toBe(0);
      expect(result.removedFiles).toEqual(['tests/pyproject.toml']);
    } finally {
      await plugin.dispose();
    }

    // 3. A background process started with the terminal tool keeps rewriting the test file, so it
    //    would undo the restoration between restore and test run.
    const background = await sandboxFor(python);
    try {
      await background.writeFile('/tmp/hacked.py', hackedTests);
      const terminal = createTerminalTool();
      const started = await terminal.execute(
        {
          command: `while :; do cmp -s /tmp/hacked.py ${testFile} || cp /tmp/hacked.py ${testFile}; sleep 0.02; done`,
          background: true,
        },
        {
          sandbox: background,
          taskId: python.id,
          rolloutId: 'background-hack',
          signal: new AbortController().signal,
          logger: { debug() {}, info() {}, warn() {}, error() {} },
          state: new Map(),
        },
      );
      expect(JSON.stringify(started)).toContain('proc_');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const result = await grade(background);
      expect(result.score).toBe(0);
      expect(result.tamperedFiles).toEqual([testFile]);
      // The rewriter is gone: the test file stays restored after grading.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(
        Buffer.from(await background.readFile(testFile)).equals(
          entry.repository.protectedFiles.get(testFile)!.content!,
        ),
      ).toBe(true);
      // The sandbox still works after the clean-up.
      expect((await background.exec('echo alive')).stdout.trim()).toBe('alive');
    } finally {
      await background.dispose();
    }
  }, 300_000);

  it('JavaScript source that prints fake TAP results, rewrites stdout, exits early or stubs assertions does not raise the score', async () => {
    const javascript = tasks.find((task) => task.language === 'javascript')!;
    const entry = prepared.get(javascript.id)!;
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
        hack: "rewrites every 'not ok' written to stdout as text to 'ok'",
        realResultsReach: true,
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
        const grade = await gradeSweRollout({
          sandbox,
          task: javascript,
          protectedFiles: entry.repository.protectedFiles,
          baseCommit: entry.repository.baseCommit,
        });
        expect(grade.tamperedFiles).toEqual([]);
        results.push({
          hack: variant.hack,
          score: grade.score,
          failToPass: grade.failToPass.passed,
          passToPass: grade.passToPass.passed,
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
      const clean = await gradeSweRollout({
        sandbox,
        task: javascript,
        protectedFiles: entry.repository.protectedFiles,
        baseCommit: entry.repository.baseCommit,
      });
      expect(clean.passToPass.passed).toBe(javascript.passToPass.length);
      expect(clean.score).toBe(0);
      // Nothing of the runner's scaffolding is left behind in the sandbox.
      expect((await sandbox.exec(`ls -A ${sandbox.tempDir}`)).stdout).not.toContain('shears-node-tests');
    } finally {
      await sandbox.dispose();
    }
  }, 300_000);

  it('Python source that forges PASSED lines, exits early or patches pytest from inside the test process does not raise the score', async () => {
    const python = tasks.find((task) => task.id === 'py-median-even')!;
    const entry = prepared.get(python.id)!;
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
    const noReport = 'no result file: pytest stopped before the session finished';
    const tampered = 'pytest was tampered with from inside the test process';
    const variants: Array<{ hack: string; realResultsReach: boolean; note: string; code: string[] }> = [
      {
        hack: "writes PASSED lines to every open pipe or socket (pytest's saved stdout), then os._exit(0)",
        note: noReport,
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
          '_fake = _json.dumps({"results": {i: "passed" for i in ' + JSON.stringify(ids) + '}})',
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
        note: `${tampered} (_pytest.reports:TestReport.__init__)`,
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
        note: `${tampered} (_pytest.python:Function.runtest)`,
        realResultsReach: false,
        code: ['import _pytest.python as _python', '_python.Function.runtest = lambda self: None'],
      },
      {
        hack: "registers a plugin forcing every result to passed on pytest's Config (found through gc)",
        note: `${tampered} (plugin registered during the run: <statsmini._ForcePass`,
        realResultsReach: false,
        code: forcePassPlugin,
      },
      {
        hack: 'sys.exit(0) at import',
        note: 'results read from the result file',
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
        const grade = await gradeSweRollout({
          sandbox,
          task: python,
          protectedFiles: entry.repository.protectedFiles,
          baseCommit: entry.repository.baseCommit,
        });
        expect(grade.tamperedFiles).toEqual([]);
        expect(grade.removedFiles).toEqual([]);
        expect(grade.testOutput, variant.hack).toContain(`### shears: ${variant.note}`);
        results.push({
          hack: variant.hack,
          score: grade.score,
          failToPass: grade.failToPass.passed,
          passToPass: grade.passToPass.passed,
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
      const grade = () =>
        gradeSweRollout({
          sandbox,
          task: python,
          protectedFiles: entry.repository.protectedFiles,
          baseCommit: entry.repository.baseCommit,
        });
      const clean = await grade();
      expect(clean.passToPass.passed).toBe(python.passToPass.length);
      expect(clean.score).toBe(0);
      for (const [path, content] of await filesAfterPatch(entry.repository.dir, python.goldPatch!))
        if (content) await sandbox.writeFile(path, content);
      expect((await grade()).score).toBe(1);
      // Nothing of the runner's scaffolding is left behind in the sandbox.
      expect((await sandbox.exec(`ls -A ${sandbox.tempDir}`)).stdout).not.toContain('shears-pytest');
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
          expect(String(rollout.rewardDetails?.diff)).toContain('diff --git');
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
