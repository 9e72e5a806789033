// Formats a trajectory for a judge prompt: messages, reasoning, tool calls and results, each
// truncated head-and-tail so the judge sees how an output began and ended, and the whole
// transcript kept under a budget by eliding middle turns (the task and the end matter most).
import { type ChatMessage, messageText } from '@shears/core';

export interface FormatTrajectoryOptions {
  /** Per-item cap for tool results (characters). */
  maxToolResultChars?: number;
  /** Per-item cap for assistant/user text and reasoning. */
  maxMessageChars?: number;
  /** Cap for the whole transcript. */
  maxTotalChars?: number;
  /** Include reasoning (thinking) text. */
  includeReasoning?: boolean;
}

/** Keeps the first 40% and the last 60% of `text` when it exceeds `limit`. */
export function truncateMiddle(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const head = Math.floor(limit * 0.4);
  const tail = limit - head;
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n... [${omitted} characters omitted] ...\n${text.slice(text.length - tail)}`;
}

function formatMessage(message: ChatMessage, options: Required<FormatTrajectoryOptions>): string {
  const lines: string[] = [];
  const text = messageText(message);
  switch (message.role) {
    case 'tool':
      lines.push(
        `[tool result${message.tool_call_id ? ` ${message.tool_call_id}` : ''}]\n${truncateMiddle(text, options.maxToolResultChars)}`,
      );
      break;
    case 'assistant': {
      const reasoning = typeof message.reasoning_content === 'string' ? message.reasoning_content : '';
      if (options.includeReasoning && reasoning.trim())
        lines.push(`[assistant reasoning]\n${truncateMiddle(reasoning, options.maxMessageChars)}`);
      if (text.trim()) lines.push(`[assistant]\n${truncateMiddle(text, options.maxMessageChars)}`);
      for (const call of message.tool_calls ?? []) {
        lines.push(
          `[tool call ${call.id}] ${call.function.name}(${truncateMiddle(call.function.arguments, options.maxMessageChars)})`,
        );
      }
      if (lines.length === 0) lines.push('[assistant]\n(empty)');
      break;
    }
    default:
      lines.push(`[${message.role}]\n${truncateMiddle(text, options.maxMessageChars)}`);
  }
  return lines.join('\n');
}

export function formatTrajectory(
  messages: readonly ChatMessage[],
  options: FormatTrajectoryOptions = {},
): string {
  const resolved: Required<FormatTrajectoryOptions> = {
    maxToolResultChars: options.maxToolResultChars ?? 2_000,
    maxMessageChars: options.maxMessageChars ?? 4_000,
    maxTotalChars: options.maxTotalChars ?? 24_000,
    includeReasoning: options.includeReasoning ?? true,
  };
  // The system prompt is the environment's, not the agent's; judges see the task through the user turn.
  const blocks = messages
    .filter((message) => message.role !== 'system')
    .map((message) => formatMessage(message, resolved));
  const separator = '\n\n';
  let total = blocks.reduce((sum, block) => sum + block.length + separator.length, 0);
  if (total <= resolved.maxTotalChars) return blocks.join(separator);
  // Keep the first block (the task) and as many of the last blocks as fit.
  const first = blocks[0] ?? '';
  const kept: string[] = [];
  total = first.length + separator.length;
  for (let index = blocks.length - 1; index >= 1; index--) {
    const block = blocks[index]!;
    if (total + block.length + separator.length > resolved.maxTotalChars) break;
    kept.unshift(block);
    total += block.length + separator.length;
  }
  const omitted = blocks.length - 1 - kept.length;
  const marker = `[... ${omitted} earlier message${omitted === 1 ? '' : 's'} omitted ...]`;
  return [first, marker, ...kept].join(separator);
}
