// `shears view FILE.jsonl [--html FILE.html] [--tokenizer DIR] [--force]`: build the static
// trajectory viewer from JSONL. With a tokenizer (`--tokenizer`, i.e. `server.tokenizer`) the
// token view shows token text instead of ids. An existing HTML file is replaced only when it is
// a viewer page shears built (derived data) or with --force; lines that are not readable groups
// are named, and make the exit code 1.
import { readFileSync, statSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { InvalidArgumentError, safeParseJson } from '@shears/core';
import { fileError, guardOutputs, writeOutputFile } from '../run/run-output.js';
import { type CommandContext, reportPathFor, resolveOut } from '../runtime.js';
import { buildViewerHtml, readGroupsForViewer } from '../viewer/build-viewer.js';
import { loadTokenDecoder } from '../viewer/token-decoder.js';

/** Whether `path` is a viewer page shears built (an HTML page with its embedded-data element). */
function isViewerPage(path: string): boolean {
  try {
    const text = readFileSync(path, 'utf8');
    return text.startsWith('<!doctype html>') && text.includes('id="shears-data" data-encoding=');
  } catch {
    return false;
  }
}

/** Why a skipped line is not a group: broken data, or a record of another kind. */
function skippedWhy(line: string): { broken: boolean; why: string } {
  const parsed = safeParseJson(line, { source: 'line' });
  if (!parsed.success) return { broken: true, why: 'not valid JSON (cut off, or changed by hand?)' };
  const value = parsed.value as { kind?: unknown } | null;
  if (value && typeof value === 'object' && !Array.isArray(value) && value.kind !== 'shears.group')
    return { broken: false, why: `a record of kind ${JSON.stringify(value.kind ?? null)}, not a group` };
  return { broken: true, why: 'not a scored group (no rollouts)' };
}

export async function viewCommand(context: CommandContext): Promise<number> {
  const { io } = context;
  const file = context.positionals[0];
  if (!file)
    throw new InvalidArgumentError({
      argument: 'FILE',
      message: 'Usage: shears view FILE.jsonl [--html OUT.html] [--tokenizer DIR] [--force]',
    });
  const input = resolveOut(context, file);
  const shown = (path: string) => relative(io.cwd, path) || path;
  let read: ReturnType<typeof readGroupsForViewer>;
  let lines: string[];
  try {
    if (statSync(input).isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    read = readGroupsForViewer(input);
    lines = read.skipped.length ? readFileSync(input, 'utf8').split('\n') : [];
  } catch (error) {
    throw fileError(input, 'read', error, io.cwd);
  }
  const target =
    typeof context.flags.html === 'string' ? resolveOut(context, context.flags.html) : reportPathFor(input);
  const tokenizer = context.config.server.tokenizer;
  const decodeToken = tokenizer ? await loadTokenDecoder(tokenizer, io.cwd, 'server.tokenizer') : undefined;
  // A viewer page is derived from its JSONL: building it again loses nothing, so it is replaced
  // (and said). Any other file is the user's: refused without --force.
  const earlierViewer = context.flags.force !== true && isViewerPage(target);
  if (earlierViewer) io.stderr(`replacing ${shown(target)} (a viewer page shears built earlier)\n`);
  else
    guardOutputs({
      paths: [target],
      cwd: io.cwd,
      force: context.flags.force === true,
      elsewhere: '--html OTHER.html',
    });
  writeOutputFile(
    target,
    buildViewerHtml(context.redact.value(read.groups), {
      meta: { title: `shears · ${basename(input)}` },
      ...(decodeToken ? { decodeToken } : {}),
    }),
    { replace: context.flags.force === true || earlierViewer, cwd: io.cwd },
  );
  let broken = 0;
  if (read.skipped.length) {
    const described = read.skipped.map((number) => ({ number, ...skippedWhy(lines[number - 1] ?? '') }));
    broken = described.filter((line) => line.broken).length;
    io.stderr(
      `${shown(input)}: ${read.skipped.length} line(s) not shown:\n${described
        .slice(0, 20)
        .map((line) => `  line ${line.number}: ${line.why}`)
        .join('\n')}${described.length > 20 ? `\n  … and ${described.length - 20} more` : ''}\n`,
    );
  }
  io.stdout(`${read.groups.length} groups → ${shown(target)}\n`);
  return broken > 0 ? 1 : 0;
}
