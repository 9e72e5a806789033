// Grading a SWE rollout in its own sandbox: record the agent's diff, detect tampering with the
// protected files (hash compare), restore them, remove planted test configuration and stale
// bytecode, apply the task's test patch, then run FAIL_TO_PASS and PASS_TO_PASS. 1.0 when every
// F2P test passes and every P2P test still passes; optional partial credit; 0 otherwise.
import type { SandboxV1 } from '@shears/core';
import type { ProtectedFile } from './repo.js';
import { sha256 } from './repo.js';
import type { SweTask } from './task-schema.js';
import { runTests, shellQuote, type TestStatus } from './test-runs.js';

export interface SweGrade {
  score: number;
  /** Every F2P test passes and every P2P test still passes. */
  resolved: boolean;
  failToPass: { passed: number; total: number };
  passToPass: { passed: number; total: number };
  statuses: Record<string, TestStatus>;
  /** Protected files the agent changed or deleted (restored before the tests ran). */
  tamperedFiles: string[];
  /** Test configuration the agent planted (removed before the tests ran). */
  removedFiles: string[];
  /** The agent's changes as a git diff against the base commit (before restoring). */
  diff: string;
  testOutput: string;
  timedOut: boolean;
}

export interface GradeOptions {
  sandbox: SandboxV1;
  task: SweTask;
  protectedFiles: ReadonlyMap<string, ProtectedFile>;
  /** Score fraction of F2P passing (times fraction of P2P still passing) instead of all-or-nothing. */
  partialCredit?: boolean;
  maxDiffChars?: number;
  signal?: AbortSignal;
}

const PLANTED_CONFIG =
  /(^|\/)(conftest\.py|pytest\.ini|tox\.ini|setup\.cfg|sitecustomize\.py|usercustomize\.py|[^/]+\.pth)$/;

function truncate(text: string, limit: number): string {
  return text.length <= limit
    ? text
    : `${text.slice(0, limit)}\n[... diff truncated: ${text.length - limit} more characters]`;
}

export async function gradeSweRollout(options: GradeOptions): Promise<SweGrade> {
  const { sandbox, task, signal } = options;
  const exec = (command: string, timeoutMs = 60_000) => sandbox.exec(command, { timeoutMs, signal });

  // 1. The agent's changes, including edits to tests (recorded for the trajectory).
  const diffResult = await exec(
    'git add -A >/dev/null 2>&1; git diff --cached --binary HEAD; git reset -q >/dev/null 2>&1',
  );
  const diff = truncate(diffResult.stdout, options.maxDiffChars ?? 200_000);

  // 2. Tampering: compare every protected file with its original hash.
  const tamperedFiles: string[] = [];
  for (const [path, original] of options.protectedFiles) {
    let current: string | null;
    try {
      current = sha256(await sandbox.readFile(path, { signal }));
    } catch {
      current = null;
    }
    if (current !== original.sha256) tamperedFiles.push(path);
  }

  // 3. Restore the protected files (delete those that did not exist, so a test patch can add them).
  for (const [path, original] of options.protectedFiles) {
    if (original.content) await sandbox.writeFile(path, original.content, { signal });
    else await exec(`rm -f -- ${shellQuote(path)}`);
  }

  // 4. Planted test configuration and stale bytecode go; an agent must not steer the test runner.
  const untracked = await exec('git ls-files --others --exclude-standard');
  const removedFiles = untracked.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && PLANTED_CONFIG.test(line));
  if (removedFiles.length > 0) await exec(`rm -f -- ${removedFiles.map(shellQuote).join(' ')}`);
  await exec(
    "find . -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null; find . -name '*.pyc' -delete 2>/dev/null; true",
  );

  // 5. The task's own test changes (SWE-bench test_patch).
  if (task.testPatch) {
    const patchPath = `${sandbox.tempDir}/shears-test.patch`;
    await sandbox.writeFile(patchPath, task.testPatch, { signal });
    const applied = await exec(
      `git apply --whitespace=nowarn ${shellQuote(patchPath)}; status=$?; rm -f ${shellQuote(patchPath)}; exit $status`,
    );
    if (applied.exitCode !== 0) {
      // The repository no longer accepts the test patch: the tests cannot run as written.
      return emptyGrade({
        diff,
        tamperedFiles,
        removedFiles,
        testOutput: `test patch did not apply:\n${applied.output}`,
        task,
      });
    }
  }

  // 6. Run F2P and P2P in one go.
  const ids = [...task.failToPass, ...task.passToPass];
  const run = await runTests(sandbox, task.test, ids, {
    timeoutMs: task.timeoutMs,
    signal,
    env: { PYTHONDONTWRITEBYTECODE: '1' },
  });
  const statuses = Object.fromEntries(run.statuses);
  const count = (list: readonly string[]) => list.filter((id) => run.statuses.get(id) === 'passed').length;
  const failToPass = { passed: count(task.failToPass), total: task.failToPass.length };
  const passToPass = { passed: count(task.passToPass), total: task.passToPass.length };
  const resolved =
    !run.timedOut && failToPass.passed === failToPass.total && passToPass.passed === passToPass.total;
  let score = resolved ? 1 : 0;
  if (!resolved && options.partialCredit && !run.timedOut) {
    const p2pFraction = passToPass.total === 0 ? 1 : passToPass.passed / passToPass.total;
    score = (failToPass.passed / failToPass.total) * p2pFraction;
  }
  return {
    score,
    resolved,
    failToPass,
    passToPass,
    statuses,
    tamperedFiles,
    removedFiles,
    diff,
    testOutput: run.output,
    timedOut: run.timedOut,
  };
}

function emptyGrade(options: {
  diff: string;
  tamperedFiles: string[];
  removedFiles: string[];
  testOutput: string;
  task: SweTask;
}): SweGrade {
  return {
    score: 0,
    resolved: false,
    failToPass: { passed: 0, total: options.task.failToPass.length },
    passToPass: { passed: 0, total: options.task.passToPass.length },
    statuses: {},
    tamperedFiles: options.tamperedFiles,
    removedFiles: options.removedFiles,
    diff: options.diff,
    testOutput: options.testOutput,
    timedOut: false,
  };
}
