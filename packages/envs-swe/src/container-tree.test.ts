// Reading a tree from a tar stream the way the Docker daemon's archive API returns it: GNU tar of a
// real directory (regular files, an executable, a symbolic link, a FIFO, a hard link, a name that
// is not UTF-8, a large file), hashed as it streams, bytes kept only where asked and within caps.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ArchiveSource,
  readContainerFile,
  readContainerTree,
  TreeTooLargeError,
} from './container-tree.js';

const scratch = mkdtempSync(join(tmpdir(), 'shears-container-tree-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** An archive source over the host filesystem: `tar` of a path, named by its last component, like `docker cp`. */
function hostArchive(): ArchiveSource & { requested: string[] } {
  const requested: string[] = [];
  return {
    requested,
    async getArchive({ path }) {
      requested.push(path);
      const parent = path.slice(0, path.lastIndexOf('/')) || '/';
      const name = path.slice(path.lastIndexOf('/') + 1);
      const probe = spawnSync('test', ['-e', path]);
      if (probe.status !== 0 && spawnSync('test', ['-L', path]).status !== 0)
        throw Object.assign(new Error(`no such file: ${path}`), { statusCode: 404 });
      return spawn('tar', ['-C', parent, '--numeric-owner', '-cf', '-', name], {
        stdio: ['ignore', 'pipe', 'ignore'],
      }).stdout;
    },
  };
}

function sha(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

function makeRepository(): string {
  const root = join(scratch, `repo-${Math.random().toString(36).slice(2)}`);
  mkdirSync(join(root, 'src/deep'), { recursive: true });
  mkdirSync(join(root, '.git/objects'), { recursive: true });
  writeFileSync(join(root, 'src/a.py'), 'print("a")\n');
  writeFileSync(join(root, 'src/deep/b.js'), 'module.exports = 1;\n');
  writeFileSync(join(root, 'run.sh'), '#!/bin/sh\necho hi\n');
  chmodSync(join(root, 'run.sh'), 0o755);
  writeFileSync(join(root, '.git/objects/blob'), 'git internals');
  symlinkSync('/etc/passwd', join(root, 'passwd-link'));
  spawnSync('mkfifo', [join(root, 'pipe')]);
  linkSync(join(root, 'src/a.py'), join(root, 'hard.py'));
  writeFileSync(Buffer.concat([Buffer.from(`${root}/odd`), Buffer.from([0xff]), Buffer.from('.txt')]), 'x');
  writeFileSync(join(root, 'big.bin'), Buffer.alloc(300_000, 7));
  return root;
}

describe('readContainerTree', () => {
  it('records every entry with its type, mode and hash; keeps bytes only where asked', async () => {
    const root = makeRepository();
    const tree = await readContainerTree(hostArchive(), root, {
      skip: (path) => path === '.git' || path.startsWith('.git/'),
      keep: (entry) => entry.path.endsWith('.py'),
    });
    expect(tree.get('')?.type).toBe('directory');
    expect(tree.get('src/a.py')).toMatchObject({ type: 'file', sha256: sha('print("a")\n'), size: 11 });
    expect(tree.get('src/a.py')?.content?.toString()).toBe('print("a")\n');
    expect(tree.get('src/deep/b.js')).toMatchObject({ type: 'file', sha256: sha('module.exports = 1;\n') });
    expect(tree.get('src/deep/b.js')?.content).toBeUndefined();
    expect(tree.get('run.sh')?.mode).toBe(0o755);
    expect(tree.get('passwd-link')).toMatchObject({ type: 'symlink', linkname: '/etc/passwd' });
    expect(tree.get('pipe')).toMatchObject({ type: 'other' });
    expect(tree.get('hard.py')).toMatchObject({
      type: 'file',
      hardLinkTo: 'src/a.py',
      sha256: sha('print("a")\n'),
    });
    expect([...tree.keys()].some((path) => path.startsWith('.git'))).toBe(false);
    // A name that is not UTF-8 arrives with a replacement character (the policy drops such paths).
    expect([...tree.keys()].some((path) => path.includes('\uFFFD'))).toBe(true);
  });

  it('hashes a file larger than maxFileBytes without keeping it', async () => {
    const root = makeRepository();
    const tree = await readContainerTree(hostArchive(), root, { keep: () => true, maxFileBytes: 100_000 });
    expect(tree.get('big.bin')).toMatchObject({
      oversize: true,
      size: 300_000,
      sha256: sha(Buffer.alloc(300_000, 7)),
    });
    expect(tree.get('big.bin')?.content).toBeUndefined();
    expect(tree.get('src/a.py')?.content).toBeDefined();
  });

  it('gives up with TreeTooLargeError past maxTreeBytes or maxKeptBytes, naming the cap', async () => {
    const root = makeRepository();
    const tooBig = await readContainerTree(hostArchive(), root, { maxTreeBytes: 50_000 }).catch(
      (error) => error,
    );
    expect(TreeTooLargeError.isInstance(tooBig)).toBe(true);
    expect(tooBig.limit).toBe('maxTreeBytes');
    const tooMuchKept = await readContainerTree(hostArchive(), root, {
      keep: () => true,
      maxKeptBytes: 1000,
    }).catch((error) => error);
    expect(TreeTooLargeError.isInstance(tooMuchKept)).toBe(true);
    expect(tooMuchKept.limit).toBe('maxChangeBytes');
  });

  it('reads one file, and undefined for a missing path or a symbolic link', async () => {
    const root = makeRepository();
    const source = hostArchive();
    expect((await readContainerFile(source, join(root, 'src/a.py')))?.toString()).toBe('print("a")\n');
    expect(await readContainerFile(source, join(root, 'missing.py'))).toBeUndefined();
    expect(await readContainerFile(source, join(root, 'passwd-link'))).toBeUndefined();
  });

  it('stops when aborted', async () => {
    const root = makeRepository();
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(readContainerTree(hostArchive(), root, { signal: controller.signal })).rejects.toThrow(
      'stop',
    );
  });
});
