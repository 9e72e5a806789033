// The OpenAI-compatible chat completion as this client reads it (vercel/ai's `*-api.ts` habit):
// only the fields it reads, `.nullish()` where hosts leave them out, and checked at the border,
// so a malformed answer is a ServerError naming the field (`choices.0.message.tool_calls.0.function:
// expected object`) rather than a crash further in or a silent default. The message itself is a
// loose object: every other field it carries (reasoning_content, reasoning, reasoning_details,
// refusal, annotations, …) is kept as the host sent it.
import { z } from 'zod';

const toolCallApiSchema = z.looseObject({
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.looseObject({
    name: z.string(),
    /** JSON text, as the OpenAI API sends it. */
    arguments: z.string().nullish(),
  }),
});

const messageApiSchema = z.looseObject({
  role: z.string().nullish(),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]).nullish(),
  tool_calls: z.array(toolCallApiSchema).nullish(),
});

export const openaiChatResponseSchema = z.object({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        index: z.number().int().nonnegative().nullish(),
        message: messageApiSchema,
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1, 'the response holds no choices'),
  usage: z
    .object({
      prompt_tokens: z.number().nullish(),
      completion_tokens: z.number().nullish(),
      total_tokens: z.number().nullish(),
      completion_tokens_details: z.object({ reasoning_tokens: z.number().nullish() }).nullish(),
      /** OpenRouter reports the charge as `usage.cost` (USD). */
      cost: z.number().nullish(),
    })
    .nullish(),
});

export type OpenAIChatResponse = z.output<typeof openaiChatResponseSchema>;
