// The Chat Completions request as the gateway reads it (`POST /v1/chat/completions`): only the
// fields it acts upon, typed as the `openai` SDK types them, optional ones `.nullish()` (clients
// send `null` for "not set"). Other fields are accepted and recorded as ignored; content the
// gateway cannot carry (images, audio, files) passes the schema by its type and is refused by
// name in chat-completions.ts.
import { z } from 'zod';
import { expecting, jsonObject } from './api-schema.js';

const TEXT_TYPES = ['text', 'input_text', 'output_text'] as const;

/** A text part, or a part of another type (refused by name when the gateway reads it). */
const openaiContentPart = z.union([
  z.object({ type: z.enum(TEXT_TYPES), text: z.string() }),
  z.object({
    type: z
      .string()
      .refine((type) => !(TEXT_TYPES as readonly string[]).includes(type), expecting('a content part type')),
  }),
]);

/** A message's content: a string or an array of content parts. */
export const openaiContent = z.union([z.string(), z.array(openaiContentPart)], {
  error: 'a string or an array of content parts',
});

const name = z.string().nullish();

const toolCall = z.object({
  id: z.string().nullish(),
  type: z.literal('function').nullish(),
  function: z.object({
    name: z.string().min(1),
    // A string of JSON, as the API has it; an object is taken too (written out as JSON).
    arguments: z.union([z.string(), jsonObject], { error: 'a string' }).nullish(),
  }),
});

const message = z.discriminatedUnion('role', [
  z.object({ role: z.enum(['system', 'developer']), content: openaiContent, name }),
  z.object({ role: z.literal('user'), content: openaiContent, name }),
  z.object({
    role: z.literal('assistant'),
    content: openaiContent.nullish(),
    name,
    tool_calls: z.array(toolCall).nullish(),
    reasoning_content: z.string().nullish(),
    // Read when it is a string (vLLM's field); other spellings some clients use are not read.
    reasoning: z.unknown().optional(),
  }),
  z.object({ role: z.literal('tool'), tool_call_id: z.string(), content: openaiContent }),
]);

const functionTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1),
    description: z.string().nullish(),
    parameters: jsonObject.nullish(),
    strict: z.boolean().nullish(),
  }),
});
/** A tool of another type (`custom`, hosted tools): accepted, not served, recorded as ignored. */
const otherTool = z.object({
  type: z.string().refine((type) => type !== 'function', expecting('a tool type')),
});

const toolChoice = z.union(
  [
    z.enum(['none', 'auto', 'required']),
    z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
    z.object({ type: z.literal('allowed_tools') }),
  ],
  { error: `'none', 'auto', 'required' or {"type": "function", "function": {"name": ...}}` },
);

const int = z.int().nullish();
const number = z.number().nullish();

export const chatCompletionRequestSchema = z.object({
  model: z.string(),
  messages: z.array(message).min(1),
  n: int,
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  temperature: number,
  top_p: number,
  max_completion_tokens: int,
  max_tokens: int,
  seed: int,
  tools: z.array(z.union([functionTool, otherTool])).nullish(),
  tool_choice: toolChoice.nullish(),
  stop: z.union([z.string(), z.array(z.string())], { error: 'a string or an array of strings' }).nullish(),
});

export type ChatCompletionRequest = z.output<typeof chatCompletionRequestSchema>;
export type OpenAIContent = z.output<typeof openaiContent>;
export type ChatCompletionMessage = ChatCompletionRequest['messages'][number];
