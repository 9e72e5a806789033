// The Messages request as the gateway reads it (`POST /v1/messages`, `/v1/messages/count_tokens`):
// only the fields it acts upon, typed as `@anthropic-ai/sdk` types them, optional ones
// `.nullish()`. Content blocks of the types it serves (text, tool_use, tool_result, thinking);
// a block of another type passes the schema by its type and is refused by name in
// anthropic-messages.ts, as the gateway cannot carry it (images, documents). Server tools are
// accepted by their type and recorded as ignored.
import { z } from 'zod';
import { expecting, jsonObject } from './api-schema.js';

const SERVED_BLOCKS = ['text', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'];

const textBlock = z.object({ type: z.literal('text'), text: z.string() });
/** A block of a type the gateway does not serve: refused by name where it is read. */
const otherBlock = z.object({
  type: z
    .string()
    .refine((type) => !SERVED_BLOCKS.includes(type), expecting('a block type', 'a valid block type')),
});

/** A tool result's content: a string or text blocks. */
const toolResultContent = z.union([z.string(), z.array(z.union([textBlock, otherBlock]))], {
  error: 'a valid string or a list of content blocks',
});

const block = z.union([
  z.discriminatedUnion('type', [
    textBlock,
    z.object({
      type: z.literal('tool_use'),
      id: z.string(),
      name: z.string().min(1),
      // The API requires an object; a missing one is taken as `{}`.
      input: jsonObject.nullish(),
    }),
    z.object({
      type: z.literal('tool_result'),
      tool_use_id: z.string(),
      content: toolResultContent.nullish(),
      is_error: z.boolean().nullish(),
    }),
    z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().nullish() }),
    z.object({ type: z.literal('redacted_thinking'), data: z.string().nullish() }),
  ]),
  otherBlock,
]);

export type AnthropicBlock = z.output<typeof block>;

const content = z.union([z.string(), z.array(block)], {
  error: 'a valid string or a list of content blocks',
});

const message = z.discriminatedUnion('role', [
  // Claude Code's mid-conversation system messages (a beta) carry text.
  z.object({ role: z.enum(['user', 'assistant', 'system']), content }),
]);

const customTool = z.object({
  type: z.literal('custom').nullish(),
  name: z.string().min(1),
  description: z.string().nullish(),
  input_schema: jsonObject,
});
/** Server tools (web search, code execution, …) run at Anthropic: accepted, recorded as ignored. */
const serverTool = z.object({
  type: z.string().refine((type) => type !== 'custom', expecting('a tool type', 'a valid tool type')),
});

const disableParallel = z.boolean().nullish();
const toolChoice = z.discriminatedUnion('type', [
  z.object({ type: z.enum(['auto', 'any', 'none']), disable_parallel_tool_use: disableParallel }),
  z.object({ type: z.literal('tool'), name: z.string(), disable_parallel_tool_use: disableParallel }),
]);

const shape = {
  model: z.string(),
  max_tokens: z.int(),
  system: z
    .union([z.string(), z.array(block)], { error: 'a valid string or a list of text blocks' })
    .nullish(),
  messages: z.array(message).min(1),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  stop_sequences: z.union([z.string(), z.array(z.string())], { error: 'a valid list of strings' }).nullish(),
  stream: z.boolean().nullish(),
  tools: z.array(z.union([customTool, serverTool])).nullish(),
  tool_choice: toolChoice.nullish(),
};

export const messagesRequestSchema = z.object(shape);
/** `count_tokens` takes the same body without `max_tokens` and `stream`. */
export const countTokensRequestSchema = z.object({
  ...shape,
  max_tokens: z.unknown().optional(),
  stream: z.unknown().optional(),
});

export type MessagesRequest = z.output<typeof messagesRequestSchema>;
