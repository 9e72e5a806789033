// Tar archives for the Docker archive API (putArchive/getArchive), through tar-stream (the
// library dockerode itself packs with, and envs-swe uses): it writes ustar with PAX headers for
// long names and reads ustar, PAX and GNU long names and links, base-256 sizes, and refuses a
// corrupt or truncated archive. What this module adds: names that could land outside the target
// directory are refused before anything is written, and a failure says which archive it was.
import { InvalidArgumentError, SandboxError } from '@shears/core';
import tar from 'tar-stream';

type TarEntryType = 'file' | 'directory' | 'symlink' | 'other';

interface TarEntry {
  path: string;
  type: TarEntryType;
  mode: number;
  /** Target of a symlink or hard link; empty otherwise. */
  linkname: string;
  data: Uint8Array;
}

interface TarFileInput {
  path: string;
  data: Uint8Array;
  mode?: number;
  mtimeSeconds?: number;
}

/**
 * A name tar may carry into the target directory: relative, no `..` segment, no NUL. An absolute
 * name or one climbing out would make the daemon write elsewhere than the caller asked.
 */
function assertSafeName(path: string): void {
  const segments = path.split('/');
  if (path === '' || path.startsWith('/') || path.includes('\0') || segments.includes('..'))
    throw new InvalidArgumentError({
      argument: 'path',
      value: path,
      message: `refusing to archive ${JSON.stringify(path)}: a tar entry name must be relative, without ".." segments or NUL bytes`,
    });
}

/** A tar archive (with its two trailing zero blocks) holding the given regular files. */
export async function createTar(files: readonly TarFileInput[]): Promise<Buffer> {
  for (const file of files) assertSafeName(file.path);
  const pack = tar.pack();
  for (const file of files) {
    pack.entry(
      {
        name: file.path,
        size: file.data.length,
        mode: (file.mode ?? 0o644) & 0o7777,
        mtime: new Date((file.mtimeSeconds ?? Math.floor(Date.now() / 1000)) * 1000),
        uid: 0, // root inside the container
        gid: 0,
      },
      Buffer.from(file.data.buffer, file.data.byteOffset, file.data.byteLength),
    );
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const TYPES: Record<string, TarEntryType> = {
  file: 'file',
  'contiguous-file': 'file',
  directory: 'directory',
  symlink: 'symlink',
};

/** Every entry of a whole tar archive. Rejects with a SandboxError on a corrupt or truncated one. */
export function parseTar(archive: Uint8Array, what = 'tar archive'): Promise<TarEntry[]> {
  return new Promise((resolve, reject) => {
    const entries: TarEntry[] = [];
    const extract = tar.extract();
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const type = TYPES[header.type ?? 'file'] ?? 'other';
        entries.push({
          path: header.name,
          type,
          mode: header.mode ?? 0,
          linkname: header.linkname ?? '',
          // A copy with its own memory (Buffer.concat may hand out a slice of a shared pool).
          data: type === 'file' ? new Uint8Array(Buffer.concat(chunks)) : new Uint8Array(0),
        });
        next();
      });
    });
    extract.once('finish', () => resolve(entries));
    extract.once('error', (error: Error) =>
      reject(
        new SandboxError({
          message: `corrupt or truncated ${what}: ${error.message}`,
          cause: error,
        }),
      ),
    );
    extract.end(Buffer.from(archive.buffer, archive.byteOffset, archive.byteLength));
  });
}
