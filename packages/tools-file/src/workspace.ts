// Path confinement for the file tools. A path is checked as text first (NUL bytes, control
// characters, text that is not valid Unicode, over-long paths), normalised lexically against
// the sandbox workdir, and then walked *inside the sandbox* one component at a time from the
// pinned workspace root (confined.ts), in the same script as the operation that uses it.
import { posix } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import {
  componentsUnder,
  type PathPlan,
  pinFileToolRoots,
  runConfined,
  throwWalkFailure,
  type WalkRoot,
  walkArguments,
  walkFunction,
} from './confined.js';
import { FileToolError } from './file-tool-error.js';
import { readFields } from './shell.js';

/** Linux PATH_MAX and NAME_MAX (bytes). */
export const MAX_PATH_BYTES = 4096;
export const MAX_NAME_BYTES = 255;

// A lone UTF-16 surrogate: what a file name of non-UTF-8 bytes turns into on the way here.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export interface PathPolicy {
  /**
   * Refuse paths that resolve outside the sandbox workspace (default true). Set false only for
   * trusted local use: absolute paths anywhere are then allowed.
   */
  confine?: boolean;
  /**
   * Directories outside the workspace that are allowed too (read_file's persisted tool results
   * under `<tempDir>/hermes-results`). Each must be a real directory, not a symlink; paths are
   * resolved and checked inside the sandbox like workspace paths.
   */
  extraRoots?: readonly string[];
}

/** Checks the text of a path and returns it normalised to an absolute path (no sandbox call). */
export function normalizeToolPath(path: string, workdir: string, policy: PathPolicy = {}): string {
  if (typeof path !== 'string' || path.length === 0)
    throw new FileToolError('Path must be a non-empty string');
  if (path.includes('\0'))
    throw new FileToolError(`Invalid path ${JSON.stringify(path)}: it contains a NUL byte`, { path });
  if (/[\u0001-\u001f\u007f]/.test(path)) {
    throw new FileToolError(`Invalid path ${JSON.stringify(path)}: it contains control characters`, { path });
  }
  if (LONE_SURROGATE.test(path) || path.includes('\ufffd')) {
    throw new FileToolError(`Invalid path ${JSON.stringify(path)}: it is not valid UTF-8 text`, { path });
  }
  const bytes = Buffer.byteLength(path, 'utf8');
  if (bytes > MAX_PATH_BYTES) {
    throw new FileToolError(`Invalid path: it is ${bytes} bytes long (the limit is ${MAX_PATH_BYTES})`, {
      path: `${path.slice(0, 80)}…`,
    });
  }
  for (const name of path.split('/')) {
    if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) {
      throw new FileToolError(
        `Invalid path: the name "${name.slice(0, 40)}…" is longer than ${MAX_NAME_BYTES} bytes`,
        { path },
      );
    }
  }
  const confine = policy.confine ?? true;
  if (path === '~' || path.startsWith('~/')) {
    if (confine) throw outside(path, workdir);
    throw new FileToolError(
      `Invalid path ${JSON.stringify(path)}: "~" is not expanded; use an absolute path`,
      { path },
    );
  }
  const absolute = posix.resolve(workdir, path);
  if (
    confine &&
    !isInside(absolute, posix.resolve(workdir)) &&
    !(policy.extraRoots ?? []).some((root) => isExtraRoot(root) && isInside(absolute, posix.resolve(root)))
  )
    throw outside(path, workdir);
  return absolute;
}

// An extra root is a directory below `/` (never `/` itself, which would allow everything).
function isExtraRoot(root: string): boolean {
  return posix.resolve(root) !== '/';
}

function isInside(path: string, root: string): boolean {
  return root === '/' || path === root || path.startsWith(`${root}/`);
}

function outside(path: string, workdir: string): FileToolError {
  return new FileToolError(`Access denied: ${path} is outside the sandbox workspace (${workdir})`, {
    path,
    code: 'SHEARS_PATH_OUTSIDE',
  });
}

export interface ResolvedPath {
  /** What the model passed. */
  requested: string;
  /** Real path inside the sandbox. */
  real: string;
  /** Real path of the workspace. */
  workspace: string;
  type: 'file' | 'dir' | 'other' | 'missing';
  /** For a missing path: whether its nearest existing ancestor is a directory. */
  parentIsDirectory: boolean;
}

/**
 * Checks `path` as text, pins the sandbox roots (first call only) and says where the race-free
 * walk starts: the workspace, `<tempDir>/hermes-results` (an `extraRoots` entry), or `/` when
 * confinement is off.
 */
export async function planPath(
  sandbox: SandboxV1,
  path: string,
  options: PathPolicy & { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<PathPlan> {
  const confine = options.confine ?? true;
  const absolute = normalizeToolPath(path, sandbox.workdir, options);
  const roots = await pinFileToolRoots(sandbox, { signal: options.signal, timeoutMs: options.timeoutMs });
  const workdir = posix.resolve(sandbox.workdir);
  if (!confine) {
    const walk: WalkRoot = {
      root: roots.filesystem,
      base: '',
      aliases: [],
      shownWorkspace: roots.workspace.path,
    };
    return { requested: path, absolute, walk, components: componentsUnder(absolute, walk) ?? [] };
  }
  const workspace: WalkRoot = {
    root: roots.workspace,
    base: '',
    aliases: [workdir],
    shownWorkspace: roots.workspace.path,
  };
  const inWorkspace = componentsUnder(absolute, workspace);
  if (inWorkspace) return { requested: path, absolute, walk: workspace, components: inWorkspace };
  for (const extra of options.extraRoots ?? []) {
    const resolvedExtra = posix.resolve(extra);
    if (!isExtraRoot(resolvedExtra)) continue;
    const parent = posix.dirname(resolvedExtra);
    // Only roots directly inside the sandbox temp dir (persisted tool results) are supported.
    if (parent !== posix.resolve(sandbox.tempDir) && parent !== roots.temp.path) continue;
    const walk: WalkRoot = {
      root: roots.temp,
      base: posix.basename(resolvedExtra),
      aliases: [posix.resolve(sandbox.tempDir)],
      shownWorkspace: roots.workspace.path,
    };
    const components = componentsUnder(absolute, walk);
    if (components) return { requested: path, absolute, walk, components };
  }
  throw outside(path, sandbox.workdir);
}

/** Resolves a path without reading or writing it (race-free walk; used by patch). */
export async function resolveSandboxPath(
  sandbox: SandboxV1,
  path: string,
  options: PathPolicy & { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<ResolvedPath> {
  const plan = await planPath(sandbox, path, options);
  const stdout = await runConfined(
    sandbox,
    `${walkFunction(plan.walk)}
walk ${walkArguments(plan.components)}
if [ $? != 0 ]; then
  if [ "$why" = missing ]; then printf 'STATUS:ok\nTYPE:missing\nPDIR:1\nREAL:%s\n' "$cur/$c"; exit 0; fi
  if [ "$why" = notdir ]; then printf 'STATUS:ok\nTYPE:missing\nPDIR:0\nREAL:%s\n' "$cur/$c"; exit 0; fi
  walkfail
fi
inroot || { printf 'STATUS:raced\n'; exit 0; }
if [ -z "$c" ] || [ -d "$c" ]; then t=dir; elif [ ! -e "$c" ]; then t=missing; elif [ -f "$c" ]; then t=file; else t=other; fi
printf 'STATUS:ok\nTYPE:%s\nPDIR:1\nREAL:%s\n' "$t" "$(real)"`,
    { signal: options.signal, timeoutMs: options.timeoutMs ?? 60_000, what: `Resolving ${path}` },
  );
  const fields = readFields(stdout);
  if (fields.get('STATUS') !== 'ok') throwWalkFailure(plan, fields);
  return {
    requested: path,
    real: fields.get('REAL') ?? '',
    workspace: plan.walk.shownWorkspace,
    type: (fields.get('TYPE') ?? 'missing') as ResolvedPath['type'],
    parentIsDirectory: fields.get('PDIR') !== '0',
  };
}

/** Path of `real` as shown to the model: relative to the workspace when inside it. */
export function displayPath(real: string, workspace: string): string {
  if (real === workspace) return '.';
  if (workspace !== '/' && real.startsWith(`${workspace}/`)) return real.slice(workspace.length + 1);
  return real;
}
