// hermes-agent's loop guard: the same read (same file content, offset, limit) or the same
// search three times in a row earns a warning, a fourth is refused. Any other file-tool call in
// between resets the count. State lives in the rollout's ToolContext.state.
import type { ToolContext } from '@shears/core';

const STATE_KEY = 'shears.tools-file.repeat';

interface RepeatState {
  signature: string;
  count: number;
}

type RepeatVerdict = { kind: 'ok' } | { kind: 'warn'; count: number } | { kind: 'block'; count: number };

/** Records this call and says whether it repeats the previous ones. */
export function checkRepeat(context: ToolContext, signature: string): RepeatVerdict {
  const previous = context.state.get(STATE_KEY) as RepeatState | undefined;
  const count = previous?.signature === signature ? previous.count + 1 : 1;
  context.state.set(STATE_KEY, { signature, count });
  if (count >= 4) return { kind: 'block', count };
  if (count === 3) return { kind: 'warn', count };
  return { kind: 'ok' };
}

/** Resets the count (writes and patches change what a read would return). */
export function resetRepeat(context: ToolContext): void {
  context.state.delete(STATE_KEY);
}
