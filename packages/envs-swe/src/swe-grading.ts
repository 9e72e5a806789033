// Grading a SWE rollout the way SWE-bench's harness grades, hardened. The rollout's container is
// only read, never run in: the Docker daemon reads its repository (paused, so nothing of the
// agent runs meanwhile), the grader diffs it against the pristine repository of the task image
// and keeps what a fix may change (tests, test configuration, start-up hooks and the like are
// dropped and recorded). The kept change is written into a pristine copy of the repository in a
// fresh container of the task image (from the grading pool), the task's grading-time tests (the
// test patch, hidden tests) are put in place, and FAIL_TO_PASS and PASS_TO_PASS run there with a
// clean environment and a fresh process tree. Results are read only after every process in that
// container is gone; the container is then disposed.
//
// A failure caused by what the agent did scores 0 with a reason (`grading_tampered`,
// `grading_disrupted`, `change_too_large`, …); only a failure of the infrastructure itself (the
// daemon, the image, the rollout's container gone) throws, which the group runner counts as an
// infrastructure failure.
import { createHash, randomUUID } from 'node:crypto';
import type { SandboxProviderV1, SandboxSpec, SandboxV1 } from '@shears/core';
import { InvalidArgumentError, SandboxError } from '@shears/core';
import { type ChangeKind, diffTrees, type FileChange, renderChangeDiff } from './agent-change.js';
import { type DroppedChange, isTestOrConfigPath, sortOutChange } from './change-policy.js';
import {
  readContainerFile,
  readContainerTree,
  type TreeEntry,
  type TreeManifest,
  TreeTooLargeError,
} from './container-tree.js';
import { dockerTestExecutor, type GradingContainer, putFiles } from './grading-container.js';
import { SWE_WORKDIR } from './images.js';
import { gradingTestPaths } from './task-loaders.js';
import type { SweTask } from './task-schema.js';
import { runTests, shellQuote, type TestRunResult, type TestStatus } from './test-runs.js';

/** Why a rollout got its score. Only `resolved` scores 1; every other reason scores 0 (or partial credit for `unresolved`). */
export type SweGradeReason =
  | 'resolved'
  | 'unresolved'
  | 'tests_incomplete'
  | 'timed_out'
  | 'grading_tampered'
  | 'grading_disrupted'
  | 'change_not_applied'
  | 'change_too_large';

/** What the grader saw, for the trajectory record and the viewer. */
export interface SweGradingAudit {
  reason: SweGradeReason;
  /** One sentence saying what happened. */
  explanation: string;
  /** The paths of the agent's change that were applied to the pristine repository. */
  applied: Array<{ path: string; change: ChangeKind }>;
  /** The paths of the agent's change that were dropped, and why. */
  dropped: DroppedChange[];
  /** What the test runner saw the code under test tamper with, or how the run was disrupted. */
  tamperFlags: string[];
  /** Hints for a person auditing a suspiciously good run (the score does not depend on them). */
  suspicious: string[];
  /** Test files put in place at grading time (test patch, hidden tests). */
  gradingFiles: string[];
  /** Where the grading time went, in milliseconds. */
  timings: SweGradingTimings;
}

export interface SweGradingTimings {
  /** Until the fresh grading container was ready (pool or new). */
  gradingSandboxMs?: number;
  /** Reading the rollout's repository through the daemon (overlaps the grading container's start). */
  readChangeMs?: number;
  /** Diffing and sorting out the change, reading the pristine bytes for the record. */
  diffMs?: number;
  /** Writing the change and the grading-time tests into the grading container. */
  applyMs?: number;
  /** Running the tests, stopping the container and reading the results. */
  testsMs?: number;
  totalMs?: number;
}

export interface SweGrade {
  score: number;
  /** Every F2P test passes and every P2P test still passes. */
  resolved: boolean;
  failToPass: { passed: number; total: number };
  passToPass: { passed: number; total: number };
  statuses: Record<string, TestStatus>;
  /** The agent's whole change as the grader read it (applied and dropped paths), a git-style diff against the pristine repository. */
  diff: string;
  /** The dropped part of the change, same format (`audit.applied` lists what was applied). */
  droppedDiff: string;
  audit: SweGradingAudit;
  testOutput: string;
  timedOut: boolean;
}

export interface SweGraderSettings {
  /** Fresh grading containers kept started per task image, so grading rarely waits for one (default 1). */
  poolSize?: number;
  /** Resource limits of grading containers (default: 2048 MB, 1 CPU, 512 processes). */
  limits?: SandboxSpec['limits'];
  /** How the grading containers' `limits.diskMb` is enforced (the docker provider's `diskLimitMode`, default `writable-layer`). */
  diskLimitMode?: 'writable-layer' | 'tmpfs';
  /** Archive bytes of the rollout's repository read before it counts as too large (default 1 GiB). */
  maxTreeBytes?: number;
  /** Bytes of one changed file applied; a larger file is dropped (default 10 MiB). */
  maxFileBytes?: number;
  /** Bytes of all changed files; more scores 0 as `change_too_large` (default 64 MiB). */
  maxChangeBytes?: number;
  /** Characters of the recorded diffs (default 200 000). */
  maxDiffChars?: number;
  /** Where grading containers come from, per Docker host URL (default: a docker sandbox provider with a warm pool). */
  gradingSandboxes?: (hostUrl: string) => SandboxProviderV1 | Promise<SandboxProviderV1>;
}

export interface GradeOptions {
  /** The rollout's own sandbox (a docker sandbox): read, never run in. */
  sandbox: SandboxV1;
  task: SweTask;
  /** The task image: the pristine repository at /testbed. */
  image: string;
  /** Test files put in place at grading time (path → bytes, null to delete): `PreparedRepository.gradingFiles`. */
  gradingFiles?: ReadonlyMap<string, Buffer | null>;
  /** Score fraction of F2P passing (times fraction of P2P still passing) instead of all-or-nothing. */
  partialCredit?: boolean;
  signal?: AbortSignal;
}

export interface SweGrader {
  grade(options: GradeOptions): Promise<SweGrade>;
  /** Disposes the grading pool. */
  close(): Promise<void>;
}

interface DockerSandboxParts {
  container: GradingContainer;
  hostUrl: string;
}

/** The docker parts of a sandbox made by the docker provider of @shears/tools-terminal. */
function dockerParts(sandbox: SandboxV1, role: string): DockerSandboxParts {
  const candidate = sandbox as unknown as { container?: Partial<GradingContainer>; hostUrl?: unknown };
  if (
    sandbox.backend !== 'docker' ||
    typeof candidate.container?.getArchive !== 'function' ||
    typeof candidate.hostUrl !== 'string'
  )
    throw new InvalidArgumentError({
      argument: 'sandbox',
      value: sandbox.backend,
      message: `SWE grading reads the ${role} through Docker and grades it in a fresh container of the task image: it needs the docker sandbox backend (this sandbox is "${sandbox.backend}"; available: docker)`,
    });
  return { container: candidate.container as GradingContainer, hostUrl: candidate.hostUrl };
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

const isRootGit = (path: string) => path === '.git' || path.startsWith('.git/');

/** Lines of a file that the change added (for the audit hints). */
function addedLines(change: FileChange, originals: ReadonlyMap<string, Buffer>): string[] {
  const content = change.after?.content;
  if (!content || content.subarray(0, 8000).includes(0)) return [];
  const before = new Set((originals.get(change.path)?.toString('utf8') ?? '').split('\n'));
  return content
    .toString('utf8')
    .split('\n')
    .filter((line) => !before.has(line));
}

const INTROSPECTION =
  /\bsys\._getframe\b|\binspect\.(stack|currentframe|getouterframes|getsource|getsourcelines)\b|\.f_back\b|\bco_consts\b|\bco_filename\b|\b__code__\b|\blinecache\b|\bgc\.get_(objects|referrers|referents)\b|\b(sys|threading)\.(setprofile|settrace)\b|\b_pytest\b|\bpluginmanager\b|\bos\.fork\b|\bsetsid\b|\bos\.kill\b|\brequire\.(cache|main)\b|\bmodule\.parent\b|\bError\.(prepareStackTrace|captureStackTrace)\b|\bprocess\.binding\b|['"]node:(test|inspector)['"]|\bchild_process\b|\bprocess\.kill\b|\bdetached\s*:/;
/** Reading source or listing folders at run time. */
const READS_FILES =
  /\b(open|read_text|read_bytes|readFileSync|readFile|createReadStream|ast\.parse|glob|iglob|rglob|os\.walk|os\.listdir|scandir|iterdir|readdirSync|readdir|opendirSync)\s*\(/;
/** A path or pattern that names where tests live: a `test`/`tests` folder, `test_*.py`, `*.test.js`. */
const TEST_REFERENCE =
  /['"`](?:[^'"`\n]*[/\\*])?(?:__)?tests?(?:__)?(?:[/\\*][^'"`\n]*)?['"`]|['"`][^'"`\n]*(?:\btest_[^'"`\n]*\.py|_test\.py|\.(?:test|spec)\.[cm]?[jt]sx?|test_\*|\*_test)[^'"`\n]*['"`]/;

/** Hints for an auditor: the change refers to test files, or reaches into the test process. */
function suspiciousHints(
  applied: readonly FileChange[],
  originals: ReadonlyMap<string, Buffer>,
  testPaths: ReadonlySet<string>,
): string[] {
  const names = new Set<string>();
  for (const path of testPaths) {
    const base = path.split('/').pop()!;
    names.add(base);
    const stem = base.replace(/\.[^.]+$/, '');
    if (stem.length >= 6) names.add(stem);
  }
  const hints: string[] = [];
  for (const change of applied) {
    const lines = addedLines(change, originals);
    const named = [...names].filter((name) => lines.some((line) => line.includes(name)));
    if (named.length > 0)
      hints.push(`${change.path} refers to test files (${named.join(', ')}): possible spec gaming`);
    const reads = lines.find((line) => READS_FILES.test(line));
    const where = lines.find((line) => TEST_REFERENCE.test(line));
    if (named.length === 0 && reads && where)
      hints.push(
        `${change.path} reads files at run time and names where tests live: ${where.trim().slice(0, 160)} (possible spec gaming)`,
      );
    const reach = lines.find((line) => INTROSPECTION.test(line));
    if (reach)
      hints.push(
        `${change.path} reaches into the test process or its processes: ${reach.trim().slice(0, 160)}`,
      );
  }
  return hints;
}

function count(list: readonly string[], statuses: ReadonlyMap<string, TestStatus>): number {
  return list.filter((id) => statuses.get(id) === 'passed').length;
}

/** Creates a grader with its own pool of fresh grading containers (per Docker host). */
export function createSweGrader(settings: SweGraderSettings = {}): SweGrader {
  const providers = new Map<string, Promise<SandboxProviderV1>>();
  const pristineTrees = new Map<string, Promise<TreeManifest>>();
  const shadowNames = new Map<string, Promise<Set<string>>>();
  const disposals = new Set<Promise<unknown>>();
  const limits = settings.limits ?? { memoryMb: 2048, cpus: 1, pids: 512 };

  const providerFor = (hostUrl: string): Promise<SandboxProviderV1> => {
    let provider = providers.get(hostUrl);
    if (!provider) {
      provider = settings.gradingSandboxes
        ? Promise.resolve(settings.gradingSandboxes(hostUrl))
        : import('@shears/tools-terminal').then(({ createDockerSandboxProvider }) =>
            createDockerSandboxProvider({
              hosts: [hostUrl],
              workdir: SWE_WORKDIR,
              poolSize: settings.poolSize ?? 1,
              limits,
              ...(settings.diskLimitMode ? { diskLimitMode: settings.diskLimitMode } : {}),
              labels: { 'shears.swe.grader': 'true' },
            }),
          );
      providers.set(hostUrl, provider);
    }
    return provider;
  };

  /** The task image's repository as the daemon reads it from a fresh container (once per image). */
  const pristineTree = (
    image: string,
    container: GradingContainer,
    signal?: AbortSignal,
  ): Promise<TreeManifest> => {
    let tree = pristineTrees.get(image);
    if (!tree) {
      tree = readContainerTree(container, SWE_WORKDIR, {
        skip: isRootGit,
        maxTreeBytes: Number.MAX_SAFE_INTEGER,
        ...(signal ? { signal } : {}),
      });
      pristineTrees.set(image, tree);
      tree.catch(() => pristineTrees.delete(image));
    }
    return tree;
  };

  /** Standard-library and installed module names of the image's python3 (pytest tasks). */
  const moduleNames = (image: string, sandbox: SandboxV1): Promise<Set<string>> => {
    let names = shadowNames.get(image);
    if (!names) {
      const script =
        'import pkgutil, sys; print("\\n".join(sorted(set(sys.stdlib_module_names) | {m.name for m in pkgutil.iter_modules()})))';
      names = sandbox
        .exec(`python3 -I -c ${shellQuote(script)}`, { timeoutMs: 60_000 })
        .then((result) => new Set(result.stdout.split('\n').filter(Boolean)))
        .catch(() => new Set<string>());
      shadowNames.set(image, names);
    }
    return names;
  };

  /** Reads the rollout's repository, paused, keeping the bytes of what differs from the pristine tree. */
  const readRollout = async (
    container: GradingContainer,
    pristine: TreeManifest,
    signal?: AbortSignal,
  ): Promise<TreeManifest> => {
    let paused = false;
    try {
      await container.pause();
      paused = true;
    } catch {
      // Stopped (the agent stopped its own container) or already paused: the files read the same.
    }
    try {
      const differs = (entry: TreeEntry) => {
        const before = pristine.get(entry.path);
        return before?.type !== 'file' || before.sha256 !== entry.sha256;
      };
      let tree: TreeManifest;
      try {
        tree = await readContainerTree(container, SWE_WORKDIR, {
          skip: isRootGit,
          keep: differs,
          ...(settings.maxTreeBytes !== undefined ? { maxTreeBytes: settings.maxTreeBytes } : {}),
          ...(settings.maxFileBytes !== undefined ? { maxFileBytes: settings.maxFileBytes } : {}),
          ...(settings.maxChangeBytes !== undefined ? { maxKeptBytes: settings.maxChangeBytes } : {}),
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        // The agent moved or removed its repository (the container is there, the path is not): that
        // is a change deleting every file, graded as such, not a failure of the infrastructure.
        const status = (error as { cause?: { statusCode?: number } }).cause?.statusCode;
        if (
          status === 404 &&
          (await container.inspect().then(
            () => true,
            () => false,
          ))
        )
          return new Map();
        throw error;
      }
      // A hard link's bytes are those of an earlier entry, which may not have been kept: read it on its own.
      for (const entry of tree.values()) {
        if (!entry.hardLinkTo || entry.content || entry.oversize) continue;
        const content = await readContainerFile(container, `${SWE_WORKDIR}/${entry.path}`, {
          maxBytes: settings.maxFileBytes ?? 10 * 1024 * 1024,
          ...(signal ? { signal } : {}),
        });
        if (!content) continue;
        entry.sha256 = sha256(content);
        entry.size = content.length;
        if (differs(entry)) entry.content = content;
      }
      return tree;
    } finally {
      if (paused) await container.unpause().catch(() => undefined);
    }
  };

  /** Pristine bytes of the changed files (for the diffs), from the grading container before anything is applied. */
  const readOriginals = async (container: GradingContainer, changes: readonly FileChange[]) => {
    const originals = new Map<string, Buffer>();
    const wanted = changes.filter((change) => change.before?.type === 'file').slice(0, 200);
    for (let index = 0; index < wanted.length; index += 8)
      await Promise.all(
        wanted.slice(index, index + 8).map(async (change) => {
          const content = await readContainerFile(container, `${SWE_WORKDIR}/${change.path}`, {
            maxBytes: 2 * 1024 * 1024,
          });
          if (content) originals.set(change.path, content);
        }),
      );
    return originals;
  };

  /** Writes the kept change and the grading-time tests into the pristine repository of the grading container. */
  const apply = async (
    sandbox: SandboxV1,
    container: GradingContainer,
    applied: readonly FileChange[],
    gradingFiles: ReadonlyMap<string, Buffer | null>,
  ) => {
    const removeFiles = applied
      .filter(
        (change) =>
          change.before &&
          change.before.type !== 'directory' &&
          (change.kind === 'deleted' || change.before.type !== change.after?.type),
      )
      .map((change) => change.path);
    for (const [path, content] of gradingFiles) if (content === null) removeFiles.push(path);
    const removeDirectories = applied
      .filter((change) => change.before?.type === 'directory' && change.after?.type !== 'directory')
      .map((change) => change.path)
      .sort()
      .reverse();
    if (removeFiles.length + removeDirectories.length > 0) {
      const list = (paths: string[]) => Buffer.from(paths.map((path) => `${path}\0`).join(''));
      // Directories go only once empty; one that still holds kept files stays (and a file the change
      // puts in its place then fails to apply).
      const removed = await sandbox.exec(
        `cd ${shellQuote(SWE_WORKDIR)} && xargs -0 -r rm -f -- && { printf '%s' ${shellQuote(list(removeDirectories).toString('base64'))} | base64 -d | xargs -0 -r rmdir --ignore-fail-on-non-empty -- 2>/dev/null; true; }`,
        { timeoutMs: 60_000, stdin: list(removeFiles) },
      );
      if (removed.exitCode !== 0) throw new Error(`removing deleted files failed: ${removed.output.trim()}`);
    }
    await putFiles(container, [
      ...applied
        .filter((change) => change.after?.type === 'file' && change.after.content)
        .map((change) => ({
          path: `${SWE_WORKDIR}/${change.path}`,
          data: change.after!.content!,
          mode: change.after!.mode & 0o111 ? 0o755 : 0o644,
        })),
    ]);
    await putFiles(
      container,
      [...gradingFiles]
        .filter((entry): entry is [string, Buffer] => entry[1] !== null)
        .map(([path, content]) => ({ path: `${SWE_WORKDIR}/${path}`, data: content })),
    );
  };

  const grade = async (options: GradeOptions): Promise<SweGrade> => {
    const { task, image, signal } = options;
    const rollout = dockerParts(options.sandbox, "rollout's repository");
    const provider = await providerFor(rollout.hostUrl);
    const spec: SandboxSpec = {
      image,
      workdir: SWE_WORKDIR,
      network: 'none',
      limits,
      labels: { 'shears.swe.grading': task.id },
    };
    const acquiring = provider.acquire(spec, signal ? { signal } : {});
    acquiring.catch(() => undefined);
    const gradingFiles = options.gradingFiles ?? new Map<string, Buffer | null>();
    const testPaths = new Set([...gradingTestPaths(task), ...gradingFiles.keys()]);
    const ids = [...task.failToPass, ...task.passToPass];
    const audit: SweGradingAudit = {
      reason: 'unresolved',
      explanation: '',
      applied: [],
      dropped: [],
      tamperFlags: [],
      suspicious: [],
      gradingFiles: [...gradingFiles.keys()].sort(),
      timings: {},
    };
    const result = (fields: {
      reason: SweGradeReason;
      explanation: string;
      run?: TestRunResult;
      diff?: string;
      droppedDiff?: string;
    }): SweGrade => {
      const statuses = fields.run?.statuses ?? new Map<string, TestStatus>(ids.map((id) => [id, 'missing']));
      const failToPass = { passed: count(task.failToPass, statuses), total: task.failToPass.length };
      const passToPass = { passed: count(task.passToPass, statuses), total: task.passToPass.length };
      const resolved = fields.reason === 'resolved';
      let score = resolved ? 1 : 0;
      if (fields.reason === 'unresolved' && options.partialCredit)
        score =
          (failToPass.passed / failToPass.total) *
          (passToPass.total === 0 ? 1 : passToPass.passed / passToPass.total);
      audit.reason = fields.reason;
      audit.explanation = fields.explanation;
      return {
        score,
        resolved,
        failToPass,
        passToPass,
        statuses: Object.fromEntries(statuses),
        diff: fields.diff ?? '',
        droppedDiff: fields.droppedDiff ?? '',
        audit,
        testOutput: fields.run?.output ?? '',
        timedOut: fields.run?.timedOut ?? false,
      };
    };

    let grading: SandboxV1 | undefined;
    const started = performance.now();
    const phase = (name: keyof SweGradingTimings, since: number) => {
      audit.timings[name] = Math.round(performance.now() - since);
      return performance.now();
    };
    try {
      // The rollout's tree is read while the grading container starts, once the pristine tree of the
      // image is known (the first grading of an image reads it from its grading container).
      const known = pristineTrees.get(image);
      const reading = (async () => {
        const pristine = known
          ? await known
          : await pristineTree(image, dockerParts(await acquiring, 'grading container').container, signal);
        const readStarted = performance.now();
        const tree = await readRollout(rollout.container, pristine, signal);
        phase('readChangeMs', readStarted);
        return { pristine, tree };
      })();
      reading.catch(() => undefined);
      grading = await acquiring;
      phase('gradingSandboxMs', started);
      const gradingContainer = dockerParts(grading, 'grading container').container;
      let pristine: TreeManifest;
      let rolloutTree: TreeManifest;
      try {
        ({ pristine, tree: rolloutTree } = await reading);
      } catch (error) {
        if (TreeTooLargeError.isInstance(error))
          return result({
            reason: 'change_too_large',
            explanation: `The change is too large to grade: ${error.message} (${error.limit}).`,
          });
        throw error;
      }
      let mark = performance.now();
      const repositoryMissing = rolloutTree.get('')?.type !== 'directory';
      const changes = diffTrees(pristine, rolloutTree);
      const names = task.test.runner === 'pytest' ? await moduleNames(image, grading) : undefined;
      const { applied, dropped } = sortOutChange(changes, {
        testPaths,
        runner: task.test.runner,
        ...(names ? { shadowNames: names } : {}),
        protectedPaths: task.protectedPaths,
        allowedPaths: task.allowedPaths,
        rolloutTree,
      });
      audit.applied = applied.map((change) => ({ path: change.path, change: change.kind }));
      audit.dropped = dropped;
      const droppedPaths = new Set(dropped.map((entry) => entry.path));
      const droppedChanges = changes.filter((change) => droppedPaths.has(change.path));
      const originals = await readOriginals(gradingContainer, [...applied, ...droppedChanges]);
      const maxChars = settings.maxDiffChars ?? 200_000;
      const diff = renderChangeDiff(changes, originals, { maxChars });
      const droppedDiff = renderChangeDiff(droppedChanges, originals, { maxChars });
      audit.suspicious = suspiciousHints(applied, originals, testPaths);
      if (repositoryMissing)
        audit.suspicious.unshift(
          `${SWE_WORKDIR} was missing from the rollout's container or not a folder: graded as every file deleted`,
        );

      mark = phase('diffMs', mark);
      try {
        await apply(grading, gradingContainer, applied, gradingFiles);
        mark = phase('applyMs', mark);
      } catch (error) {
        const running = (await gradingContainer.inspect().catch(() => undefined))?.State?.Running;
        if (running !== true) throw error;
        return result({
          reason: 'change_not_applied',
          explanation: `The change could not be applied to a pristine copy of the repository: ${(error as Error)?.message ?? String(error)}`,
          diff,
          droppedDiff,
        });
      }

      const executor = dockerTestExecutor(gradingContainer, {
        tempDir: `/tmp/shears-grading-${randomUUID()}`,
        workdir: SWE_WORKDIR,
      });
      // Tests, test support and runner configuration as they must be while the tests run.
      const protectedFiles: Record<string, string | null> = {};
      for (const [path, entry] of pristine)
        if (entry.type === 'file' && entry.sha256 && isTestOrConfigPath(path, testPaths))
          protectedFiles[`${SWE_WORKDIR}/${path}`] = entry.sha256;
      for (const [path, content] of gradingFiles)
        protectedFiles[`${SWE_WORKDIR}/${path}`] = content === null ? null : sha256(content);
      const changedFiles = applied
        .filter((change) => change.after?.type === 'file')
        .map((change) => `${SWE_WORKDIR}/${change.path}`);
      const addedFiles = applied
        .filter((change) => change.after?.type === 'file' && change.before?.type !== 'file')
        .map((change) => `${SWE_WORKDIR}/${change.path}`);
      let run: TestRunResult;
      try {
        run = await runTests(executor, task.test, ids, {
          timeoutMs: task.timeoutMs,
          changedFiles,
          addedFiles,
          protectedFiles,
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        if (signal?.aborted) throw error;
        const state = (await gradingContainer.inspect().catch(() => undefined))?.State;
        if (!state) throw error;
        audit.tamperFlags.push(executor.disruption ?? 'the test run failed inside the grading container');
        return result({
          reason: 'grading_disrupted',
          explanation: `The test run was disrupted inside the grading container: ${(error as Error)?.message ?? String(error)}`,
          diff,
          droppedDiff,
        });
      }
      phase('testsMs', mark);
      audit.tamperFlags.push(...run.tampered);
      for (const text of run.hints) if (!audit.suspicious.includes(text)) audit.suspicious.push(text);
      if (executor.disruption) audit.tamperFlags.push(executor.disruption);
      const failToPass = count(task.failToPass, run.statuses);
      const passToPass = count(task.passToPass, run.statuses);
      const tally = `${failToPass} of ${task.failToPass.length} FAIL_TO_PASS and ${passToPass} of ${task.passToPass.length} PASS_TO_PASS tests pass`;
      let reason: SweGradeReason;
      let explanation: string;
      if (run.timedOut) {
        reason = 'timed_out';
        explanation = `The tests ran past the task's timeout of ${task.timeoutMs} ms.`;
      } else if (executor.disruption) {
        reason = 'grading_disrupted';
        explanation = `${executor.disruption[0]!.toUpperCase()}${executor.disruption.slice(1)}; no test counts as passed.`;
      } else if (run.tampered.length > 0 || run.forged) {
        reason = 'grading_tampered';
        explanation = `The code under test tampered with the test run (${audit.tamperFlags.join('; ')}); every test counts as failed.`;
      } else if (failToPass === task.failToPass.length && passToPass === task.passToPass.length) {
        reason = 'resolved';
        explanation = `Every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes (${tally}).`;
      } else if (!run.complete) {
        reason = 'tests_incomplete';
        explanation = `The test run stopped before it reported every result (${tally}).`;
      } else {
        reason = 'unresolved';
        explanation = `${tally[0]!.toUpperCase()}${tally.slice(1)}.`;
      }
      return result({ reason, explanation, run, diff, droppedDiff });
    } catch (error) {
      if (SandboxError.isInstance(error) || InvalidArgumentError.isInstance(error)) throw error;
      if (signal?.aborted) throw error;
      throw new SandboxError({
        message: `SWE grading of ${task.id} failed: ${(error as Error)?.message ?? String(error)}`,
        cause: error,
      });
    } finally {
      audit.timings.totalMs = Math.round(performance.now() - started);
      // The container is stopped (or never got the change); removing it need not hold the grade up.
      const disposing = (grading ? grading.dispose() : acquiring.then((sandbox) => sandbox.dispose()))
        .catch(() => undefined)
        .finally(() => disposals.delete(disposing));
      disposals.add(disposing);
    }
  };

  return {
    grade,
    async close() {
      await Promise.allSettled([...disposals]);
      const all = await Promise.allSettled([...providers.values()]);
      providers.clear();
      for (const entry of all) if (entry.status === 'fulfilled') await entry.value.close?.();
    },
  };
}

/** Grades one rollout with a one-off grader (no warm pool kept): see `createSweGrader` for runs. */
export async function gradeSweRollout(options: GradeOptions & { grader?: SweGrader }): Promise<SweGrade> {
  const grader = options.grader ?? createSweGrader({ poolSize: 0 });
  try {
    return await grader.grade(options);
  } finally {
    if (!options.grader) await grader.close();
  }
}
