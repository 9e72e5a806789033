// The JSONL trajectory sink: one ScoredGroupRecord per line, appended; a file that is not to be
// overwritten (mode `new`), replaced or appended to; a resumed run's kept groups written first
// through a temporary file renamed into place. And the reader that validates a file line by line
// and names the first bad line.
import { existsSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SinkOpenOptions, TrajectorySinkV1 } from './contracts/sink.js';
import {
  AbortedError,
  InvalidArgumentError,
  type JsonParseError,
  ShearsError,
  throwIfAborted,
} from './errors.js';
import { safeParseJson } from './json.js';
import { err, ok, type SafeResult } from './result.js';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from './schemas/group-record.js';

export interface JsonlSinkSettings {
  /** File to write; parent directories are created when it is opened. */
  path: string;
  /**
   * What an existing file gets: `append` (default) adds to it; `replace` truncates it; `new`
   * refuses it (the file must not exist when the sink opens, and one that received no group is
   * removed on close, so a run that failed before its first group leaves nothing behind).
   */
  mode?: 'append' | 'new' | 'replace';
  /** Validate each record against the schema before writing (default true). */
  validate?: boolean;
}

export interface JsonlSink extends TrajectorySinkV1 {
  readonly path: string;
  /** Records written so far (kept ones of a resumed run included). */
  readonly written: number;
}

/** A JSONL sink in mode `new` found its file already there (InvalidArgumentError, its cause EEXIST). */
function fileExists(path: string, cause: unknown): InvalidArgumentError {
  return new InvalidArgumentError({
    argument: 'path',
    value: path,
    message: `${path} already exists; a JSONL sink in mode "new" never overwrites a file`,
    cause,
  });
}

export function createJsonlSink(settings: JsonlSinkSettings): JsonlSink {
  if (!settings.path)
    throw new InvalidArgumentError({
      argument: 'path',
      value: settings.path,
      message: 'The JSONL sink needs a file path',
    });
  const mode = settings.mode ?? 'append';
  const line = (group: ScoredGroupRecord) => `${JSON.stringify(group)}\n`;
  let handle: Promise<FileHandle> | undefined;
  let queue: Promise<void> = Promise.resolve();
  let written = 0;
  let resumed = false;
  let closed = false;

  const openFile = (options: SinkOpenOptions = {}) =>
    (async () => {
      await mkdir(dirname(settings.path), { recursive: true });
      const kept = options.resume?.kept;
      if (!kept) {
        try {
          return await open(settings.path, mode === 'new' ? 'wx' : mode === 'replace' ? 'w' : 'a');
        } catch (error) {
          if ((error as { code?: string }).code === 'EEXIST') throw fileExists(settings.path, error);
          throw error;
        }
      }
      // The kept groups go to a temporary file that is renamed into place: a resumed file is
      // never half-rewritten, whenever the run stops.
      resumed = true;
      const temporary = `${settings.path}.${process.pid}.tmp`;
      const file = await open(temporary, 'w');
      try {
        for (const group of kept) await file.appendFile(line(group), 'utf8');
      } finally {
        await file.close();
      }
      if (mode === 'new' && existsSync(settings.path)) {
        await rm(temporary, { force: true });
        throw fileExists(settings.path, Object.assign(new Error('exists'), { code: 'EEXIST' }));
      }
      await rename(temporary, settings.path);
      written += kept.length;
      return open(settings.path, 'a');
    })();

  const fileHandle = () => {
    handle ??= openFile();
    return handle;
  };

  return {
    specificationVersion: 'v1',
    id: 'jsonl',
    path: settings.path,
    get written() {
      return written;
    },
    async open(options = {}) {
      if (handle)
        throw new ShearsError(`The JSONL sink for ${settings.path} is already open`, {
          code: 'SHEARS_SINK_OPEN',
        });
      throwIfAborted(options.signal);
      handle = openFile(options);
      await handle;
    },
    write(group, options = {}) {
      if (closed)
        return Promise.reject(
          new ShearsError(`The JSONL sink for ${settings.path} is closed`, { code: 'SHEARS_SINK_CLOSED' }),
        );
      if (options.signal?.aborted) return Promise.reject(new AbortedError({ cause: options.signal.reason }));
      if (settings.validate !== false) {
        const parsed = scoredGroupRecordSchema.safeParse(group);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          return Promise.reject(
            new InvalidArgumentError({
              argument: 'group',
              value: group,
              message: `Not a valid scored group (${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'unknown issue'})`,
              cause: parsed.error,
            }),
          );
        }
      }
      const text = line(group);
      // Writes are serialised so concurrent groups never interleave within a line.
      const next = queue.then(async () => {
        const file = await fileHandle();
        await file.appendFile(text, 'utf8');
        written++;
      });
      queue = next.catch(() => {});
      return next;
    },
    async flush() {
      await queue;
      if (handle) await (await handle).datasync();
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue;
      if (!handle) return;
      const file = await handle.catch(() => undefined);
      await file?.close();
      // A file this sink created for a run that wrote nothing to it is not left behind.
      if (file && mode === 'new' && !resumed && written === 0) await rm(settings.path, { force: true });
    },
  };
}

/** Parses JSONL text of scored groups; the error names the first bad line. */
export function safeParseScoredGroups(
  text: string,
  options: { source?: string } = {},
): SafeResult<ScoredGroupRecord[], JsonParseError> {
  const source = options.source ?? 'JSONL input';
  const records: ScoredGroupRecord[] = [];
  const lines = text.split('\n');
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const parsed = safeParseJson(line, {
      source: `${source} line ${index + 1}`,
      schema: scoredGroupRecordSchema,
    });
    if (!parsed.success) return err(parsed.error);
    records.push(parsed.value);
  }
  return ok(records);
}

export function parseScoredGroups(text: string, options: { source?: string } = {}): ScoredGroupRecord[] {
  const result = safeParseScoredGroups(text, options);
  if (!result.success) throw result.error;
  return result.value;
}

/** Reads and validates a JSONL file of scored groups. */
export async function readScoredGroups(path: string): Promise<ScoredGroupRecord[]> {
  return parseScoredGroups(await readFile(path, 'utf8'), { source: path });
}
