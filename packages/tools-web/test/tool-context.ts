// A ToolContext for calling web tools directly (they use neither sandbox nor state).
import { silentLogger, type ToolContext, type ToolOutput, type ToolV1 } from '@shears/core';

export function webContext(): ToolContext {
  return {
    sandbox: undefined as never,
    taskId: 'task',
    rolloutId: 'rollout',
    signal: new AbortController().signal,
    logger: silentLogger,
    state: new Map(),
  };
}

export async function call(tool: ToolV1, args: unknown): Promise<{ output: ToolOutput; json: any }> {
  const raw = await tool.execute(tool.inputSchema.parse(args), webContext());
  const output = typeof raw === 'string' ? { content: raw } : raw;
  return { output, json: JSON.parse(output.content) };
}
