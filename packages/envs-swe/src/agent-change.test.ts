import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { diffTrees, renderChangeDiff } from './agent-change.js';
import type { TreeEntry, TreeManifest } from './container-tree.js';

function file(path: string, text: string, mode = 0o644, keep = true): TreeEntry {
  const content = Buffer.from(text);
  return {
    path,
    type: 'file',
    mode,
    size: content.length,
    sha256: createHash('sha256').update(content).digest('hex'),
    ...(keep ? { content } : {}),
  };
}
const directory = (path: string): TreeEntry => ({ path, type: 'directory', mode: 0o755, size: 0 });
const link = (path: string, target: string): TreeEntry => ({
  path,
  type: 'symlink',
  mode: 0o777,
  size: 0,
  linkname: target,
});
const tree = (...entries: TreeEntry[]): TreeManifest =>
  new Map([['', directory('')], ...entries.map((entry) => [entry.path, entry] as const)]);

describe('diffTrees', () => {
  const pristine = tree(
    directory('src'),
    file('src/a.py', 'a = 1\n', 0o644, false),
    file('src/b.py', 'b = 1\n', 0o644, false),
    file('run.sh', 'echo\n', 0o644, false),
    link('current', 'src'),
    directory('old'),
    file('old/x.txt', 'x\n', 0o644, false),
    file('same.txt', 'same\n', 0o644, false),
  );

  it('finds added, modified and deleted paths, the executable bit and link targets; same content is no change', () => {
    const rollout = tree(
      directory('src'),
      file('src/a.py', 'a = 2\n'),
      file('src/b.py', 'b = 1\n'),
      file('run.sh', 'echo\n', 0o755),
      link('current', 'elsewhere'),
      directory('new'),
      file('new/y.txt', 'y\n'),
      file('same.txt', 'same\n', 0o600),
    );
    expect(diffTrees(pristine, rollout).map((change) => [change.path, change.kind])).toEqual([
      ['current', 'modified'],
      ['new/y.txt', 'added'],
      ['old', 'deleted'],
      ['old/x.txt', 'deleted'],
      ['run.sh', 'modified'],
      ['src/a.py', 'modified'],
    ]);
  });

  it('reports a type change as one modified path with both sides', () => {
    const rollout = tree(
      directory('src'),
      file('src/a.py', 'a = 1\n'),
      link('src/b.py', '/etc/passwd'),
      file('old', 'now a file\n'),
    );
    const changes = diffTrees(pristine, rollout);
    const byPath = new Map(changes.map((change) => [change.path, change]));
    expect(byPath.get('src/b.py')).toMatchObject({
      kind: 'modified',
      before: { type: 'file' },
      after: { type: 'symlink' },
    });
    expect(byPath.get('old')).toMatchObject({
      kind: 'modified',
      before: { type: 'directory' },
      after: { type: 'file' },
    });
    expect(byPath.get('old/x.txt')?.kind).toBe('deleted');
  });
});

describe('renderChangeDiff', () => {
  it('renders a git-style diff: modified, new, deleted, mode change, binary and special files', () => {
    const pristine = tree(
      file('a.py', 'one\ntwo\nthree\n', 0o644, false),
      file('gone.txt', 'bye\n', 0o644, false),
      file('tool.sh', 'echo\n', 0o644, false),
      file('data.bin', '\0\x01', 0o644, false),
    );
    const rollout = tree(
      file('a.py', 'one\n2\nthree\n'),
      file('new.py', 'print(1)\n'),
      file('tool.sh', 'echo\n', 0o755),
      file('data.bin', '\0\x02'),
      { path: 'pipe', type: 'other', mode: 0o644, size: 0 },
    );
    const originals = new Map([
      ['a.py', Buffer.from('one\ntwo\nthree\n')],
      ['gone.txt', Buffer.from('bye\n')],
      ['tool.sh', Buffer.from('echo\n')],
      ['data.bin', Buffer.from('\0\x01')],
    ]);
    const diff = renderChangeDiff(diffTrees(pristine, rollout), originals);
    expect(diff).toBe(
      [
        'diff --git a/a.py b/a.py',
        '--- a/a.py',
        '+++ b/a.py',
        '@@ -1,3 +1,3 @@',
        ' one',
        '-two',
        '+2',
        ' three',
        'diff --git a/data.bin b/data.bin',
        'Binary files a/data.bin and b/data.bin differ',
        'diff --git a/gone.txt b/gone.txt',
        'deleted file mode 100644',
        '--- a/gone.txt',
        '+++ /dev/null',
        '@@ -1,1 +0,0 @@',
        '-bye',
        'diff --git a/new.py b/new.py',
        'new file mode 100644',
        '--- /dev/null',
        '+++ b/new.py',
        '@@ -0,0 +1,1 @@',
        '+print(1)',
        'diff --git a/pipe b/pipe',
        'new file mode 100644',
        '# special file (FIFO, device or socket) added',
        'diff --git a/tool.sh b/tool.sh',
        'old mode 100644',
        'new mode 100755',
        '',
      ].join('\n'),
    );
  });

  it('truncates a long diff and says so', () => {
    const rollout = tree(
      ...Array.from({ length: 50 }, (_, index) => file(`f${index}.txt`, `${'x'.repeat(100)}\n`)),
    );
    const diff = renderChangeDiff(diffTrees(tree(), rollout), new Map(), { maxChars: 1000 });
    expect(diff.length).toBeLessThan(1400);
    expect(diff).toMatch(/more changed paths not shown|diff truncated/);
  });
});
