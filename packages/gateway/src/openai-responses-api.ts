// The Responses request as the gateway reads it (`POST /v1/responses`): only the fields it acts
// upon, typed as the `openai` SDK types them, optional ones `.nullish()`. Input items of the
// types it serves (messages, reasoning, function and custom tool calls and their outputs), the
// function, custom and namespace tools; other tools are accepted by their type and recorded as
// ignored, other item types are refused naming the type.
import { z } from 'zod';
import { expecting, jsonObject } from './api-schema.js';
import { openaiContent } from './openai-chat-api.js';

const callId = z.string();
const namespace = z.string().nullish();

/** Reasoning text parts and summary parts: only their text is read. */
const reasoningParts = z.array(z.object({ type: z.string(), text: z.string() })).nullish();

const inputItem = z.discriminatedUnion('type', [
  // `type` may be left out of a message (`{role, content}`).
  z.object({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: openaiContent,
  }),
  z.object({
    type: z.literal('reasoning'),
    content: reasoningParts,
    summary: reasoningParts,
    encrypted_content: z.string().nullish(),
  }),
  z.object({
    type: z.literal('function_call'),
    call_id: callId,
    name: z.string().min(1),
    namespace,
    // A string of JSON, as the API has it; an object is taken too (written out as JSON).
    arguments: z.union([z.string(), jsonObject], { error: 'a string' }).nullish(),
  }),
  z.object({
    type: z.literal('custom_tool_call'),
    call_id: callId,
    name: z.string().min(1),
    namespace,
    input: z.string(),
  }),
  z.object({
    type: z.enum(['function_call_output', 'custom_tool_call_output']),
    call_id: callId,
    output: openaiContent,
  }),
]);

const description = z.string().nullish();
const functionTool = z.object({
  type: z.literal('function'),
  name: z.string().min(1),
  description,
  parameters: jsonObject.nullish(),
  strict: z.boolean().nullish(),
});
const customTool = z.object({
  type: z.literal('custom'),
  name: z.string().min(1),
  description,
  format: z
    .object({ type: z.string(), syntax: z.string().nullish(), definition: z.string().nullish() })
    .nullish(),
});
/** A tool of a type the gateway does not serve (hosted tools): accepted, recorded as ignored. */
const otherTool = (served: readonly string[]) =>
  z.object({
    type: z.string().refine((type) => !served.includes(type), expecting('a tool type')),
  });
const namespaceTool = z.object({
  type: z.literal('namespace'),
  name: z.string().min(1),
  tools: z.array(
    z.union([z.discriminatedUnion('type', [functionTool, customTool]), otherTool(['function', 'custom'])]),
  ),
});
const tool = z.union([
  z.discriminatedUnion('type', [functionTool, customTool, namespaceTool]),
  otherTool(['function', 'custom', 'namespace']),
]);

const toolChoice = z.union(
  [
    z.enum(['none', 'auto', 'required']),
    z.object({ type: z.enum(['function', 'custom']), name: z.string(), namespace }),
    // Other choices (`allowed_tools`, hosted tools): recorded as ignored.
    z.object({
      type: z
        .string()
        .refine((type) => type !== 'function' && type !== 'custom', expecting('a tool choice type')),
    }),
  ],
  { error: "'none', 'auto', 'required' or a tool choice object" },
);

const number = z.number().nullish();
const boolean = z.boolean().nullish();

export const responsesRequestSchema = z.object({
  model: z.string(),
  input: z.union([z.string(), z.array(inputItem)], { error: 'a string or an array of input items' }),
  instructions: z.string().nullish(),
  previous_response_id: z.string().nullish(),
  stream: boolean,
  store: boolean,
  temperature: number,
  top_p: number,
  max_output_tokens: z.int().nullish(),
  tools: z.array(tool).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: boolean,
  include: z.array(z.string()).nullish(),
  reasoning: z.object({ effort: z.string().nullish(), summary: z.string().nullish() }).nullish(),
  metadata: jsonObject.nullish(),
});

export type ResponsesRequest = z.output<typeof responsesRequestSchema>;
export type ResponsesInputItem = Extract<ResponsesRequest['input'], unknown[]>[number];
export type ResponsesTool = NonNullable<ResponsesRequest['tools']>[number];
