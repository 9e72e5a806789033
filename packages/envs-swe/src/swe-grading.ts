// Grading a SWE rollout in its own sandbox: stop every process the agent left running (Docker),
// record the agent's diff against the base commit, detect tampering with the protected files
// (hash compare), restore them, remove planted test configuration, modules that would stand in
// for pytest or the standard library, and stale bytecode, apply the task's test patch, then run
// FAIL_TO_PASS and PASS_TO_PASS. 1.0 when every F2P test passes and every P2P test still passes;
// optional partial credit; 0 otherwise.
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
  /** Test configuration and shadowing modules the agent planted (removed before the tests ran). */
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
  /** The commit the rollout started from (`PreparedRepository.baseCommit`); default: the root commit. */
  baseCommit?: string;
  /** Score fraction of F2P passing (times fraction of P2P still passing) instead of all-or-nothing. */
  partialCredit?: boolean;
  maxDiffChars?: number;
  signal?: AbortSignal;
}

/** Untracked files with these names are removed anywhere in the repository before the tests run. */
const PLANTED_CONFIG =
  /(^|\/)(conftest\.py|\.?pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|sitecustomize\.py|usercustomize\.py|[^/]+\.pth)$/;

/**
 * Lists untracked Python modules that would shadow the standard library or an installed module
 * (pytest.py, _pytest/__init__.py, json.py, …) from a directory that can be on sys.path: the
 * repository root or any directory without an `__init__.py` (pytest's rootdir-based imports put
 * such test directories first on sys.path). Run with `python3 -I -P` so the repository is not on
 * sys.path while the names are collected.
 */
const SHADOW_SCAN = String.raw`
import os, pkgutil, subprocess, sys
names = set(sys.stdlib_module_names) | {m.name for m in pkgutil.iter_modules()}
names |= {"pytest", "_pytest", "pluggy", "py", "iniconfig"}
listed = subprocess.run(["git", "ls-files", "-z", "--others"], capture_output=True).stdout
for path in listed.decode("utf-8", "surrogateescape").split("\0"):
    parts = path.split("/")
    if not path or any(p in ("site-packages", "dist-packages", "node_modules") for p in parts):
        continue
    if parts[-1] == "__init__.py" and len(parts) >= 2:
        module, home = parts[-2], parts[:-2]
    else:
        module, _, ext = parts[-1].partition(".")
        if ext.rsplit(".", 1)[-1] not in ("py", "pyc", "so"):
            continue
        home = parts[:-1]
    if module not in names:
        continue
    if home and os.path.exists(os.path.join(*home, "__init__.py")):
        continue
    print(path)
`;

/**
 * Stops every process in the container except PID 1, the container's own command (the oldest
 * child of PID 1) and this script's ancestors (the shell running the grading commands): anything
 * the agent started in the background would otherwise run on through grading and could rewrite
 * the restored tests. Everything is stopped first, then killed, a few rounds, so nothing respawns.
 * Only builtins run inside the loops (no subprocess of this script is itself a victim).
 */
const KILL_LEFTOVER_PROCESSES = `
ppid_of() { __line=; read -r __line 2>/dev/null < "/proc/$1/stat" || { __ppid=; return; }; __rest=\${__line##*) }; set -- $__rest; __ppid=$2; __state=$1; }
read -r __line < /proc/self/stat; __pid=\${__line%% *}
keep=" 1 "
while [ -n "$__pid" ] && [ "$__pid" != 0 ] && [ "$__pid" != 1 ]; do keep="$keep$__pid "; ppid_of "$__pid"; __pid=$__ppid; done
oldest=
for d in /proc/[0-9]*; do p=\${d#/proc/}; ppid_of "$p"; if [ "$__ppid" = 1 ] && { [ -z "$oldest" ] || [ "$p" -lt "$oldest" ]; }; then oldest=$p; fi; done
[ -n "$oldest" ] && keep="$keep$oldest "
killed=0
for round in 1 2 3 4 5; do
  victims=
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    case "$keep" in *" $p "*) continue ;; esac
    ppid_of "$p"
    [ -z "$__ppid" ] || [ "$__state" = Z ] && continue
    victims="$victims $p"
  done
  [ -z "$victims" ] && break
  set -- $victims; killed=$((killed + $#))
  kill -STOP $victims 2>/dev/null; kill -KILL $victims 2>/dev/null
done
echo "$killed"
`;

function truncate(text: string, limit: number): string {
  return text.length <= limit
    ? text
    : `${text.slice(0, limit)}\n[... diff truncated: ${text.length - limit} more characters]`;
}

export async function gradeSweRollout(options: GradeOptions): Promise<SweGrade> {
  const { sandbox, task, signal } = options;
  const exec = (command: string, timeoutMs = 60_000) => sandbox.exec(command, { timeoutMs, signal });

  // 0. Nothing the agent started keeps running: a background process could rewrite the tests after
  //    they are restored. Only in a container, where the PID namespace is the sandbox's own.
  if (sandbox.backend === 'docker') await exec(KILL_LEFTOVER_PROCESSES);

  // 1. The agent's changes against the base commit, including edits to tests and anything the
  //    agent committed (recorded for the trajectory).
  const baseRef = options.baseCommit
    ? shellQuote(options.baseCommit)
    : '"$(git rev-list --max-parents=0 HEAD | tail -n 1)"';
  const diffResult = await exec(
    `git add -A >/dev/null 2>&1; git diff --cached --binary ${baseRef}; git reset -q >/dev/null 2>&1`,
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

  // 4. Planted test configuration, modules shadowing pytest or the standard library, and stale
  //    bytecode go; an agent must not steer the test runner. Ignored files count too (the agent can
  //    edit .gitignore), so no exclude rules apply.
  const untracked = await exec('git ls-files -z --others');
  const removed = new Set(
    untracked.stdout.split('\0').filter((path) => path.trim() && PLANTED_CONFIG.test(path)),
  );
  if (task.test.runner === 'pytest') {
    const shadows = await exec(`python3 -I -P -c ${shellQuote(SHADOW_SCAN)}`);
    for (const path of shadows.stdout.split('\n')) if (path.trim()) removed.add(path);
  }
  const removedFiles = [...removed].sort();
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
