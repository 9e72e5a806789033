// The agent's change as the grader takes it: the difference between the pristine repository (the
// task image) and the rollout's repository, computed from two trees the Docker daemon read (see
// container-tree.ts) — never from the agent's git, whose configuration, attributes and hooks are
// the agent's to set. Also renders a change as a git-style diff for the trajectory record.
import { structuredPatch } from 'diff';
import type { TreeEntry, TreeManifest } from './container-tree.js';

export type ChangeKind = 'added' | 'modified' | 'deleted';

export interface FileChange {
  path: string;
  kind: ChangeKind;
  /** The path in the pristine tree (absent for an added path). */
  before?: TreeEntry;
  /** The path in the rollout's tree (absent for a deleted path). */
  after?: TreeEntry;
}

/** Changes of a regular file's executable bit count; other permission changes do not. */
function executable(entry: TreeEntry): boolean {
  return (entry.mode & 0o111) !== 0;
}

function same(before: TreeEntry, after: TreeEntry): boolean {
  if (before.type !== after.type) return false;
  switch (before.type) {
    case 'file':
      return before.sha256 === after.sha256 && executable(before) === executable(after);
    case 'symlink':
      return before.linkname === after.linkname;
    default:
      return true;
  }
}

/**
 * Every path whose type, content, link target or executable bit differs between the pristine tree
 * and the rollout's tree, sorted by path. A path whose type changed (a directory replaced by a
 * file, a file by a symbolic link) is one `modified` change carrying both sides. Directories that
 * exist on both sides are not changes; an added directory shows through the files in it.
 */
export function diffTrees(pristine: TreeManifest, rollout: TreeManifest): FileChange[] {
  const changes: FileChange[] = [];
  for (const [path, after] of rollout) {
    if (path === '') continue;
    const before = pristine.get(path);
    if (!before) {
      if (after.type !== 'directory') changes.push({ path, kind: 'added', after });
    } else if (!same(before, after)) changes.push({ path, kind: 'modified', before, after });
  }
  for (const [path, before] of pristine) {
    if (path === '' || rollout.has(path)) continue;
    changes.push({ path, kind: 'deleted', before });
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function isBinary(data: Buffer): boolean {
  return data.subarray(0, 8000).includes(0);
}

function modeText(entry: TreeEntry): string {
  if (entry.type === 'symlink') return '120000';
  return executable(entry) ? '100755' : '100644';
}

function payload(entry: TreeEntry | undefined, content: Buffer | undefined): Buffer | undefined {
  if (!entry) return Buffer.alloc(0);
  if (entry.type === 'symlink') return Buffer.from(entry.linkname ?? '');
  if (entry.type !== 'file') return undefined;
  return content;
}

/**
 * Renders changes as a git-style unified diff. `originals` holds the pristine bytes of modified
 * and deleted files (read from the pristine sandbox); a file whose bytes are unknown, binary or
 * not a regular file is summarised in one line.
 */
export function renderChangeDiff(
  changes: readonly FileChange[],
  originals: ReadonlyMap<string, Buffer>,
  options: { maxChars?: number } = {},
): string {
  const maxChars = options.maxChars ?? 200_000;
  const parts: string[] = [];
  let length = 0;
  for (const change of changes) {
    if (length > maxChars) {
      parts.push(`[... ${changes.length - parts.length} more changed paths not shown]\n`);
      break;
    }
    const { path, before, after } = change;
    if ((before?.type ?? 'file') === 'directory' && (after?.type ?? 'directory') === 'directory') {
      parts.push(`diff --git a/${path} b/${path}\n# directory ${change.kind}\n`);
      continue;
    }
    const header = [`diff --git a/${path} b/${path}`];
    if (change.kind === 'added' && after) header.push(`new file mode ${modeText(after)}`);
    else if (change.kind === 'deleted' && before) header.push(`deleted file mode ${modeText(before)}`);
    else if (before && after && modeText(before) !== modeText(after))
      header.push(`old mode ${modeText(before)}`, `new mode ${modeText(after)}`);
    const oldBytes = change.kind === 'added' ? Buffer.alloc(0) : payload(before, originals.get(path));
    const newBytes = change.kind === 'deleted' ? Buffer.alloc(0) : payload(after, after?.content);
    const oldName = change.kind === 'added' ? '/dev/null' : `a/${path}`;
    const newName = change.kind === 'deleted' ? '/dev/null' : `b/${path}`;
    let body: string;
    if (oldBytes === undefined || newBytes === undefined) {
      const what = (after ?? before)?.type ?? 'entry';
      body = `# ${what === 'other' ? 'special file (FIFO, device or socket)' : what} ${change.kind}${after?.oversize ? ' (too large to show)' : ''}\n`;
    } else if (isBinary(oldBytes) || isBinary(newBytes)) {
      body = `Binary files ${oldName} and ${newName} differ\n`;
    } else if (oldBytes.equals(newBytes)) {
      body = '';
    } else {
      const patch = structuredPatch(
        oldName,
        newName,
        oldBytes.toString('utf8'),
        newBytes.toString('utf8'),
        '',
        '',
        {
          context: 3,
        },
      );
      const lines = [`--- ${oldName}`, `+++ ${newName}`];
      for (const hunk of patch.hunks) {
        // git's convention: an empty side starts at the line before (0 for an empty file).
        const oldStart = hunk.oldLines === 0 ? hunk.oldStart - 1 : hunk.oldStart;
        const newStart = hunk.newLines === 0 ? hunk.newStart - 1 : hunk.newStart;
        lines.push(`@@ -${oldStart},${hunk.oldLines} +${newStart},${hunk.newLines} @@`, ...hunk.lines);
      }
      body = `${lines.join('\n')}\n`;
    }
    const text = `${header.join('\n')}\n${body}`;
    parts.push(text);
    length += text.length;
  }
  const diff = parts.join('');
  return diff.length <= maxChars
    ? diff
    : `${diff.slice(0, maxChars)}\n[... diff truncated: ${diff.length - maxChars} more characters]`;
}
