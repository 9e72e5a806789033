// zod schemas for chat messages and tool calls in the OpenAI wire shape (extra keys kept).
import { z } from 'zod';

export const toolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

export const chatMessageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.null(), z.array(z.looseObject({ type: z.string() }))]),
  tool_calls: z.array(toolCallSchema).optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
  reasoning_content: z.string().optional(),
});
