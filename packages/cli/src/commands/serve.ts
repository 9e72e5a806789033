// `shears serve`: run groups continuously and push them to a trajectory API (Atropos protocol),
// pausing when too far ahead of the trainer. `--max-groups N` stops after N groups.
import { InvalidArgumentError } from '@shears/core';
import type { CommandContext } from '../runtime.js';
import { runServeLoop } from '../serve/serve-loop.js';

export async function serveCommand(context: CommandContext): Promise<number> {
  const raw = context.flags['max-groups'];
  const maxGroups = raw === undefined ? undefined : Number(raw);
  if (maxGroups !== undefined && (!Number.isInteger(maxGroups) || maxGroups < 1)) {
    throw new InvalidArgumentError({
      argument: '--max-groups',
      value: raw,
      message: `--max-groups: expected a positive integer, got ${String(raw)}`,
    });
  }
  const result = await runServeLoop(context, { maxGroups });
  context.io.stdout(
    `sent ${result.groupsSent} groups to ${context.config.api.url} (${result.groupsSkipped} skipped with equal scores, ${result.pauses} pauses)\n`,
  );
  return context.signal.aborted ? 130 : 0;
}
