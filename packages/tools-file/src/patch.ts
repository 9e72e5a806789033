// patch: targeted edits. `replace` mode swaps old_string for new_string (exact first, then
// tolerant of whitespace/indent/escape/unicode drift); `patch` mode applies a V4A patch or a
// unified diff across files, validating every operation before anything is written.
import { defineTool, type ToolV1 } from '@shears/core';
import { z } from 'zod';
import { deleteFile, readText, writeAtomic } from './file-io.js';
import { FileToolError } from './file-tool-error.js';
import { applyRanges, closestSections, findMatches, MATCH_STRATEGIES, reindent } from './fuzzy-match.js';
import { applyHunks, type PatchOperation, parsePatch } from './patch-operations.js';
import { resetRepeat } from './repeat-guard.js';
import { errorResult, guarded, jsonResult } from './result.js';
import type { ResolvedFileToolsSettings } from './settings.js';
import { createUnifiedDiff } from './unified-diff.js';
import { normalizeToolPath, resolveSandboxPath } from './workspace.js';
import { writeRefusal } from './write-file.js';

export const PATCH_DESCRIPTION =
  `Targeted find-and-replace edits in files. Use this instead of sed/awk in terminal. Uses fuzzy matching (${MATCH_STRATEGIES.length} strategies) so minor whitespace/indentation differences won't break it. ` +
  'Returns a unified diff. Auto-runs syntax checks after editing.\n\n' +
  'Replace mode (default): find a unique string and replace it.\n' +
  'Patch mode: apply V4A multi-file patches for bulk changes.';

export const patchJsonSchema = {
  type: 'object',
  properties: {
    mode: {
      type: 'string',
      enum: ['replace', 'patch'],
      description: "Edit mode: 'replace' for targeted find-and-replace, 'patch' for V4A multi-file patches",
      default: 'replace',
    },
    path: { type: 'string', description: "File path to edit (required for 'replace' mode)" },
    old_string: {
      type: 'string',
      description:
        "Text to find in the file (required for 'replace' mode). Must be unique in the file unless replace_all=true. Include enough surrounding context to ensure uniqueness.",
    },
    new_string: {
      type: 'string',
      description:
        "Replacement text (required for 'replace' mode). Can be empty string to delete the matched text.",
    },
    replace_all: {
      type: 'boolean',
      description: 'Replace all occurrences instead of requiring a unique match (default: false)',
      default: false,
    },
    patch: {
      type: 'string',
      description:
        "V4A format patch content (required for 'patch' mode). Format:\n*** Begin Patch\n*** Update File: path/to/file\n@@ context hint @@\n context line\n-removed line\n+added line\n*** End Patch",
    },
  },
  required: ['mode'],
} as const;

export const patchInputSchema = z.object({
  mode: z.enum(['replace', 'patch']).default('replace'),
  path: z.string().optional(),
  old_string: z.string().optional(),
  new_string: z.string().optional(),
  replace_all: z.boolean().optional(),
  patch: z.string().optional(),
});
export type PatchArgs = z.output<typeof patchInputSchema>;

const NO_MATCH_HINT =
  'old_string not found. Use read_file to verify the current content, or search_files to locate the text.';

/** Replace-mode core: the new content, or a FileToolError the model can act on. */
export function replaceInContent(
  content: string,
  oldString: string,
  newString: string,
  replaceAll: boolean,
): { content: string; strategy: string; count: number } {
  if (oldString === '') throw new FileToolError('old_string cannot be empty');
  if (oldString === newString)
    throw new FileToolError('old_string and new_string are identical; nothing to change');
  // Work on LF text and restore CRLF afterwards, so Windows line endings do not defeat matching.
  const crlf = content.includes('\r\n');
  const text = crlf ? content.replace(/\r\n/g, '\n') : content;
  const match = findMatches(text, oldString.replace(/\r\n/g, '\n'));
  if (!match) {
    const sections = closestSections(text, oldString.replace(/\r\n/g, '\n'));
    if (sections.length === 0) {
      throw new FileToolError('Could not find a match for old_string in the file', {
        extra: { _hint: NO_MATCH_HINT },
      });
    }
    // hermes-agent leaves out the generic hint when it can show candidates.
    const shown = sections
      .map((section) => {
        const end = section.startLine + section.lines.length - 1;
        const body = section.lines
          .map((line, index) => `${String(section.startLine + index).padStart(6, ' ')}|${line}`)
          .join('\n');
        return `--- lines ${section.startLine}-${end} ---\n${body}`;
      })
      .join('\n');
    throw new FileToolError(
      `Could not find a match for old_string in the file\n\nDid you mean one of these sections?\n${shown}`,
    );
  }
  if (match.ranges.length > 1 && !replaceAll) {
    throw new FileToolError(
      `Found ${match.ranges.length} matches for old_string. Provide more context to make it unique, or use replace_all=True.`,
    );
  }
  const replacement = newString.replace(/\r\n/g, '\n');
  let updated = applyRanges(text, match.ranges, (range) =>
    match.strategy === 'exact' ? replacement : reindent(replacement, oldString, range.indent),
  );
  if (crlf) updated = updated.replace(/\n/g, '\r\n');
  return { content: updated, strategy: match.strategy, count: match.ranges.length };
}

export function createPatchTool(settings: ResolvedFileToolsSettings): ToolV1<PatchArgs> {
  const io = (signal: AbortSignal) => ({ confine: settings.confine, signal, timeoutMs: settings.timeoutMs });

  const checkWritable = (path: string, workdir: string) => {
    const absolute = normalizeToolPath(path, workdir, { confine: settings.confine });
    const refusal = writeRefusal(absolute, path);
    if (refusal) throw new FileToolError(refusal);
  };

  return defineTool<PatchArgs>({
    name: 'patch',
    description: PATCH_DESCRIPTION,
    inputSchema: patchInputSchema,
    jsonSchema: patchJsonSchema,
    toolset: 'file',
    maxResultChars: 100_000,
    execute: (args, context) =>
      guarded(async () => {
        resetRepeat(context);
        const sandbox = context.sandbox;
        const mode = args.mode ?? 'replace';
        if (mode === 'replace') {
          if (args.path === undefined) return errorResult("path is required for 'replace' mode");
          if (args.old_string === undefined) return errorResult("old_string is required for 'replace' mode");
          if (args.new_string === undefined) return errorResult("new_string is required for 'replace' mode");
          checkWritable(args.path, sandbox.workdir);
          const before = await readText(sandbox, args.path, {
            ...io(context.signal),
            maxBytes: settings.maxPatchBytes,
          });
          const replaced = replaceInContent(
            before,
            args.old_string,
            args.new_string,
            args.replace_all ?? false,
          );
          await writeAtomic(sandbox, args.path, replaced.content, io(context.signal));
          // Re-read to verify what landed on disk is what was meant.
          const after = await readText(sandbox, args.path, {
            ...io(context.signal),
            maxBytes: settings.maxPatchBytes,
          });
          if (after !== replaced.content)
            return errorResult(
              `Patch verification failed for ${args.path}: the file on disk differs from the edit`,
            );
          return jsonResult({
            success: true,
            diff: createUnifiedDiff(args.path, before, after),
            files_modified: [args.path],
            lint: { status: 'skipped', message: 'No linter configured' },
          });
        }
        if (!args.patch) return errorResult("patch content is required for 'patch' mode");
        const operations = parsePatch(args.patch);
        // Validate everything first: compute each file's new content in memory.
        const pending = new Map<string, { before: string | undefined; after: string | undefined }>();
        const current = async (path: string): Promise<string | undefined> => {
          if (pending.has(path)) return pending.get(path)!.after;
          const resolved = await resolveSandboxPath(sandbox, path, {
            confine: settings.confine,
            signal: context.signal,
            timeoutMs: settings.timeoutMs,
          });
          if (resolved.type === 'missing') return undefined;
          if (resolved.type !== 'file')
            throw new FileToolError(`Cannot patch ${path}: it is not a regular file`);
          return readText(sandbox, path, { ...io(context.signal), maxBytes: settings.maxPatchBytes });
        };
        const record = async (path: string, after: string | undefined) => {
          const entry = pending.get(path);
          if (entry) entry.after = after;
          else pending.set(path, { before: await current(path), after });
        };
        const created: string[] = [];
        const deleted: string[] = [];
        const modified: string[] = [];
        for (const operation of operations as PatchOperation[]) {
          checkWritable(operation.path, sandbox.workdir);
          if (operation.kind === 'add') {
            if ((await current(operation.path)) !== undefined)
              throw new FileToolError(
                `Cannot add ${operation.path}: the file already exists (use "*** Update File:")`,
              );
            await record(operation.path, operation.content);
            created.push(operation.path);
          } else if (operation.kind === 'delete') {
            if ((await current(operation.path)) === undefined)
              throw new FileToolError(`Cannot delete ${operation.path}: file not found`);
            await record(operation.path, undefined);
            deleted.push(operation.path);
          } else {
            const before = await current(operation.path);
            if (before === undefined)
              throw new FileToolError(`Cannot update ${operation.path}: file not found`);
            const after = applyHunks(operation.path, before, operation.hunks);
            if (operation.moveTo) {
              checkWritable(operation.moveTo, sandbox.workdir);
              if ((await current(operation.moveTo)) !== undefined)
                throw new FileToolError(
                  `Cannot move ${operation.path} to ${operation.moveTo}: the destination exists`,
                );
              await record(operation.path, undefined);
              await record(operation.moveTo, after);
              deleted.push(operation.path);
              created.push(operation.moveTo);
            } else {
              await record(operation.path, after);
              modified.push(operation.path);
            }
          }
        }
        const diffs: string[] = [];
        for (const [path, change] of pending) {
          if (change.after !== undefined) await writeAtomic(sandbox, path, change.after, io(context.signal));
          else if (change.before !== undefined) await deleteFile(sandbox, path, io(context.signal));
          diffs.push(createUnifiedDiff(path, change.before ?? '', change.after ?? ''));
        }
        return jsonResult({
          success: true,
          diff: diffs.join(''),
          files_modified: [...new Set(modified)],
          files_created: created.length > 0 ? created : undefined,
          files_deleted: deleted.length > 0 ? deleted : undefined,
        });
      }),
  });
}
