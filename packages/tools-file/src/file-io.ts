// Reading and writing files inside a sandbox, each in ONE confined script (confined.ts) that walks
// the path race-free, opens the file on a descriptor, checks it, and only then reads or writes.
// Writes go to a fresh file beside the target, created with O_EXCL (`set -C`), and are renamed
// over it with `mv -T`, so a reader never sees half a file and no planted symlink is written
// through.
import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import {
  newMarker,
  type PathPlan,
  pinFileToolRoots,
  runConfined,
  sha256Hex,
  throwWalkFailure,
  walkArguments,
  walkFunction,
} from './confined.js';
import { FileToolError } from './file-tool-error.js';
import { readFields, shellQuote } from './shell.js';
import { planPath, type ResolvedPath } from './workspace.js';

/**
 * Content longer than this (bytes) is not sent through `exec`'s stdout, which sandboxes cap
 * (@shears/tools-terminal keeps 1,000,000 bytes and cuts out the middle): the script copies it to
 * a fresh file in the pinned sandbox temp dir and it is fetched with `sandbox.readFile`, then
 * checked against the SHA-256 the script computed from the open file.
 */
const INLINE_READ_BYTES = 256 * 1024;
/** Most bytes of line content one read_file call brings back. */
const MAX_READ_OUTPUT_BYTES = 512 * 1024;
/**
 * Text up to this size (bytes) is written from inside the script (no upload); bigger content is
 * uploaded with `sandbox.writeFile` into the pinned temp dir and checked by SHA-256.
 */
const INLINE_WRITE_BYTES = 16 * 1024;

interface FileIoOptions {
  confine: boolean;
  signal?: AbortSignal;
  /** Directories outside the workspace that may be read too (read_file only). */
  extraRoots?: readonly string[];
  /** Time limit of one sandbox call. */
  timeoutMs: number;
}

/**
 * Shell run after `walk` succeeded and the final component is known to be there: refuses what is
 * not a regular file, opens it on fd 3, and checks (one `stat` of the name and the root, one of
 * the descriptor) that the descriptor is the file named in the checked directory, that the
 * directory is still under the pinned root, and that the file has one link. Prints
 * `STATUS:other` (with `KIND`), `STATUS:dir`, `STATUS:raced` or `STATUS:hardlink` and exits
 * otherwise; on success `$size` holds the size.
 */
const OPEN_CHECKED = (marker: string) => `if [ -n "$c" ] && [ ! -e "$c" ] && [ ! -L "$c" ]; then
  inroot || { printf 'STATUS:raced\\n'; exit 0; }
  printf 'STATUS:ok\\nTYPE:missing\\nPDIR:1\\nREAL:%s\\n%s\\n' "$(real)" ${shellQuote(marker)}
  ls -1a . 2>/dev/null | head -n 50; exit 0
fi
if [ -z "$c" ] || { [ -d "$c" ] && [ ! -L "$c" ]; }; then inroot || { printf 'STATUS:raced\\n'; exit 0; }; printf 'STATUS:ok\\nTYPE:dir\\nREAL:%s\\n' "$(real)"; exit 0; fi
if [ ! -f "$c" ]; then
  inroot || { printf 'STATUS:raced\\n'; exit 0; }
  k=special; [ -p "$c" ] && k=fifo; [ -c "$c" ] && k=chardev; [ -b "$c" ] && k=blockdev; [ -S "$c" ] && k=socket
  printf 'STATUS:ok\\nTYPE:other\\nKIND:%s\\nREAL:%s\\n' "$k" "$(real)"; exit 0
fi
exec 3< "$c" || { printf 'STATUS:openfailed\\n'; exit 0; }
set -- $(stat -c '%d:%i %h %f' -- "$ups" "$c" 2>/dev/null) $(stat -L -c '%d:%i %h %f %s' /proc/self/fd/3 2>/dev/null)
[ $# = 10 ] || { printf 'STATUS:nostat\\n'; exit 0; }
[ "$1" = "$RID" ] && [ "$4" = "$7" ] || { printf 'STATUS:raced\\n'; exit 0; }
case $6 in 8???) ;; *) printf 'STATUS:raced\\n'; exit 0 ;; esac
[ "$8" = 1 ] || { printf 'STATUS:hardlink\\nLINKS:%s\\n' "$8"; exit 0; }
size=\${10}
`;

/** The outcome of walking to a path for reading, before any content. */
interface ReadHead {
  resolved: ResolvedPath;
  /** `fifo`, `chardev`, `blockdev`, `socket` for type `other`. */
  kind?: string;
  /** Names in the missing file's directory (for "did you mean"). */
  siblings: string[];
}

function headFrom(plan: PathPlan, fields: Map<string, string>, body: string | undefined): ReadHead {
  const status = fields.get('STATUS');
  if (status !== 'ok') throwWalkFailure(plan, fields);
  const type = (fields.get('TYPE') ?? 'missing') as ResolvedPath['type'];
  return {
    resolved: {
      requested: plan.requested,
      real: fields.get('REAL') ?? plan.absolute,
      workspace: plan.walk.shownWorkspace,
      type,
      parentIsDirectory: fields.get('PDIR') !== '0',
    },
    kind: fields.get('KIND'),
    siblings:
      type === 'missing' && body
        ? body.split('\n').filter((name) => name && name !== '.' && name !== '..')
        : [],
  };
}

/** Shell for a walk that stopped at a missing or non-directory component on the way. */
const MISSING_ON_THE_WAY = `if [ "$why" = missing ]; then printf 'STATUS:ok\\nTYPE:missing\\nPDIR:1\\nREAL:%s/%s\\n' "\${cur%/}" "$c"; exit 0; fi
if [ "$why" = notdir ]; then printf 'STATUS:ok\\nTYPE:missing\\nPDIR:0\\nREAL:%s/%s\\n' "\${cur%/}" "$c"; exit 0; fi
walkfail`;

interface ReadLinesResult extends ReadHead {
  /** Size in bytes (files only). */
  size: number;
  /** Lines of the file (a final line without a newline counts), within the scanned bytes. */
  lineCount: number;
  /** The file is bigger than `maxScanBytes`: only its first part was scanned. */
  partial: boolean;
  /** The first bytes of the file (binary detection). */
  sample: string;
  /** Lines `range` (each cut to `lineBytes`), or undefined when the path is not a file. */
  content: string | undefined;
  /** The content was cut at MAX_READ_OUTPUT_BYTES. */
  contentCut: boolean;
}

/**
 * Walks to `path` and reads lines `range` (1-based, inclusive) of it, each cut to `lineBytes`
 * bytes, from at most the first `maxScanBytes` bytes of the file: what is read is bounded by the
 * request, never by the file (a 2 GB file without a newline costs `maxScanBytes` at most).
 */
export async function readLines(
  sandbox: SandboxV1,
  path: string,
  options: FileIoOptions & { range: [number, number]; maxScanBytes: number; lineBytes: number },
): Promise<ReadLinesResult> {
  const plan = await planPath(sandbox, path, options);
  const [from, to] = options.range;
  const scan = Math.floor(options.maxScanBytes);
  const sampleMarker = newMarker();
  const bodyMarker = newMarker();
  const script = `${walkFunction(plan.walk)}
walk ${walkArguments(plan.components)} || {
${MISSING_ON_THE_WAY}
}
${OPEN_CHECKED(sampleMarker)}
printf 'STATUS:ok\\nTYPE:file\\nSIZE:%s\\nREAL:%s\\n' "$size" "$(real)"
if [ "$size" -gt ${scan} ]; then
  src="head -c ${scan} /proc/self/fd/3 |"; n=$(( $(head -c ${scan} /proc/self/fd/3 | wc -l) )); printf 'PARTIAL:1\\n'
else
  src=; n=$(( $(wc -l < /proc/self/fd/3) ))
  [ "$size" -gt 0 ] && [ -n "$(tail -c 1 /proc/self/fd/3)" ] && n=$((n + 1))
fi
printf 'LINES:%s\\n%s\\n' "$n" ${shellQuote(sampleMarker)}
head -c 1000 /proc/self/fd/3
printf '\\n%s\\n' ${shellQuote(bodyMarker)}
eval "$src sed -n '${from},${to}p;${to}q'" < /proc/self/fd/3 | cut -b 1-${Math.floor(options.lineBytes)} | head -c ${MAX_READ_OUTPUT_BYTES}
`;
  const stdout = await runConfined(sandbox, script, { ...options, what: `read_file ${path}` });
  const sampleAt = stdout.indexOf(`${sampleMarker}\n`);
  const fields = readFields(sampleAt >= 0 ? stdout.slice(0, sampleAt) : stdout);
  const afterSample = sampleAt >= 0 ? stdout.slice(sampleAt + sampleMarker.length + 1) : '';
  const bodyAt = afterSample.indexOf(`\n${bodyMarker}\n`);
  const head = headFrom(plan, fields, bodyAt >= 0 ? undefined : afterSample);
  if (head.resolved.type !== 'file')
    return {
      ...head,
      size: 0,
      lineCount: 0,
      partial: false,
      sample: '',
      content: undefined,
      contentCut: false,
    };
  if (bodyAt < 0) {
    throw new FileToolError(`Failed to read ${path}: the sandbox's answer was cut or malformed`, { path });
  }
  const content = afterSample.slice(bodyAt + bodyMarker.length + 2);
  if (content.includes('\n\n... [OUTPUT TRUNCATED - ')) {
    throw new FileToolError(
      `Cannot read ${path}: the sandbox's output limit cut the lines; use a smaller limit`,
      { path },
    );
  }
  return {
    ...head,
    size: Number(fields.get('SIZE') ?? 0),
    lineCount: Number(fields.get('LINES') ?? 0),
    partial: fields.get('PARTIAL') === '1',
    sample: afterSample.slice(0, bodyAt),
    content,
    contentCut: Buffer.byteLength(content, 'utf8') >= MAX_READ_OUTPUT_BYTES - 4,
  };
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a whole text file (for patch), byte-exact, refusing files over `maxBytes` and files that
 * are not valid UTF-8. Small files come through stdout; bigger ones through a spill file in the
 * pinned temp dir, checked against the SHA-256 of what the script copied from the open file.
 */
export async function readText(
  sandbox: SandboxV1,
  path: string,
  options: FileIoOptions & { maxBytes: number; what?: string },
  inlineLimit = INLINE_READ_BYTES,
): Promise<string> {
  const what = options.what ?? 'patch';
  const plan = await planPath(sandbox, path, options);
  const roots = plan.walk;
  const { temp: tempRoot } = await pinFileToolRoots(sandbox);
  const marker = newMarker();
  const spillName = `.shears-read.${randomUUID()}`;
  const script = `${walkFunction(roots)}
walk ${walkArguments(plan.components)} || {
${MISSING_ON_THE_WAY}
}
${OPEN_CHECKED(marker)}
if [ "$size" -gt ${Math.floor(options.maxBytes)} ]; then printf 'STATUS:ok\\nTYPE:file\\nTOOBIG:1\\nSIZE:%s\\n' "$size"; exit 0; fi
printf 'STATUS:ok\\nTYPE:file\\nSIZE:%s\\nREAL:%s\\n' "$size" "$(real)"
if [ "$size" -le ${inlineLimit} ]; then printf '%s\\n' ${shellQuote(marker)}; cat /proc/self/fd/3; exit 0; fi
cd -P -- ${shellQuote(tempRoot.path)} 2>/dev/null && [ "$(stat -c %d:%i .)" = ${shellQuote(tempRoot.id)} ] || { printf 'SPILL:tempraced\\n'; exit 0; }
set -C
exec 5> ${shellQuote(spillName)} || { printf 'SPILL:failed\\n'; exit 0; }
set +C
head -c "$size" /proc/self/fd/3 >&5 || { rm -f -- ${shellQuote(spillName)}; printf 'SPILL:failed\\n'; exit 0; }
h=$(sha256sum /proc/self/fd/5 2>/dev/null) || { rm -f -- ${shellQuote(spillName)}; printf 'SPILL:nohash\\n'; exit 0; }
printf 'SPILL:ok\\nHASH:%s\\n' "\${h%% *}"
`;
  const stdout = await runConfined(sandbox, script, { ...options, what: `${what} ${path}` });
  const markerAt = stdout.indexOf(`${marker}\n`);
  const fields = readFields(markerAt >= 0 ? stdout.slice(0, markerAt) : stdout);
  const head = headFrom(plan, fields, undefined);
  const type = head.resolved.type;
  if (type === 'missing') throw new FileToolError(`File not found: ${path}`, { path });
  if (type === 'dir') throw new FileToolError(`Cannot ${what} ${path}: it is a directory`, { path });
  if (type !== 'file')
    throw new FileToolError(
      `Cannot ${what} ${path}: it is not a regular file${head.kind ? ` (a ${kindName(head.kind)})` : ''}`,
      { path },
    );
  const size = Number(fields.get('SIZE') ?? 0);
  if (fields.get('TOOBIG') === '1')
    throw new FileToolError(
      `Cannot ${what} ${path}: the file is ${size} bytes (the limit is ${options.maxBytes})`,
      {
        path,
      },
    );
  let text: string;
  if (markerAt >= 0) {
    text = stdout.slice(markerAt + marker.length + 1);
    // Not UTF-8 (decoded with U+FFFD) or cut by the sandbox's output cap: fetch the exact bytes.
    if (Buffer.byteLength(text, 'utf8') !== size || text.includes('\ufffd'))
      return readText(sandbox, path, options, -1);
  } else {
    const spill = fields.get('SPILL');
    if (spill === 'tempraced') throwWalkFailure(plan, new Map([['STATUS', 'tempraced']]));
    if (spill !== 'ok')
      throw new FileToolError(
        `Cannot ${what} ${path}: the file could not be copied to the sandbox temp dir (${spill ?? 'no answer'})`,
        { path },
      );
    const spillPath = posix.join(tempRoot.path, spillName);
    let bytes: Uint8Array;
    try {
      bytes = await sandbox.readFile(spillPath, { signal: options.signal });
    } finally {
      await removeTempFile(sandbox, spillName, options).catch(() => undefined);
    }
    if (sha256Hex(bytes) !== fields.get('HASH')) {
      throw new FileToolError(
        `Cannot ${what} ${path}: the copy fetched from the sandbox temp dir is not what was read (the temp dir was tampered with); nothing was changed`,
        { path, code: 'SHEARS_PATH_RACED' },
      );
    }
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      throw new FileToolError(`Cannot ${what} ${path}: it is not UTF-8 text`, { path });
    }
  }
  if (text.includes('\0')) throw new FileToolError(`Cannot ${what} ${path}: it is not UTF-8 text`, { path });
  return text;
}

/** Human name of a non-regular file kind. */
export function kindName(kind: string): string {
  return (
    { fifo: 'FIFO', chardev: 'character device', blockdev: 'block device', socket: 'socket' }[kind] ??
    'special file'
  );
}

/** Removes a file the tools made in the pinned temp dir (by name, inside that directory). */
async function removeTempFile(sandbox: SandboxV1, name: string, options: FileIoOptions): Promise<void> {
  const { temp } = await pinFileToolRoots(sandbox);
  await runConfined(
    sandbox,
    `cd -P -- ${shellQuote(temp.path)} 2>/dev/null && [ "$(stat -c %d:%i .)" = ${shellQuote(temp.id)} ] && rm -f -- ${shellQuote(name)}`,
    { ...options, what: 'Cleaning up' },
  );
}

interface WriteResult {
  real: string;
  bytesWritten: number;
  dirsCreated: boolean;
}

/**
 * Creates parent directories and atomically replaces `path` with `content`. The bytes are
 * uploaded with `sandbox.writeFile` into the pinned temp dir (checked first: a temp dir replaced
 * by a symlink is refused), then ONE script walks to the target's directory, opens the upload,
 * checks its SHA-256 (so an upload redirected elsewhere is never copied), copies it into a fresh
 * O_EXCL file beside the target and renames that over the target (`mv -T`). New files get the
 * mode the umask gives; a replaced file keeps its mode.
 */
export async function writeAtomic(
  sandbox: SandboxV1,
  path: string,
  content: string | Uint8Array,
  options: FileIoOptions,
): Promise<WriteResult> {
  const plan = await planPath(sandbox, path, { confine: options.confine, signal: options.signal });
  const { temp } = await pinFileToolRoots(sandbox);
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  const text = typeof content === 'string' ? content : undefined;
  const tmpName = `.shears-write.${randomUUID()}`;
  // Small text travels inside the script itself: nothing is uploaded, nothing can redirect it.
  const inline = text !== undefined && bytes.byteLength <= INLINE_WRITE_BYTES && !text.includes('\0');
  const hash = sha256Hex(bytes);
  const uploadName = `shears-upload-${randomUUID()}`;
  const upload = posix.join(temp.path, uploadName);
  if (!inline) {
    // The temp dir must still be the pinned one before anything is uploaded into it.
    const check = await runConfined(
      sandbox,
      `cd -P -- ${shellQuote(temp.path)} 2>/dev/null && [ "$(stat -c %d:%i .)" = ${shellQuote(temp.id)} ] && printf 'STATUS:ok\\n'`,
      { ...options, what: `write_file ${path}` },
    );
    if (!check.includes('STATUS:ok\n')) throwWalkFailure(plan, new Map([['STATUS', 'tempraced']]));
    await sandbox.writeFile(upload, bytes, { signal: options.signal });
  }
  const fill = inline
    ? `printf '%s' ${shellQuote(text!)} >&5 || { rm -f -- ${shellQuote(tmpName)}; printf 'STATUS:writefailed\\n'; exit 0; }`
    : `cat /proc/self/fd/4 >&5 || { rm -f -- ${shellQuote(tmpName)}; printf 'STATUS:writefailed\\n'; exit 0; }
h=$(sha256sum /proc/self/fd/5 2>/dev/null)
[ "\${h%% *}" = ${shellQuote(hash)} ] || { rm -f -- ${shellQuote(tmpName)}; printf 'STATUS:tempraced\\n'; exit 0; }`;
  const openUpload = inline
    ? ''
    : `exec 4< ${shellQuote(upload)} || { printf 'STATUS:writefailed\\n'; exit 0; }
h=$(sha256sum /proc/self/fd/4 2>/dev/null) || { printf 'STATUS:nohash\\n'; exit 0; }
[ "\${h%% *}" = ${shellQuote(hash)} ] || { printf 'STATUS:tempraced\\n'; exit 0; }`;
  // The upload is removed from inside the pinned temp dir, whatever happens to the write.
  const cleanup = inline
    ? ''
    : `(cd -P -- ${shellQuote(temp.path)} 2>/dev/null && [ "$(stat -c %d:%i .)" = ${shellQuote(temp.id)} ] && rm -f -- ${shellQuote(uploadName)})`;
  const script = `${walkFunction(plan.walk)}
create=1
trap ${shellQuote(cleanup || ':')} EXIT
walk ${walkArguments(plan.components)} || walkfail
[ -n "$c" ] || { printf 'STATUS:isdir\\n'; exit 0; }
if [ -d "$c" ] && [ ! -L "$c" ]; then printf 'STATUS:isdir\\n'; exit 0; fi
if [ -e "$c" ] && [ ! -f "$c" ]; then printf 'STATUS:notregular\\n'; exit 0; fi
inroot || { printf 'STATUS:raced\\n'; exit 0; }
${openUpload}
set -C
exec 5> ${shellQuote(tmpName)} || { printf 'STATUS:writefailed\\n'; exit 0; }
set +C
${fill}
if [ -f "$c" ] && [ ! -L "$c" ]; then mode=$(stat -c %a -- "$c" 2>/dev/null) || mode=644
else mode=$(printf '%o' $(( 0666 & ~0$(umask) )))
fi
chmod "$mode" /proc/self/fd/5 2>/dev/null
mv -f -T -- ${shellQuote(tmpName)} "$c" 2>/dev/null || { rm -f -- ${shellQuote(tmpName)}; printf 'STATUS:writefailed\\n'; exit 0; }
printf 'STATUS:ok\\nBYTES:%s\\nCREATED:%s\\nREAL:%s\\n' "$(stat -L -c %s /proc/self/fd/5)" "$made" "$(real)"
`;
  let stdout: string;
  try {
    stdout = await runConfined(sandbox, script, { ...options, what: `write_file ${path}` });
  } catch (error) {
    if (!inline) await removeTempFile(sandbox, uploadName, options).catch(() => undefined);
    throw error;
  }
  const fields = readFields(stdout);
  const status = fields.get('STATUS');
  const reason: Record<string, string> = {
    isdir: `Cannot write ${path}: it is a directory`,
    notregular: `Cannot write ${path}: it exists and is not a regular file`,
    writefailed: `Cannot write ${path}: permission denied or the disk is full`,
    nohash: 'The sandbox has no sha256sum; write_file needs it to check the uploaded bytes',
  };
  if (status && reason[status]) throw new FileToolError(reason[status], { path });
  if (status !== 'ok') throwWalkFailure(plan, fields);
  return {
    real: fields.get('REAL') ?? '',
    bytesWritten: Number(fields.get('BYTES') ?? 0),
    dirsCreated: fields.get('CREATED') === '1',
  };
}

/** Deletes a regular file (never a directory, never through a symlink's target). */
export async function deleteFile(sandbox: SandboxV1, path: string, options: FileIoOptions): Promise<void> {
  const plan = await planPath(sandbox, path, { confine: options.confine, signal: options.signal });
  const script = `${walkFunction(plan.walk)}
walk ${walkArguments(plan.components)} || walkfail
[ -n "$c" ] && [ -f "$c" ] && [ ! -L "$c" ] || { printf 'STATUS:notfile\\n'; exit 0; }
inroot || { printf 'STATUS:raced\\n'; exit 0; }
rm -f -- "$c" 2>/dev/null || { printf 'STATUS:rmfailed\\n'; exit 0; }
printf 'STATUS:ok\\n'
`;
  const fields = readFields(await runConfined(sandbox, script, { ...options, what: `patch ${path}` }));
  if (fields.get('STATUS') === 'notfile')
    throw new FileToolError(`Cannot delete ${path}: it is not an existing regular file`, { path });
  if (fields.get('STATUS') === 'rmfailed')
    throw new FileToolError(`Cannot delete ${path}: permission denied`, { path });
  if (fields.get('STATUS') !== 'ok') throwWalkFailure(plan, fields);
}
