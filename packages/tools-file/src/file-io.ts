// Reading and writing whole files inside a sandbox, each in ONE shell script that resolves and
// confines the path and then uses it (no check-then-use gap). Writes go to a temporary file
// beside the target and are renamed over it, so a reader never sees half a file.
import { randomUUID } from 'node:crypto';
import type { SandboxV1 } from '@shears/core';
import { FileToolError } from './file-tool-error.js';
import { inSubshell, readFields, shellQuote } from './shell.js';
import {
  normalizeToolPath,
  parseResolved,
  REPORT_RESOLVED,
  type ResolvedPath,
  resolveScript,
} from './workspace.js';

const CONTENT_MARKER = '@@SHEARS-FILE-CONTENT@@';

/**
 * Content longer than this (bytes) is not sent through `exec`'s stdout, which sandboxes cap
 * (@shears/tools-terminal keeps 1,000,000 bytes and cuts out the middle): the script copies it to
 * a fresh file in the sandbox temp dir and it is fetched with `sandbox.readFile`, byte-exact.
 */
export const INLINE_READ_BYTES = 256 * 1024;

export interface FileIoOptions {
  confine: boolean;
  signal?: AbortSignal;
  /** Directories outside the workspace that may be read too (read_file only). */
  extraRoots?: readonly string[];
}

export interface ReadRawResult {
  resolved: ResolvedPath;
  /** Size in bytes (files only). */
  size: number;
  /** Whole content when the file is at most `wholeLimit` bytes, else the requested line range. */
  content: string | undefined;
  /** Whether `content` holds the whole file or just lines `range`. */
  mode: 'whole' | 'range' | 'none';
  /** Line count per `wc -l` (range mode). */
  lineCount: number;
  /** Directory listing of the missing file's parent (for "did you mean"). */
  siblings: string[];
  /** Whether the bytes behind `content` are valid UTF-8 (invalid bytes show as U+FFFD). */
  validUtf8: boolean;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const lenientUtf8 = new TextDecoder('utf-8');

/**
 * Resolves `path` and reads it. Files up to `wholeLimit` bytes come back whole; bigger ones
 * only for lines `range` (1-based, inclusive), via `sed`. Content is never silently cut: the
 * script reports its byte count, large content travels through a temp file and
 * `sandbox.readFile`, and inline content whose byte count does not match is fetched again that way.
 */
export async function readRaw(
  sandbox: SandboxV1,
  path: string,
  options: FileIoOptions & { wholeLimit: number; range?: [number, number] },
): Promise<ReadRawResult> {
  const first = await readOnce(sandbox, path, options, INLINE_READ_BYTES);
  if (first.exact || first.result.content === undefined) return first.result;
  // The inline bytes did not add up: invalid UTF-8 (decoded with U+FFFD) or output the sandbox
  // cut. Fetch the exact bytes through a temp file to tell which.
  const second = await readOnce(sandbox, path, options, -1);
  if (!second.exact) {
    throw new FileToolError(
      `Cannot read ${path}: the sandbox returned ${second.received} of ${second.expected} bytes (its output limit cut the content) and the content could not be copied to the sandbox temp dir (${sandbox.tempDir})`,
      { path },
    );
  }
  return second.result;
}

async function readOnce(
  sandbox: SandboxV1,
  path: string,
  options: FileIoOptions & { wholeLimit: number; range?: [number, number] },
  inlineLimit: number,
): Promise<{ result: ReadRawResult; exact: boolean; expected: number; received: number }> {
  const absolute = normalizeToolPath(path, sandbox.workdir, {
    confine: options.confine,
    extraRoots: options.extraRoots,
  });
  const [from, to] = options.range ?? [1, 1];
  const page = `sed -n '${from},${to}p;${to}q' "$full"`;
  const tempDir = sandbox.tempDir.replace(/\/+$/, '') || '/';
  const script = `${resolveScript(absolute, sandbox.workdir, options.confine, options.extraRoots)}${REPORT_RESOLVED}
if [ "$t" = file ]; then
  size=$(wc -c < "$full" | tr -d ' ')
  printf 'SIZE:%s\\n' "$size"
  if [ "$size" -le ${Math.floor(options.wholeLimit)} ]; then
    mode=whole; bytes=$size
  else
    mode=range
    printf 'LINES:%s\\n' "$(wc -l < "$full" | tr -d ' ')"
    bytes=$(${page} | wc -c | tr -d ' ')
  fi
  printf 'MODE:%s\\nBYTES:%s\\n' "$mode" "$bytes"
  spill=
  if [ "$bytes" -gt ${Math.floor(inlineLimit)} ]; then
    spill=$(mktemp ${shellQuote(`${tempDir}/.shears-read.`)}XXXXXX 2>/dev/null) || spill=
    if [ -n "$spill" ]; then
      if [ "$mode" = whole ]; then cat "$full" > "$spill"; else ${page} > "$spill"; fi
      printf 'SPILL:%s\\n' "$spill"
    fi
  fi
  printf '%s\\n' ${shellQuote(CONTENT_MARKER)}
  if [ -z "$spill" ]; then
    if [ "$mode" = whole ]; then cat "$full"; else ${page}; fi
  fi
elif [ "$t" = missing ] && [ "$pdir" = 1 ]; then
  printf 'MODE:none\\n%s\\n' ${shellQuote(CONTENT_MARKER)}
  ls -1a "\${full%/*}" 2>/dev/null | head -n 50
fi
`;
  const result = await sandbox.exec(inSubshell(script), { signal: options.signal });
  const stdout = result.stdout;
  const markerAt = stdout.indexOf(`${CONTENT_MARKER}\n`);
  const head = markerAt >= 0 ? stdout.slice(0, markerAt) : stdout;
  let body = markerAt >= 0 ? stdout.slice(markerAt + CONTENT_MARKER.length + 1) : undefined;
  const fields = readFields(head);
  const resolved = parseResolved(path, fields);
  const mode = (fields.get('MODE') ?? 'none') as ReadRawResult['mode'];
  if (resolved.type === 'file' && body === undefined) {
    throw new FileToolError(
      `Failed to read ${path}: ${result.stderr.trim() || `exit code ${result.exitCode}`}`,
      { path },
    );
  }
  const expected = Number(fields.get('BYTES') ?? 0);
  let received = body === undefined ? 0 : Buffer.byteLength(body, 'utf8');
  let exact = true;
  let validUtf8 = true;
  const spill = fields.get('SPILL');
  if (spill) {
    let bytes: Uint8Array;
    try {
      bytes = await sandbox.readFile(spill, { signal: options.signal });
    } finally {
      await sandbox.exec(`rm -f ${shellQuote(spill)}`, { signal: options.signal }).catch(() => undefined);
    }
    received = bytes.byteLength;
    try {
      body = strictUtf8.decode(bytes);
    } catch {
      body = lenientUtf8.decode(bytes);
      validUtf8 = false;
    }
  } else if (mode !== 'none' && body !== undefined) {
    // Decoding never shrinks bytes (each invalid sequence becomes a 3-byte U+FFFD), so equal
    // counts without U+FFFD mean the content arrived whole and is valid UTF-8.
    exact = received === expected && !body.includes('\ufffd');
    validUtf8 = exact;
  }
  return {
    result: {
      resolved,
      size: Number(fields.get('SIZE') ?? 0),
      content: mode === 'none' ? undefined : body,
      mode,
      lineCount: Number(fields.get('LINES') ?? 0),
      siblings:
        mode === 'none' && body
          ? body.split('\n').filter((name) => name && name !== '.' && name !== '..')
          : [],
      validUtf8,
    },
    exact,
    expected,
    received,
  };
}

/** Reads a whole text file (for patch); refuses files that are not valid UTF-8. */
export async function readText(
  sandbox: SandboxV1,
  path: string,
  options: FileIoOptions & { maxBytes: number },
): Promise<string> {
  const read = await readRaw(sandbox, path, { ...options, wholeLimit: options.maxBytes });
  if (read.resolved.type === 'missing') throw new FileToolError(`File not found: ${path}`, { path });
  if (read.resolved.type === 'dir')
    throw new FileToolError(`Cannot patch ${path}: it is a directory`, { path });
  if (read.resolved.type !== 'file')
    throw new FileToolError(`Cannot patch ${path}: it is not a regular file`, { path });
  if (read.mode !== 'whole' || read.content === undefined) {
    throw new FileToolError(
      `Cannot patch ${path}: the file is ${read.size} bytes (the limit is ${options.maxBytes})`,
      { path },
    );
  }
  if (!read.validUtf8 || read.content.includes('\0')) {
    throw new FileToolError(`Cannot patch ${path}: it is not UTF-8 text`, { path });
  }
  return read.content;
}

export interface WriteResult {
  real: string;
  bytesWritten: number;
  dirsCreated: boolean;
}

/**
 * Creates parent directories and atomically replaces `path` with `content`. The bytes are
 * uploaded with `sandbox.writeFile` into the sandbox's own temp dir (fast on every backend,
 * unlike large stdin), then ONE script resolves and confines the path, copies the upload into a
 * fresh `mktemp` file next to the target (never a predictable name a planted symlink could
 * redirect) and renames it over the target. New files get the mode the umask gives (mktemp
 * makes 0600).
 */
export async function writeAtomic(
  sandbox: SandboxV1,
  path: string,
  content: string | Uint8Array,
  options: FileIoOptions,
): Promise<WriteResult> {
  const absolute = normalizeToolPath(path, sandbox.workdir, { confine: options.confine });
  const upload = `${sandbox.tempDir.replace(/\/+$/, '')}/shears-upload-${randomUUID()}`;
  await sandbox.writeFile(upload, content, { signal: options.signal });
  const script = `${resolveScript(absolute, sandbox.workdir, options.confine)}
[ "$t" = dir ] && { printf 'STATUS:isdir\\n'; exit 0; }
[ "$t" = other ] && { printf 'STATUS:notregular\\n'; exit 0; }
[ "$pdir" = 1 ] || { printf 'STATUS:notdir\\n'; exit 0; }
d="\${full%/*}"; [ -n "$d" ] || d=/
created=0
if [ ! -d "$d" ]; then mkdir -p "$d" 2>/dev/null || { printf 'STATUS:mkdirfailed\\n'; exit 0; }; created=1; fi
tmp=$(mktemp "$d/.shears-write.XXXXXX" 2>/dev/null) || { printf 'STATUS:writefailed\\n'; exit 0; }
cat "$upload" > "$tmp" 2>/dev/null || { rm -f "$tmp"; printf 'STATUS:writefailed\\n'; exit 0; }
if [ -f "$full" ]; then mode=$(stat -c %a "$full" 2>/dev/null) || mode=644
else mode=$(printf '%o' $(( 0666 & ~0$(umask) )))
fi
chmod "$mode" "$tmp" 2>/dev/null
mv -f "$tmp" "$full" 2>/dev/null || { rm -f "$tmp"; printf 'STATUS:writefailed\\n'; exit 0; }
printf 'STATUS:ok\\nTYPE:file\\nWS:%s\\nBYTES:%s\\nCREATED:%s\\nREAL:%s\\n' "$ws" "$(wc -c < "$full" | tr -d ' ')" "$created" "$full"
`;
  const result = await sandbox.exec(
    inSubshell(`upload=${shellQuote(upload)}\n${script}`, `rm -f ${shellQuote(upload)}`),
    {
      signal: options.signal,
    },
  );
  const fields = readFields(result.stdout);
  const status = fields.get('STATUS');
  const reason: Record<string, string> = {
    isdir: `Cannot write ${path}: it is a directory`,
    notregular: `Cannot write ${path}: it exists and is not a regular file`,
    notdir: `Cannot write ${path}: a parent path is a file, not a directory`,
    mkdirfailed: `Cannot write ${path}: could not create its parent directories (permission denied?)`,
    writefailed: `Cannot write ${path}: permission denied or the disk is full`,
  };
  if (status && reason[status]) throw new FileToolError(reason[status], { path });
  parseResolved(path, fields);
  return {
    real: fields.get('REAL') ?? '',
    bytesWritten: Number(fields.get('BYTES') ?? 0),
    dirsCreated: fields.get('CREATED') === '1',
  };
}

/** Deletes a regular file (never a directory). */
export async function deleteFile(sandbox: SandboxV1, path: string, options: FileIoOptions): Promise<void> {
  const absolute = normalizeToolPath(path, sandbox.workdir, { confine: options.confine });
  const script = `${resolveScript(absolute, sandbox.workdir, options.confine)}
[ "$t" = file ] || { printf 'STATUS:notfile\\n'; exit 0; }
rm -f "$full" 2>/dev/null || { printf 'STATUS:rmfailed\\n'; exit 0; }
${REPORT_RESOLVED}
`;
  const result = await sandbox.exec(inSubshell(script), { signal: options.signal });
  const fields = readFields(result.stdout);
  if (fields.get('STATUS') === 'notfile')
    throw new FileToolError(`Cannot delete ${path}: it is not an existing regular file`, { path });
  if (fields.get('STATUS') === 'rmfailed')
    throw new FileToolError(`Cannot delete ${path}: permission denied`, { path });
  parseResolved(path, fields);
}
