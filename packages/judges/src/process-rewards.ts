// Process rewards (the seed's shaping): a small bonus per successful tool call and per
// substantive reasoning step, added to the terminal score, with a cap so shaping can never
// outweigh solving the task.
import { type ChatMessage, messageText } from '@shears/core';

export interface ProcessRewardSettings {
  /** Bonus per tool call whose result is not an error (default 0.02). */
  toolCallBonus?: number;
  /** Bonus per reasoning step of at least `minReasoningChars` (default 0.01). */
  reasoningBonus?: number;
  minReasoningChars?: number;
  /** Cap on the sum of bonuses (default 0.2). */
  maxBonus?: number;
}

export interface ProcessRewardResult {
  score: number;
  components: {
    terminal: number;
    tool_calls: number;
    reasoning: number;
    successful_tool_calls: number;
    reasoning_steps: number;
  };
}

function isErrorResult(text: string): boolean {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return false;
  try {
    const value = JSON.parse(trimmed) as Record<string, unknown>;
    return Boolean(value.error) || (typeof value.exit_code === 'number' && value.exit_code !== 0);
  } catch {
    return false;
  }
}

export function processReward(
  messages: readonly ChatMessage[],
  terminalScore: number,
  settings: ProcessRewardSettings = {},
): ProcessRewardResult {
  const toolCallBonus = settings.toolCallBonus ?? 0.02;
  const reasoningBonus = settings.reasoningBonus ?? 0.01;
  const minReasoningChars = settings.minReasoningChars ?? 40;
  const maxBonus = settings.maxBonus ?? 0.2;
  let successful = 0;
  let reasoningSteps = 0;
  for (const message of messages) {
    if (message.role === 'tool' && !isErrorResult(messageText(message))) successful++;
    if (
      message.role === 'assistant' &&
      typeof message.reasoning_content === 'string' &&
      message.reasoning_content.trim().length >= minReasoningChars
    ) {
      reasoningSteps++;
    }
  }
  const toolPart = successful * toolCallBonus;
  const reasoningPart = reasoningSteps * reasoningBonus;
  const bonus = Math.min(maxBonus, toolPart + reasoningPart);
  return {
    score: terminalScore + bonus,
    components: {
      terminal: terminalScore,
      tool_calls: Math.min(toolPart, bonus),
      reasoning: bonus - Math.min(toolPart, bonus),
      successful_tool_calls: successful,
      reasoning_steps: reasoningSteps,
    },
  };
}
