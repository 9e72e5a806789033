// `shears view FILE.jsonl [--out FILE.html]`: build the static trajectory viewer from JSONL.
import { writeFileSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { InvalidArgumentError } from '@shears/core';
import { type CommandContext, reportPathFor, resolveOut } from '../runtime.js';
import { buildViewerHtml, readGroupsForViewer } from '../viewer/build-viewer.js';

export async function viewCommand(context: CommandContext): Promise<number> {
  const file = context.positionals[0];
  if (!file)
    throw new InvalidArgumentError({
      argument: 'FILE',
      message: 'Usage: shears view FILE.jsonl [--html OUT.html]',
    });
  const input = resolveOut(context, file);
  const { groups, skipped } = readGroupsForViewer(input);
  const target =
    typeof context.flags.html === 'string' ? resolveOut(context, context.flags.html) : reportPathFor(input);
  writeFileSync(
    target,
    buildViewerHtml(groups, { meta: { title: `shears · ${basename(input)}` }, redact: context.redact }),
  );
  if (skipped.length)
    context.io.stderr(
      `skipped ${skipped.length} line(s) that are not scored groups (first: line ${skipped[0]})\n`,
    );
  context.io.stdout(`${groups.length} groups → ${relative(context.io.cwd, target) || target}\n`);
  return 0;
}
