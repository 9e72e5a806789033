import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTar, parseTar } from './tar.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('tar', () => {
  it('writes archives GNU tar extracts byte for byte (binary data, long names, modes)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'shears-tar-'));
    const blob = new Uint8Array(randomBytes(70_000));
    const longName = `${'a'.repeat(150)}.bin`;
    const archive = await createTar([
      { path: 'blob.bin', data: blob, mode: 0o600 },
      { path: longName, data: new TextEncoder().encode('long\n') },
      { path: 'empty.txt', data: new Uint8Array(0), mode: 0o755 },
    ]);
    writeFileSync(join(dir, 'out.tar'), archive);
    mkdirSync(join(dir, 'x'));
    execFileSync('tar', ['-xf', join(dir, 'out.tar'), '-C', join(dir, 'x')]);
    expect(Buffer.compare(readFileSync(join(dir, 'x', 'blob.bin')), Buffer.from(blob))).toBe(0);
    expect(readFileSync(join(dir, 'x', longName), 'utf8')).toBe('long\n');
    expect(readFileSync(join(dir, 'x', 'empty.txt')).length).toBe(0);
    const listing = execFileSync('tar', ['-tvf', join(dir, 'out.tar')], { encoding: 'utf8' });
    expect(listing).toMatch(/-rw------- .*blob\.bin/);
    expect(listing).toMatch(/-rwxr-xr-x .*empty\.txt/);
  });

  it('reads archives made by GNU tar: files, directories, symlinks, long names', async () => {
    dir = mkdtempSync(join(tmpdir(), 'shears-tar-'));
    const source = join(dir, 'src');
    const deep = join(source, 'd'.repeat(90), 'e'.repeat(90));
    mkdirSync(deep, { recursive: true });
    writeFileSync(join(deep, 'file.txt'), 'deep text');
    writeFileSync(join(source, 'small.txt'), 'héllo');
    symlinkSync('small.txt', join(source, 'link'));
    for (const format of ['gnu', 'posix']) {
      const archive = execFileSync('tar', [`--format=${format}`, '-C', source, '-c', '.']);
      const entries = await parseTar(new Uint8Array(archive));
      const byPath = new Map(entries.map((entry) => [entry.path.replace(/^\.\//, ''), entry]));
      expect(new TextDecoder().decode(byPath.get('small.txt')?.data)).toBe('héllo');
      expect(byPath.get(`${'d'.repeat(90)}/${'e'.repeat(90)}/file.txt`)?.type).toBe('file');
      expect(byPath.get('link')).toMatchObject({ type: 'symlink', linkname: 'small.txt' });
      expect(byPath.get(`${'d'.repeat(90)}/`)?.type ?? byPath.get('d'.repeat(90))?.type).toBe('directory');
    }
  });

  it('round-trips through its own reader and rejects corrupt archives', async () => {
    const data = new Uint8Array(randomBytes(1025));
    const [entry] = await parseTar(await createTar([{ path: 'x', data }]));
    expect(entry?.path).toBe('x');
    expect(Buffer.compare(Buffer.from(entry?.data ?? []), Buffer.from(data))).toBe(0);
    const corrupt = await createTar([{ path: 'x', data }]);
    corrupt[10] = 0x41;
    await expect(parseTar(corrupt)).rejects.toThrow(/^corrupt or truncated tar archive: Invalid tar header/);
    await expect(parseTar((await createTar([{ path: 'x', data }])).subarray(0, 1024))).rejects.toThrow(
      /^corrupt or truncated tar archive: Unexpected end of data/,
    );
  });

  it('refuses names that would land outside the target directory, before writing anything', async () => {
    for (const path of ['/etc/passwd', '../escape', 'a/../../b', 'nul\0name', ''])
      await expect(createTar([{ path, data: new Uint8Array(1) }])).rejects.toThrow(
        /a tar entry name must be relative, without "\.\." segments or NUL bytes/,
      );
    const [entry] = await parseTar(await createTar([{ path: 'dots..ok', data: new Uint8Array(1) }]));
    expect(entry?.path).toBe('dots..ok');
  });
});
