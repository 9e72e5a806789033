// One assistant reply read as the agent loop needs it: its text, its reasoning, and its tool
// calls, native or (when the server returned none) parsed from the raw text.
import { randomUUID } from 'node:crypto';
import type { AssistantMessage, ChatMessage, ToolCall, ToolSchema } from './contracts/chat.js';
import { messageText } from './contracts/chat.js';
import type { Logger } from './contracts/logger.js';
import type { ToolCallParserV1 } from './contracts/parser.js';
import { describeThrown } from './hermes-messages.js';

interface AssistantTurn {
  /** The text shown as the assistant's content (without the parsed tool-call markup). */
  content: string;
  reasoning: string | null;
  calls: ToolCall[];
}

interface ParseAssistantTurnOptions {
  /** The tools offered this turn; with none, the text is never parsed for calls. */
  schemas: ToolSchema[];
  /** Parse tool calls from raw completion text whenever the server returned none. */
  parser?: ToolCallParserV1 | undefined;
  /** Used instead when there is no `parser` and the text contains `<tool_call>` (hermes' fallback). */
  fallbackParser?: ToolCallParserV1 | undefined;
  logger: Logger;
}

/** Reasoning of an assistant message: reasoning_content → reasoning → reasoning_details[].text. */
function extractReasoning(message: AssistantMessage | ChatMessage): string | null {
  if (typeof message.reasoning_content === 'string' && message.reasoning_content)
    return message.reasoning_content;
  const reasoning = (message as AssistantMessage).reasoning;
  if (typeof reasoning === 'string' && reasoning) return reasoning;
  const details = (message as AssistantMessage).reasoning_details;
  if (Array.isArray(details)) {
    for (const detail of details)
      if (detail && typeof detail.text === 'string' && detail.text) return detail.text;
  }
  return null;
}

function shortId(): string {
  return randomUUID().replaceAll('-', '').slice(0, 8);
}

/** Text, reasoning and tool calls of one reply; a parser that throws leaves the turn as plain text. */
export function parseAssistantTurn(
  message: AssistantMessage,
  options: ParseAssistantTurnOptions,
): AssistantTurn {
  const reasoning = extractReasoning(message);
  let content = messageText(message);
  let calls: ToolCall[] = (message.tool_calls ?? []).map((call) => ({
    id: call.id || `call_${shortId()}`,
    type: 'function',
    function: { name: call.function.name, arguments: call.function.arguments ?? '' },
  }));
  if (calls.length === 0 && content && options.schemas.length > 0) {
    const parser = options.parser ?? (content.includes('<tool_call>') ? options.fallbackParser : undefined);
    if (parser) {
      try {
        const parsed = parser.parse(content, { tools: options.schemas });
        if (parsed.toolCalls.length > 0) {
          calls = parsed.toolCalls.map((call) => ({
            id: call.id || `call_${shortId()}`,
            type: 'function',
            function: { name: call.name, arguments: call.arguments },
          }));
          content = parsed.content ?? '';
        }
      } catch (thrown) {
        options.logger.warn('tool-call parser threw; treating the turn as plain text', {
          parser: parser.id,
          error: describeThrown(thrown),
        });
      }
    }
  }
  return { content, reasoning, calls };
}
