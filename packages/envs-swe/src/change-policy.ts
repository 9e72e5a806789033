// What of the agent's change the grader applies. A fix changes the code under test; it has no
// business changing the tests, what configures the test runner, what the interpreter runs at
// start-up, installed dependencies or git's metadata. Changes to those are dropped (and recorded,
// with the rule that dropped them) before the change is applied to a pristine copy of the
// repository, so planting a conftest.py or editing a test cannot steer the graded run however it
// was made (edited, committed, through a symlink, from a background process).
import { posix } from 'node:path';
import picomatch from 'picomatch';
import type { ChangeKind, FileChange } from './agent-change.js';
import type { TreeManifest } from './container-tree.js';

export interface ChangePolicy {
  /** Test files of the task (visible and put in place at grading time): never changed by the agent. */
  testPaths: ReadonlySet<string>;
  /** The test runner (pytest: modules that would shadow installed or standard modules are dropped). */
  runner: 'pytest' | 'node-test';
  /** Module names a planted module must not shadow (standard library and installed; pytest runner). */
  shadowNames?: ReadonlySet<string>;
  /** Task globs the agent may not change (`protected_paths`). */
  protectedPaths?: readonly string[];
  /** Task globs exempt from the test-configuration rule (`allowed_paths`), e.g. a fix in setup.cfg. */
  allowedPaths?: readonly string[];
  /** The rollout's tree after the change (to tell which directories are packages). */
  rolloutTree?: TreeManifest;
}

export interface DroppedChange {
  path: string;
  change: ChangeKind;
  /** Why it was dropped, one phrase (`test file`, `test configuration`, …). */
  reason: string;
}

/** Directory names that hold tests. */
const TEST_DIRECTORIES = new Set(['test', 'tests', '__tests__']);
/** Test files by name: pytest's defaults and the JavaScript conventions. */
const TEST_FILE = /^(test_[^/]*\.py|[^/]*_test\.py|[^/]*\.(test|spec)\.[cm]?[jt]sx?)$/;
/** Files that configure a test runner, at any depth. */
const RUNNER_CONFIG =
  /^(conftest\.py|\.?pytest\.(ini|toml)|tox\.ini|setup\.cfg|pyproject\.toml|package\.json|\.npmrc|\.yarnrc(\.yml)?|\.pnpmfile\.cjs|\.mocharc(\.[a-z]+)?|\.babelrc(\.[a-z]+)?|babel\.config\.[cm]?js(on)?|jest\.config\.[cm]?[jt]s(on)?|vitest\.config\.[cm]?[jt]s|\.nycrc(\.[a-z]+)?)$/;
/** What the interpreter loads on its own: path hooks, start-up modules, package metadata, bytecode. */
const STARTUP_HOOK = /(^|\/)([^/]+\.pth|sitecustomize\.py|usercustomize\.py|[^/]+\.egg-link|[^/]+\.py[co])$/;
const METADATA_DIRECTORY = /(^|\/)([^/]+\.(dist-info|egg-info)|__pycache__)(\/|$)/;
const DEPENDENCY_DIRECTORY = /(^|\/)(node_modules|site-packages|dist-packages)(\/|$)/;
/** Modules the pytest launcher and pytest itself import. */
const RUNNER_MODULES = ['pytest', '_pytest', 'pluggy', 'py', 'iniconfig', 'conftest'];

/** A test file or test-runner configuration: what the task puts in place and the grader protects while the tests run. */
export function isTestOrConfigPath(path: string, testPaths: ReadonlySet<string>): boolean {
  return isTestPath(path, { testPaths }) || RUNNER_CONFIG.test(path.split('/').pop()!);
}

function isTestPath(path: string, policy: Pick<ChangePolicy, 'testPaths'>): boolean {
  if (policy.testPaths.has(path)) return true;
  const parts = path.split('/');
  if (parts.slice(0, -1).some((part) => TEST_DIRECTORIES.has(part))) return true;
  const name = parts[parts.length - 1]!;
  return TEST_FILE.test(name) || TEST_DIRECTORIES.has(name);
}

/** A path that is an ancestor of a test file: replacing it by a file would displace the test. */
function isTestAncestor(path: string, policy: ChangePolicy): boolean {
  for (const test of policy.testPaths) if (test.startsWith(`${path}/`)) return true;
  return false;
}

/** The module a path would provide when its directory is on sys.path, or null. */
function moduleName(path: string): { name: string; home: string } | null {
  const parts = path.split('/');
  const last = parts[parts.length - 1]!;
  if (last === '__init__.py' && parts.length >= 2)
    return { name: parts[parts.length - 2]!, home: parts.slice(0, -2).join('/') };
  const match = /^([A-Za-z_][A-Za-z0-9_]*)(\.[^/]*)?\.(py|pyc|so|pyd)$/.exec(last);
  if (!match) return null;
  return { name: match[1]!, home: parts.slice(0, -1).join('/') };
}

function shadows(change: FileChange, policy: ChangePolicy): boolean {
  if (policy.runner !== 'pytest' || change.kind !== 'added') return false;
  const module = moduleName(change.path);
  if (!module) return false;
  const names = policy.shadowNames;
  if (!RUNNER_MODULES.includes(module.name) && !names?.has(module.name)) return false;
  // Only from a directory that can be on sys.path: the root, or one that is not a package.
  if (module.home === '') return true;
  const tree = policy.rolloutTree;
  return !tree?.has(posix.join(module.home, '__init__.py'));
}

function matcher(globs: readonly string[] | undefined): (path: string) => boolean {
  if (!globs || globs.length === 0) return () => false;
  const match = picomatch(globs as string[], { dot: true });
  return (path) => match(path);
}

/**
 * Splits the agent's change into what is applied and what is dropped, with the reason for each
 * dropped path. Rules, first match wins: git metadata; anything but a regular file (symbolic
 * links, FIFOs, devices — the grader applies regular files and deletions only); the task's test
 * files and anything that looks like a test or would displace one; test-runner configuration
 * (unless the task allows the path); interpreter start-up hooks, package metadata and bytecode;
 * installed dependencies; a planted module shadowing an installed or standard one; paths the task
 * protects; a file too large to read.
 */
export function sortOutChange(
  changes: readonly FileChange[],
  policy: ChangePolicy,
): { applied: FileChange[]; dropped: DroppedChange[] } {
  const allowed = matcher(policy.allowedPaths);
  const protectedPath = matcher(policy.protectedPaths);
  const applied: FileChange[] = [];
  const dropped: DroppedChange[] = [];
  for (const change of changes) {
    const reason = dropReason(change, policy, allowed, protectedPath);
    if (reason) dropped.push({ path: change.path, change: change.kind, reason });
    else applied.push(change);
  }
  return { applied, dropped };
}

function dropReason(
  change: FileChange,
  policy: ChangePolicy,
  allowed: (path: string) => boolean,
  protectedPath: (path: string) => boolean,
): string | null {
  const { path, after } = change;
  const name = path.split('/').pop()!;
  if (path.split('/').includes('.git')) return 'git metadata';
  if (/\uFFFD/.test(path)) return 'file name is not valid UTF-8';
  if (after && after.type === 'symlink') return 'symbolic link (only regular files are applied)';
  if (after && after.type === 'other') return 'not a regular file (FIFO, device or socket)';
  if (isTestPath(path, policy)) return 'test file';
  if (isTestAncestor(path, policy)) return 'would displace a test file';
  if (RUNNER_CONFIG.test(name) && !allowed(path)) return 'test configuration';
  if (STARTUP_HOOK.test(path) || METADATA_DIRECTORY.test(path))
    return 'interpreter start-up hook, package metadata or bytecode';
  if (DEPENDENCY_DIRECTORY.test(path)) return 'installed dependency';
  if (shadows(change, policy)) return 'shadows an installed or standard-library module';
  if (protectedPath(path)) return 'protected by the task';
  if (after?.type === 'file' && after.oversize) return 'file too large to apply';
  return null;
}
