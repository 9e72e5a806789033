// write_file: writes a whole file, creating parent directories, replacing the old file
// atomically (temporary file + rename), with hermes-agent's refusals for system paths.
import { defineTool, type ToolV1 } from '@shears/core';
import { z } from 'zod';
import { writeAtomic } from './file-io.js';
import { sensitivePathError, writeDeniedError } from './guards.js';
import { resetRepeat } from './repeat-guard.js';
import { errorResult, guarded, jsonResult } from './result.js';
import type { ResolvedFileToolsSettings } from './settings.js';
import { normalizeToolPath } from './workspace.js';

const WRITE_FILE_DESCRIPTION =
  'Write content to a file, completely replacing existing content. Use this instead of echo/cat heredoc in terminal. ' +
  "Creates parent directories automatically. OVERWRITES the entire file — use 'patch' for targeted edits.";

export const writeFileJsonSchema = {
  type: 'object',
  properties: {
    path: {
      type: 'string',
      description: "Path to the file to write (will be created if it doesn't exist, overwritten if it does)",
    },
    content: { type: 'string', description: 'Complete content to write to the file' },
  },
  required: ['path', 'content'],
} as const;

export const writeFileInputSchema = z.object({ path: z.string(), content: z.string() });
export type WriteFileArgs = z.infer<typeof writeFileInputSchema>;

/** The refusal for writing `absolute`, if any (sensitive system path or credential file). */
export function writeRefusal(absolute: string, shown: string): string | undefined {
  return sensitivePathError(absolute, shown) ?? writeDeniedError(absolute, shown);
}

export function createWriteFileTool(settings: ResolvedFileToolsSettings): ToolV1<WriteFileArgs> {
  return defineTool<WriteFileArgs>({
    name: 'write_file',
    description: WRITE_FILE_DESCRIPTION,
    inputSchema: writeFileInputSchema,
    jsonSchema: writeFileJsonSchema,
    toolset: 'file',
    maxResultChars: 100_000,
    execute: (args, context) =>
      guarded(async () => {
        resetRepeat(context);
        const absolute = normalizeToolPath(args.path, context.sandbox.workdir, { confine: settings.confine });
        const refusal = writeRefusal(absolute, args.path);
        if (refusal) return errorResult(refusal);
        const written = await writeAtomic(context.sandbox, args.path, args.content, {
          confine: settings.confine,
          signal: context.signal,
          timeoutMs: settings.timeoutMs,
        });
        return jsonResult({ bytes_written: written.bytesWritten, dirs_created: written.dirsCreated });
      }),
  });
}
