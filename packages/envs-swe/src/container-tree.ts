// Reading a directory of a container the way a trusted grader must: through the Docker daemon's
// archive API (the daemon reads the container's filesystem; nothing inside the container runs,
// so neither the agent's processes, its git configuration nor its replaced binaries take part).
// The tar stream is parsed as it arrives: every regular file is hashed, and its bytes are kept only
// when the caller asks (a file that differs from the pristine tree), within size caps.
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import { SandboxError, ShearsError } from '@shears/core';
import tar from 'tar-stream';

export type TreeEntryType = 'file' | 'directory' | 'symlink' | 'other';

export interface TreeEntry {
  /** Path relative to the tree's root, `/`-separated. */
  path: string;
  type: TreeEntryType;
  /** Permission bits (0o777). */
  mode: number;
  size: number;
  /** SHA-256 of a regular file's bytes. */
  sha256?: string;
  /** Target of a symbolic link. */
  linkname?: string;
  /** The file's bytes, when the caller's `keep` asked for them and they fit `maxFileBytes`. */
  content?: Buffer;
  /** The file is larger than `maxFileBytes`: hashed, its bytes not kept. */
  oversize?: boolean;
  /** A hard link inside the archive to this earlier path (same bytes). */
  hardLinkTo?: string;
}

export type TreeManifest = Map<string, TreeEntry>;

/** The part of a dockerode Container the tree reader uses. */
export interface ArchiveSource {
  getArchive(options: { path: string }): Promise<NodeJS.ReadableStream>;
}

export interface ReadTreeOptions {
  /** Whether to keep a regular file's bytes (asked once it is hashed; `pristine` is the same path in the pristine tree). */
  keep?: (entry: TreeEntry) => boolean;
  /** Paths (relative) not recorded at all, with everything below them. */
  skip?: (path: string) => boolean;
  /** Bytes of archive read before giving up (default 1 GiB). */
  maxTreeBytes?: number;
  /** Bytes kept per file (default 10 MiB); a larger file is marked `oversize`. */
  maxFileBytes?: number;
  /** Bytes kept in all (default 64 MiB). */
  maxKeptBytes?: number;
  signal?: AbortSignal;
}

/** The tree, or its kept bytes, exceeded a cap: a change too large to grade. */
export class TreeTooLargeError extends ShearsError {
  /** The setting whose cap was exceeded (`maxTreeBytes` or `maxChangeBytes`). */
  readonly limit: string;
  constructor(options: { message: string; limit: string }) {
    super(options.message, { code: 'SHEARS_SWE_TREE_TOO_LARGE' });
    this.limit = options.limit;
  }
  static override isInstance(error: unknown): error is TreeTooLargeError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_SWE_TREE_TOO_LARGE';
  }
}

const DEFAULT_MAX_TREE_BYTES = 1024 * 1024 * 1024;
const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_KEPT_BYTES = 64 * 1024 * 1024;

function entryType(type: string | null | undefined): TreeEntryType | 'hardlink' {
  switch (type) {
    case 'file':
    case 'contiguous-file':
      return 'file';
    case 'directory':
      return 'directory';
    case 'symlink':
      return 'symlink';
    case 'link':
      return 'hardlink';
    default:
      return 'other';
  }
}

function statusOf(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null
    ? (error as { statusCode?: number }).statusCode
    : undefined;
}

/**
 * Reads `root` of a container (running, paused or stopped) into a manifest keyed by relative
 * path. `root` itself is the entry `''`. A root that is a symbolic link is reported as such (its
 * target is not followed).
 */
export async function readContainerTree(
  source: ArchiveSource,
  root: string,
  options: ReadTreeOptions = {},
): Promise<TreeManifest> {
  const maxTreeBytes = options.maxTreeBytes ?? DEFAULT_MAX_TREE_BYTES;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const maxKeptBytes = options.maxKeptBytes ?? DEFAULT_MAX_KEPT_BYTES;
  options.signal?.throwIfAborted();
  let archive: Readable;
  try {
    archive = (await source.getArchive({ path: root })) as unknown as Readable;
  } catch (error) {
    throw new SandboxError({
      message: `Could not read ${root} from the container: ${(error as Error)?.message ?? String(error)}`,
      cause: error,
    });
  }
  const manifest: TreeManifest = new Map();
  const prefix = posix.basename(root);
  let kept = 0;
  let streamed = 0;

  return await new Promise<TreeManifest>((resolve, reject) => {
    const extract = tar.extract({ allowUnknownFormat: false });
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      archive.unpipe?.(extract);
      (archive as { destroy?: (error?: Error) => void }).destroy?.();
      extract.destroy();
      reject(error);
    };
    const onAbort = () => fail(options.signal?.reason ?? new Error('aborted'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();
    archive.on('data', (chunk: Buffer) => {
      streamed += chunk.length;
      if (streamed > maxTreeBytes)
        fail(
          new TreeTooLargeError({
            message: `${root} is larger than ${maxTreeBytes} bytes as an archive`,
            limit: 'maxTreeBytes',
          }),
        );
    });
    archive.on('error', (error: Error) =>
      fail(new SandboxError({ message: `Reading ${root}: ${error.message}`, cause: error })),
    );
    extract.on('entry', (header, stream, next) => {
      const name = header.name.replace(/\/+$/, '');
      const relative =
        name === prefix ? '' : name.startsWith(`${prefix}/`) ? name.slice(prefix.length + 1) : null;
      const type = entryType(header.type);
      if (relative === null || (relative !== '' && options.skip?.(relative))) {
        stream.on('end', next);
        stream.resume();
        return;
      }
      const entry: TreeEntry = {
        path: relative,
        type: type === 'hardlink' ? 'file' : type,
        mode: (header.mode ?? 0) & 0o777,
        size: header.size ?? 0,
      };
      if (type === 'symlink') entry.linkname = header.linkname ?? '';
      if (type === 'hardlink') {
        const target = (header.linkname ?? '').replace(/\/+$/, '');
        const targetPath = target.startsWith(`${prefix}/`) ? target.slice(prefix.length + 1) : target;
        const original = manifest.get(targetPath);
        entry.hardLinkTo = targetPath;
        if (original) {
          entry.size = original.size;
          if (original.sha256) entry.sha256 = original.sha256;
          if (original.content) entry.content = original.content;
          if (original.oversize) entry.oversize = true;
        }
        manifest.set(relative, entry);
        stream.on('end', next);
        stream.resume();
        return;
      }
      if (type !== 'file') {
        manifest.set(relative, entry);
        stream.on('end', next);
        stream.resume();
        return;
      }
      const hash = createHash('sha256');
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        size += chunk.length;
        if (size <= maxFileBytes) chunks.push(chunk);
        else chunks.length = 0;
      });
      stream.on('end', () => {
        entry.size = size;
        entry.sha256 = hash.digest('hex');
        if (size > maxFileBytes) entry.oversize = true;
        if (!entry.oversize && options.keep?.(entry)) {
          kept += size;
          if (kept > maxKeptBytes) {
            fail(
              new TreeTooLargeError({
                message: `the changed files of ${root} hold more than ${maxKeptBytes} bytes`,
                limit: 'maxChangeBytes',
              }),
            );
            return;
          }
          entry.content = Buffer.concat(chunks);
        }
        manifest.set(relative, entry);
        next();
      });
      stream.on('error', (error: Error) => fail(error));
    });
    extract.on('finish', () => {
      options.signal?.removeEventListener('abort', onAbort);
      if (!failed) resolve(manifest);
    });
    extract.on('error', (error: Error) =>
      fail(
        new SandboxError({ message: `Reading ${root}: malformed archive: ${error.message}`, cause: error }),
      ),
    );
    archive.pipe(extract);
  });
}

/**
 * Reads one regular file of a container through the archive API (symbolic links are not
 * followed: a link reads as undefined). Undefined when the path does not exist.
 */
export async function readContainerFile(
  source: ArchiveSource,
  path: string,
  options: { maxBytes?: number; signal?: AbortSignal } = {},
): Promise<Buffer | undefined> {
  let manifest: TreeManifest;
  try {
    manifest = await readContainerTree(source, path, {
      keep: () => true,
      maxFileBytes: options.maxBytes ?? DEFAULT_MAX_FILE_BYTES,
      ...(options.maxBytes !== undefined ? { maxKeptBytes: options.maxBytes } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    if (statusOf(cause) === 404 || statusOf(error) === 404) return undefined;
    throw error;
  }
  const entry = manifest.get('');
  return entry?.type === 'file' ? entry.content : undefined;
}
