// `shears view FILE.jsonl [--html FILE.html] [--tokenizer DIR]`: build the static trajectory viewer
// from JSONL. With a tokenizer (`--tokenizer`, i.e. `server.tokenizer`) the token view
// shows token text instead of ids.
import { writeFileSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { InvalidArgumentError } from '@shears/core';
import { type CommandContext, reportPathFor, resolveOut } from '../runtime.js';
import { buildViewerHtml, readGroupsForViewer } from '../viewer/build-viewer.js';
import { loadTokenDecoder } from '../viewer/token-decoder.js';

export async function viewCommand(context: CommandContext): Promise<number> {
  const file = context.positionals[0];
  if (!file)
    throw new InvalidArgumentError({
      argument: 'FILE',
      message: 'Usage: shears view FILE.jsonl [--html OUT.html] [--tokenizer DIR]',
    });
  const input = resolveOut(context, file);
  const { groups, skipped } = readGroupsForViewer(input);
  const target =
    typeof context.flags.html === 'string' ? resolveOut(context, context.flags.html) : reportPathFor(input);
  const tokenizer = context.config.server.tokenizer;
  const decodeToken = tokenizer
    ? await loadTokenDecoder(tokenizer, context.io.cwd, 'server.tokenizer')
    : undefined;
  writeFileSync(
    target,
    buildViewerHtml(groups, {
      meta: { title: `shears · ${basename(input)}` },
      redact: context.redact,
      ...(decodeToken ? { decodeToken } : {}),
    }),
  );
  if (skipped.length)
    context.io.stderr(
      `skipped ${skipped.length} line(s) that are not scored groups (first: line ${skipped[0]})\n`,
    );
  context.io.stdout(`${groups.length} groups → ${relative(context.io.cwd, target) || target}\n`);
  return 0;
}
