// The JSONL trajectory sink: one ScoredGroupRecord per line, appended; and the reader that
// validates a file line by line and names the first bad line.
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { TrajectorySinkV1 } from './contracts/sink.js';
import { AbortedError, InvalidArgumentError, type JsonParseError, ShearsError } from './errors.js';
import { safeParseJson } from './json.js';
import { err, ok, type SafeResult } from './result.js';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from './schemas/group-record.js';

export interface JsonlSinkSettings {
  /** File to append to; parent directories are created on first write. */
  path: string;
  /** Truncate the file on first write instead of appending (default false). */
  truncate?: boolean;
  /** Validate each record against the schema before writing (default true). */
  validate?: boolean;
}

export interface JsonlSink extends TrajectorySinkV1 {
  readonly path: string;
  /** Records written so far. */
  readonly written: number;
}

export function createJsonlSink(settings: JsonlSinkSettings): JsonlSink {
  if (!settings.path)
    throw new InvalidArgumentError({
      argument: 'path',
      value: settings.path,
      message: 'The JSONL sink needs a file path',
    });
  let handle: Promise<FileHandle> | undefined;
  let queue: Promise<void> = Promise.resolve();
  let written = 0;
  let closed = false;

  const fileHandle = () => {
    handle ??= (async () => {
      await mkdir(dirname(settings.path), { recursive: true });
      return open(settings.path, settings.truncate ? 'w' : 'a');
    })();
    return handle;
  };

  return {
    specificationVersion: 'v1',
    id: 'jsonl',
    path: settings.path,
    get written() {
      return written;
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
      const line = `${JSON.stringify(group)}\n`;
      // Writes are serialised so concurrent groups never interleave within a line.
      const next = queue.then(async () => {
        const file = await fileHandle();
        await file.appendFile(line, 'utf8');
        written++;
      });
      queue = next.catch(() => {});
      return next;
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue;
      if (handle) {
        const file = await handle.catch(() => undefined);
        await file?.close();
      }
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
