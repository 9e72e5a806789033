// Race-free path handling for the file tools. Every tool call is ONE POSIX sh script run inside
// the sandbox that:
//
// 1. starts a clean shell (`env -i` with a fixed PATH): nothing the agent exported in its shell
//    session (PATH, RIPGREP_CONFIG_PATH, IFS, TMPDIR, ...) reaches the tools;
// 2. walks the path one component at a time from the workspace root pinned when the rollout's
//    first file-tool call ran (real path + device:inode), using the shell's working directory as
//    the open directory handle: `cd -P -- <one name>` is a lookup relative to the directory the
//    shell is in, never a re-resolution of a path string. Symlinks are never followed by the
//    kernel on purpose: each one is read (`readlink`) and resolved by the walk itself, which
//    refuses targets outside the root;
// 3. checks, after the walk, that the directory it ended in still has the pinned root as its
//    ancestor at the depth it walked (`stat` of `../..`, inode compared). A directory swapped for
//    a symlink while the walk ran makes the shell land elsewhere, and this check refuses it;
// 4. opens the final file on a file descriptor and checks that the descriptor and the name in the
//    checked directory are the same inode, a regular file with one link, before it reads a byte;
//    reads go through `/proc/self/fd/N` (the open file, never the name again).
//
// This is the openat(O_NOFOLLOW) walk done with the one language every sandbox has (a POSIX
// shell: bash, dash and busybox ash all behave the same here), plus `stat`, `head`, `sed`, `cut`,
// `readlink`, `mv -T` and `sha256sum`, which both GNU coreutils and busybox provide.
import { createHash, randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import { FileToolError } from './file-tool-error.js';
import { inSubshell, readFields, shellQuote } from './shell.js';

/** PATH inside every file-tool script: the agent's PATH is never used. */
const CONFINED_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface PinnedRoot {
  /** Real path (symlinks resolved) when the root was pinned. */
  path: string;
  /** `device:inode` of that directory. */
  id: string;
}

export interface PinnedRoots {
  workspace: PinnedRoot;
  temp: PinnedRoot;
  /** `/`, for `confine: false`. */
  filesystem: PinnedRoot;
}

const pins = new WeakMap<SandboxV1, Promise<PinnedRoots>>();

/**
 * Wraps a script so that it runs in a fresh `sh` with an empty environment (a fixed PATH, a fixed
 * locale), whatever the agent exported in the sandbox's shell session. Runs in a subshell, so the
 * backend's session survives `exit`.
 */
function cleanShell(script: string): string {
  return inSubshell(`IFS=' 	
'
__shears_s=${shellQuote(script)}
for __shears_e in /usr/bin/env /bin/env; do
  if [ -x "$__shears_e" ]; then exec "$__shears_e" -i PATH=${CONFINED_PATH} LC_ALL=C.UTF-8 HOME=/ /bin/sh -c "$__shears_s" sh; fi
done
printf 'STATUS:noenv\\n'`);
}

/** Runs a confined script with the tool time limit; a timeout becomes a clear FileToolError. */
export async function runConfined(
  sandbox: SandboxV1,
  script: string,
  options: { signal?: AbortSignal; timeoutMs: number; what: string },
): Promise<string> {
  const result = await sandbox.exec(cleanShell(script), {
    signal: options.signal,
    timeoutMs: options.timeoutMs,
  });
  if (result.timedOut) {
    throw new FileToolError(
      `${options.what} timed out after ${Math.round(options.timeoutMs / 1000)} s and was stopped (a file that never ends or blocks, such as a FIFO or a device, or a very large tree)`,
      { code: 'SHEARS_FILE_TIMEOUT' },
    );
  }
  if (result.stdout.includes('STATUS:noenv\n'))
    throw new FileToolError('The sandbox has no /usr/bin/env or /bin/env; the file tools need one');
  return result.stdout;
}

/**
 * Pins the workspace and temp dir of `sandbox`: their real paths and device:inode numbers, taken
 * once. Every later file-tool call walks from the pinned directory and checks it is still the
 * same one, so re-pointing a workspace that is itself a symlink (or swapping the directory) after
 * this does not move the tools. The file tools call this on their first use; call it yourself
 * right after acquiring the sandbox to pin before the agent has run anything.
 */
export function pinFileToolRoots(
  sandbox: SandboxV1,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<PinnedRoots> {
  const existing = pins.get(sandbox);
  if (existing) return existing;
  const pending = (async () => {
    const stdout = await runConfined(
      sandbox,
      `p() { cd -P -- "$2" 2>/dev/null && printf '%s:%s\\n%sID:%s\\n' "$1" "$(pwd -P)" "$1" "$(stat -c %d:%i .)"; }
p WS ${shellQuote(sandbox.workdir)}
p TMP ${shellQuote(sandbox.tempDir)}
p ROOT /`,
      { signal: options.signal, timeoutMs: options.timeoutMs ?? 30_000, what: 'Pinning the workspace' },
    );
    const fields = readFields(stdout);
    const root = (key: string): PinnedRoot | undefined => {
      const path = fields.get(key);
      const id = fields.get(`${key}ID`);
      return path && id && /^\d+:\d+$/.test(id) ? { path, id } : undefined;
    };
    const workspace = root('WS');
    if (!workspace) throw new FileToolError('The sandbox workspace directory does not exist');
    const temp = root('TMP');
    if (!temp) throw new FileToolError(`The sandbox temp dir ${sandbox.tempDir} does not exist`);
    const filesystem = root('ROOT') ?? { path: '/', id: '' };
    return { workspace, temp, filesystem };
  })();
  pins.set(sandbox, pending);
  pending.catch(() => pins.delete(sandbox));
  return pending;
}

/** Where a walk starts and what it may reach. */
export interface WalkRoot {
  /** Pinned directory the walk starts in. */
  root: PinnedRoot;
  /** Logical base below the root that the walk may not leave (`''`, or `hermes-results`). */
  base: string;
  /** Other spellings of the root path an absolute symlink may use (the unresolved workdir). */
  aliases: string[];
  /** Path shown as the workspace in messages. */
  shownWorkspace: string;
}

/** Components of `absolute` below the root, or undefined when it is not under root/base. */
export function componentsUnder(absolute: string, walk: WalkRoot): string[] | undefined {
  const bases = [walk.root.path, ...walk.aliases].map((path) =>
    walk.base ? posix.join(path, walk.base) : path,
  );
  for (const base of bases) {
    const relative = base === '/' ? absolute.slice(1) : absolute === base ? '' : undefined;
    const under = relative ?? (absolute.startsWith(`${base}/`) ? absolute.slice(base.length + 1) : undefined);
    if (under !== undefined) {
      const parts = under.split('/').filter((part) => part !== '' && part !== '.');
      return walk.base ? [walk.base, ...parts] : parts;
    }
  }
  return undefined;
}

/** Random marker for one script's output sections. */
export function newMarker(): string {
  return `@@SHEARS-${randomBytes(9).toString('hex')}@@`;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Shell defining `walk COMPONENT...`. On success (status 0) the shell is in the directory that
 * holds the final component; `$c` is that component (empty when the path is the directory itself),
 * `$cur` its directory's real path, `$ups` a relative path from there to the root. On failure
 * (status 1) `$why` says why (`escape`, `unresolvable`, `missing`, `notdir`, `mkdirfailed`,
 * `noroot`) and `$cur`/`$target`/`$rest` describe an escape. With `create=1`, missing
 * directories on the way are made (`$made=1`).
 */
export function walkFunction(walk: WalkRoot): string {
  const aliases = walk.aliases.filter((alias) => alias !== walk.root.path && alias !== '/');
  const basePath = walk.base ? posix.join(walk.root.path, walk.base) : walk.root.path;
  const aliasCases = aliases
    .map((alias) => {
      const aliasBase = walk.base ? posix.join(alias, walk.base) : alias;
      return `      ${shellQuote(aliasBase)}|${shellQuote(aliasBase)}/*) rel=\${t#${shellQuote(aliasBase)}} ;;`;
    })
    .join('\n');
  const min = walk.base ? 1 : 0;
  const basePattern = basePath === '/' ? '/*) rel=$t ;;' : '"$B"|"$B"/*) rel=${t#"$B"} ;;';
  return `set -f
DIFS=$IFS
GL=$(printf '\\001*')
R=${shellQuote(walk.root.path)}; RID=${shellQuote(walk.root.id)}; B=${shellQuote(basePath)}; BP=${shellQuote(walk.base)}
create=0; made=0
walk() {
  why=; target=; rest=; c=; hops=0; depth=0; cur=$R
  cd -P -- "$R" 2>/dev/null || { why=noroot; return 1; }
  while [ $# -gt 0 ]; do
    c=$1; shift
    case $c in
      "$GL"*)
        # A name the search printed with bytes that are not UTF-8: find it by pattern, once.
        p=\${c#"$GL"}; IFS=; set +f; m=; n=0
        for x in $p; do if [ -e "$x" ] || [ -L "$x" ]; then m=$x; n=$((n + 1)); fi; done
        set -f; IFS=$DIFS
        [ "$n" = 1 ] || { why=missing; return 1; }
        c=$m ;;
    esac
    case $c in
      ''|.) c=; continue ;;
      ..)
        if [ "$depth" -le ${min} ]; then why=escape; target=..; rest=$(IFS=/; printf '%s' "$*"); return 1; fi
        cd .. 2>/dev/null || { why=unresolvable; return 1; }
        depth=$((depth - 1)); cur=\${cur%/*}; [ -n "$cur" ] || cur=/; c=; continue ;;
    esac
    if [ -L "$c" ]; then
      hops=$((hops + 1))
      [ "$hops" -le 40 ] || { why=unresolvable; return 1; }
      t=$(readlink -- "$c" 2>/dev/null) || { why=unresolvable; return 1; }
      [ -n "$t" ] || { why=unresolvable; return 1; }
      if [ "$depth" -lt ${min} ]; then why=escape; target=$t; rest=$(IFS=/; printf '%s' "$*"); return 1; fi
      case $t in
        /*)
          case $t in
            ${basePattern}
${aliasCases}
            *) why=escape; target=$t; rest=$(IFS=/; printf '%s' "$*"); return 1 ;;
          esac
          cd -P -- "$R" 2>/dev/null || { why=noroot; return 1; }
          cur=$R; depth=0
          IFS=/; set -- $BP $rel "$@"; IFS=$DIFS
          ;;
        *) IFS=/; set -- $t "$@"; IFS=$DIFS ;;
      esac
      c=; continue
    fi
    [ $# -gt 0 ] || break
    if [ ! -e "$c" ]; then
      if [ "$create" != 1 ]; then why=missing; rest=$(IFS=/; printf '%s' "$*"); return 1; fi
      mkdir -- "$c" 2>/dev/null || [ -d "$c" ] || { why=mkdirfailed; return 1; }
      made=1
    fi
    [ -d "$c" ] || { why=notdir; return 1; }
    cd -P -- "$c" 2>/dev/null || { why=unresolvable; return 1; }
    depth=$((depth + 1)); cur=\${cur%/}/$c; c=
  done
  ups=.; wi=0
  while [ "$wi" -lt "$depth" ]; do ups=$ups/..; wi=$((wi + 1)); done
  return 0
}
# Whether the walked directory is (still) below the pinned root.
inroot() { [ "$(stat -c %d:%i -- "$ups" 2>/dev/null)" = "$RID" ]; }
real() { if [ -n "$c" ]; then printf '%s/%s' "\${cur%/}" "$c"; else printf '%s' "$cur"; fi; }
walkfail() {
  printf 'STATUS:%s\\nCUR:%s\\nTARGET:%s\\nREST:%s\\nNAME:%s\\n' "$why" "$cur" "$target" "$rest" "$c"
  exit 0
}
`;
}

/**
 * Shell-quoted components, for `walk`. A component with U+FFFD (bytes that were not UTF-8 in a
 * name a search printed) is passed as a pattern that `walk` matches against the directory.
 */
export function walkArguments(components: readonly string[]): string {
  return components
    .map((component) =>
      component.includes('\ufffd')
        ? `"$GL"${shellQuote(component.replace(/[*?[\\]/g, '?').replace(/\ufffd+/g, '*'))}`
        : shellQuote(component),
    )
    .join(' ');
}

/** The pinned roots and the walk for a path the model gave, checked as text first. */
export interface PathPlan {
  requested: string;
  absolute: string;
  walk: WalkRoot;
  components: string[];
}

/** Throws the refusal the model sees for a failed walk (`STATUS:` other than ok). */
export function throwWalkFailure(plan: PathPlan, fields: Map<string, string>): never {
  const status = fields.get('STATUS');
  const requested = plan.requested;
  if (status === 'escape') {
    const cur = fields.get('CUR') ?? '/';
    const target = fields.get('TARGET') ?? '';
    const rest = fields.get('REST') ?? '';
    const real = posix.resolve(cur, target, rest);
    throw new FileToolError(
      `Access denied: ${requested} resolves to ${real}, outside the sandbox workspace (${plan.walk.shownWorkspace}); symlinks may not point out of the workspace`,
      { path: requested, code: 'SHEARS_PATH_OUTSIDE' },
    );
  }
  if (status === 'noroot') {
    throw new FileToolError(
      'The sandbox workspace directory is gone or was replaced since the rollout started; the file tools stay in the workspace pinned then',
      { path: requested },
    );
  }
  if (status === 'unresolvable') {
    throw new FileToolError(
      `Cannot resolve ${requested}: a symlink on the way is broken or loops, or a directory on the way is not accessible`,
      { path: requested },
    );
  }
  if (status === 'raced') {
    throw new FileToolError(
      `Access denied: ${requested} changed while the tool used it (a directory on the way was moved or replaced by a symlink); nothing was read or written. Try again once nothing is renaming files there`,
      { path: requested, code: 'SHEARS_PATH_RACED' },
    );
  }
  if (status === 'tempraced') {
    throw new FileToolError(
      'The sandbox temp dir was moved or replaced by a symlink since the rollout started; the file tools will not send data through it',
      { path: requested, code: 'SHEARS_PATH_RACED' },
    );
  }
  if (status === 'hardlink') {
    throw new FileToolError(
      `Access denied: ${requested} has ${fields.get('LINKS') ?? 'several'} hard links, and another name of the same file may lie outside the workspace. If you made the link, replace it with a copy (cp ${requested} ${requested}.copy && mv ${requested}.copy ${requested}) and try again`,
      { path: requested, code: 'SHEARS_PATH_HARDLINK' },
    );
  }
  if (status === 'notdir')
    throw new FileToolError(`Cannot use ${requested}: a parent path is a file, not a directory`, {
      path: requested,
    });
  if (status === 'mkdirfailed')
    throw new FileToolError(
      `Cannot write ${requested}: could not create its parent directories (permission denied?)`,
      { path: requested },
    );
  if (status === 'nostat')
    throw new FileToolError('The sandbox has no working `stat -c`; the file tools need it', {
      path: requested,
    });
  throw new FileToolError(
    `Cannot use ${requested}: unexpected answer from the sandbox (${status ?? 'none'})`,
    {
      path: requested,
    },
  );
}
