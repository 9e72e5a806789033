// Path confinement for the file tools. A path is checked as text first (NUL bytes, control
// characters, text that is not valid Unicode, over-long paths), normalised lexically against
// the sandbox workdir, and then resolved *inside the sandbox* with the shell (`cd -P`,
// `readlink -f`) so that symlinks are followed where they really point. The resolution runs in
// the same shell script as the operation that uses the path, so there is no gap between the
// check and the use in which a symlink could be swapped in by a later command.
import { posix } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import { FileToolError } from './file-tool-error.js';
import { inSubshell, readFields, shellQuote } from './shell.js';

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

/**
 * Shell that resolves `$p` (already absolute and lexically normal) to `$full`, following
 * symlinks in the existing part, and sets `$t` to file, dir, other or missing (`$pdir` says
 * whether the deepest existing ancestor of a missing path is a directory). With confinement,
 * prints `STATUS:escape` and exits when `$full` leaves the workspace and every `extraRoots`
 * directory. An extra root counts only when it is not itself a symlink (its parent is resolved),
 * so a link planted in its place cannot widen what is allowed.
 */
export function resolveScript(
  absolutePath: string,
  workdir: string,
  confine: boolean,
  extraRoots: readonly string[] = [],
): string {
  const roots = confine ? extraRoots.map((root) => posix.resolve(root)).filter(isExtraRoot) : [];
  const extraChecks = roots
    .map((root) => {
      const parent = posix.dirname(root);
      const base = posix.basename(root);
      return `if [ "$ok" = 0 ]; then xp=$(cd -P ${shellQuote(parent)} 2>/dev/null && pwd -P) && xr="\${xp%/}/"${shellQuote(base)} && [ ! -L "$xr" ] && case "$full" in "$xr"|"$xr"/*) ok=1;; esac; fi
`;
    })
    .join('');
  return `ws=$(cd -P ${shellQuote(workdir)} 2>/dev/null && pwd -P) || { printf 'STATUS:noworkspace\\n'; exit 0; }
p=${shellQuote(absolutePath)}
rest=
while [ ! -e "$p" ] && [ ! -L "$p" ]; do
  rest="/\${p##*/}$rest"
  p="\${p%/*}"
  [ -n "$p" ] || p=/
done
if [ -d "$p" ]; then r=$(cd -P "$p" 2>/dev/null && pwd -P) || r=
else r=$(readlink -f "$p" 2>/dev/null) || r=
fi
[ -n "$r" ] || { printf 'STATUS:unresolvable\\n'; exit 0; }
if [ "$r" = / ]; then full="$rest"; else full="$r$rest"; fi
[ -n "$full" ] || full=/
${
  confine
    ? `ok=0
if [ "$ws" = / ]; then ok=1; else case "$full" in "$ws"|"$ws"/*) ok=1;; esac; fi
${extraChecks}[ "$ok" = 1 ] || { printf 'STATUS:escape\\nWS:%s\\nREAL:%s\\n' "$ws" "$full"; exit 0; }`
    : ':'
}
pdir=1
if [ -n "$rest" ]; then t=missing; [ -d "$r" ] || pdir=0
elif [ -f "$full" ]; then t=file
elif [ -d "$full" ]; then t=dir
else t=other
fi
`;
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

/** Reads the fields every resolve script prints; throws the refusal the model should see. */
export function parseResolved(requested: string, fields: Map<string, string>): ResolvedPath {
  const status = fields.get('STATUS');
  if (status === 'escape') {
    throw new FileToolError(
      `Access denied: ${requested} resolves to ${fields.get('REAL')}, outside the sandbox workspace (${fields.get('WS')}); symlinks may not point out of the workspace`,
      { path: requested, code: 'SHEARS_PATH_OUTSIDE' },
    );
  }
  if (status === 'noworkspace')
    throw new FileToolError('The sandbox workspace directory does not exist', { path: requested });
  if (status === 'unresolvable') {
    throw new FileToolError(
      `Cannot resolve ${requested}: a symlink on the way is broken or loops, or a directory on the way is not accessible`,
      {
        path: requested,
      },
    );
  }
  if (status !== 'ok')
    throw new FileToolError(`Cannot resolve ${requested}: unexpected answer from the sandbox`, {
      path: requested,
    });
  return {
    requested,
    real: fields.get('REAL') ?? '',
    workspace: fields.get('WS') ?? '',
    type: (fields.get('TYPE') ?? 'missing') as ResolvedPath['type'],
    parentIsDirectory: fields.get('PDIR') !== '0',
  };
}

/** The `printf` lines that report a resolution (append after `resolveScript`). */
export const REPORT_RESOLVED = `printf 'STATUS:ok\\nTYPE:%s\\nPDIR:%s\\nWS:%s\\nREAL:%s\\n' "$t" "$pdir" "$ws" "$full"`;

/** Resolves a path without touching it (used by search_files and the hostile-path suite). */
export async function resolveSandboxPath(
  sandbox: SandboxV1,
  path: string,
  options: PathPolicy & { signal?: AbortSignal } = {},
): Promise<ResolvedPath> {
  const confine = options.confine ?? true;
  const absolute = normalizeToolPath(path, sandbox.workdir, options);
  const result = await sandbox.exec(
    inSubshell(`${resolveScript(absolute, sandbox.workdir, confine, options.extraRoots)}${REPORT_RESOLVED}`),
    {
      signal: options.signal,
    },
  );
  return parseResolved(path, readFields(result.stdout));
}

/** Path of `real` as shown to the model: relative to the workspace when inside it. */
export function displayPath(real: string, workspace: string): string {
  if (real === workspace) return '.';
  if (workspace !== '/' && real.startsWith(`${workspace}/`)) return real.slice(workspace.length + 1);
  return real;
}
