// read_file: a file's lines in hermes-agent's `%6d|` format, paged with offset/limit, with
// size caps and binary detection.
import { posix } from 'node:path';
import { defineTool, type SandboxV1, type ToolV1 } from '@shears/core';
import { PERSISTED_RESULTS_DIR } from '@shears/core/internal';
import { z } from 'zod';
import { kindName, readLines } from './file-io.js';
import { FileToolError } from './file-tool-error.js';
import { binaryExtension, isDevicePath, looksBinary } from './guards.js';
import { checkRepeat } from './repeat-guard.js';
import { errorResult, guarded, jsonResult } from './result.js';
import type { ResolvedFileToolsSettings } from './settings.js';
import { normalizeToolPath } from './workspace.js';

const READ_FILE_DESCRIPTION =
  'Read a text file with line numbers and pagination. Use this instead of cat/head/tail in terminal. ' +
  "Output format: 'LINE_NUM|CONTENT'. Suggests similar filenames if not found. Use offset and limit for large files. " +
  'Reads exceeding ~100K characters are rejected; use offset and limit to read specific sections of large files. ' +
  'NOTE: Cannot read images or binary files — use vision_analyze for images.';

export const readFileJsonSchema = {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'Path to the file to read (absolute, relative, or ~/path)' },
    offset: {
      type: 'integer',
      description: 'Line number to start reading from (1-indexed, default: 1)',
      default: 1,
      minimum: 1,
    },
    limit: {
      type: 'integer',
      description: 'Maximum number of lines to read (default: 500, max: 2000)',
      default: 500,
      maximum: 2000,
    },
  },
  required: ['path'],
} as const;

// Pagination is normalised, not rejected (hermes: non-integers fall back to the defaults).
const pageNumber = (fallback: number) =>
  z.preprocess((value) => {
    const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    return typeof number === 'number' && Number.isFinite(number) ? Math.trunc(number) : fallback;
  }, z.number().int());

export const readFileInputSchema = z.object({
  path: z.string(),
  offset: pageNumber(1).optional(),
  limit: pageNumber(500).optional(),
});
export type ReadFileArgs = z.infer<typeof readFileInputSchema>;

/** `%6d|line`, cutting lines longer than `maxLineLength`. */
export function formatLines(
  lines: readonly string[],
  firstLineNumber: number,
  maxLineLength: number,
): string {
  return lines
    .map((line, index) => {
      const shown = line.length > maxLineLength ? `${line.slice(0, maxLineLength)}... [truncated]` : line;
      return `${String(firstLineNumber + index).padStart(6, ' ')}|${shown}`;
    })
    .join('\n');
}

/** Splits text into lines; a final newline does not start another line. */
function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
}

/** Up to five names in `siblings` that look like `wanted`, best first. */
export function similarNames(wanted: string, siblings: readonly string[]): string[] {
  const target = wanted.toLowerCase();
  const stem = target.replace(/\.[^.]*$/, '');
  const extension = posix.extname(target);
  const scored = siblings
    .map((name) => {
      const lower = name.toLowerCase();
      const nameStem = lower.replace(/\.[^.]*$/, '');
      let score = 0;
      if (nameStem === '' || (name.startsWith('.') && !wanted.startsWith('.'))) return { name, score };
      if (lower === target) score = 100;
      else if (lower.replace(/\.[^.]*$/, '') === stem) score = 80;
      else if (lower.startsWith(stem) || stem.startsWith(nameStem)) score = 60;
      else if (lower.includes(stem) || stem.includes(lower)) score = 40;
      else if (extension && posix.extname(lower) === extension) score = 10;
      return { name, score };
    })
    .filter((entry) => entry.score > 0)
    .sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
  return scored.slice(0, 5).map((entry) => entry.name);
}

/**
 * Where core's tool-result budget persists oversized results (`persistedResultPath`): the
 * `<persisted-output>` block tells the model to page them with read_file, so read_file (and only
 * read_file) may read there although it is outside the workspace.
 */
function persistedResultsRoot(sandbox: Pick<SandboxV1, 'tempDir'>): string {
  return `${sandbox.tempDir.replace(/\/+$/, '')}/${PERSISTED_RESULTS_DIR}`;
}

export function createReadFileTool(settings: ResolvedFileToolsSettings): ToolV1<ReadFileArgs> {
  return defineTool<ReadFileArgs>({
    name: 'read_file',
    description: READ_FILE_DESCRIPTION,
    inputSchema: readFileInputSchema,
    jsonSchema: readFileJsonSchema,
    toolset: 'file',
    maxResultChars: Number.POSITIVE_INFINITY,
    execute: (args, context) =>
      guarded(async () => {
        const sandbox = context.sandbox;
        const offset = Math.max(1, args.offset ?? 1);
        const limit = Math.min(Math.max(1, args.limit ?? 500), settings.maxLines);
        const extraRoots = [persistedResultsRoot(sandbox)];
        const absolute = normalizeToolPath(args.path, sandbox.workdir, {
          confine: settings.confine,
          extraRoots,
        });
        if (isDevicePath(absolute)) {
          return errorResult(`Cannot read device file: ${args.path}. Device files block or never end.`);
        }
        const extension = binaryExtension(absolute);
        if (extension) {
          return errorResult(
            `Cannot read binary file '${args.path}' (${extension}). Use vision_analyze for images, or terminal to inspect binary files.`,
          );
        }
        const end = offset + limit - 1;
        const read = await readLines(sandbox, args.path, {
          confine: settings.confine,
          extraRoots,
          signal: context.signal,
          timeoutMs: settings.timeoutMs,
          range: [offset, end],
          maxScanBytes: settings.maxScanBytes,
          // Enough bytes for maxLineLength characters of any UTF-8 text, and one more.
          lineBytes: settings.maxLineLength * 4 + 4,
        });
        const { resolved } = read;
        if (resolved.type === 'missing') {
          const wanted = posix.basename(resolved.real);
          const directory = posix.dirname(args.path);
          const similar = similarNames(wanted, read.siblings).map((name) =>
            directory === '.' ? name : posix.join(directory, name),
          );
          return errorResult(`File not found: ${args.path}`, {
            similar_files: similar.length > 0 ? similar : undefined,
          });
        }
        if (resolved.type === 'dir') {
          return errorResult(
            `Cannot read '${args.path}': it is a directory. Use search_files with target='files' to list its files.`,
          );
        }
        if (resolved.type !== 'file')
          throw new FileToolError(
            `Cannot read '${args.path}': it is a ${kindName(read.kind ?? '')}, not a regular file (reading it could block or never end)`,
          );
        if (looksBinary(read.sample)) {
          return errorResult(
            'Binary file - cannot display as text. Use appropriate tools to handle this file type.',
            {
              file_size: read.size,
            },
          );
        }
        const text = read.content ?? '';
        const lines = splitLines(text);
        const totalLines = Math.max(read.lineCount, offset - 1 + lines.length);
        const content = formatLines(lines, offset, settings.maxLineLength);
        if (content.length > settings.maxReadChars || read.contentCut) {
          return errorResult(
            `Read produced ${read.contentCut ? 'more than ' : ''}${content.length.toLocaleString('en-US')} characters which exceeds the safety limit (${settings.maxReadChars.toLocaleString('en-US')} chars). Use offset and limit to read a smaller range.`,
            { total_lines: totalLines, file_size: read.size },
          );
        }
        // The content itself is part of the signature: re-reading a file that changed is fine.
        const repeat = checkRepeat(
          context,
          `read_file\0${resolved.real}\0${offset}\0${limit}\0${read.size}\0${text.length}\0${text.slice(0, 200)}\0${text.slice(-200)}`,
        );
        if (repeat.kind === 'block') {
          return errorResult(
            `BLOCKED: You have read ${args.path} (offset=${offset}, limit=${limit}) ${repeat.count} times in a row and it has not changed. Use the content you already have instead of reading it again.`,
          );
        }
        const lastShown = offset - 1 + lines.length;
        const truncated = lastShown < totalLines || (read.partial && lines.length === limit);
        let hint: string | undefined;
        if (read.partial && lines.length < limit)
          hint = `The file is ${read.size} bytes; read_file reads only its first ${settings.maxScanBytes} bytes (${read.lineCount} lines). Use the terminal for the rest.`;
        else if (truncated)
          hint = `Use offset=${lastShown + 1} to continue reading (showing ${offset}-${lastShown} of ${totalLines} lines)`;
        else if (lines.length === 0 && totalLines > 0)
          hint = `offset=${offset} is past the end of the file (${totalLines} lines)`;
        const warning =
          repeat.kind === 'warn'
            ? `You have read this exact range ${repeat.count} times in a row and the file has not changed. Use the content you already have; a 4th identical read will be blocked.`
            : undefined;
        return jsonResult({
          content,
          total_lines: totalLines,
          file_size: read.size,
          truncated,
          partial: read.partial ? true : undefined,
          hint,
          _warning: warning,
        });
      }),
  });
}
