// zod schema for what `runAgent` returns (the `AgentResult` interface of
// contracts/agent-result.ts), for checking a result that crossed a process or file boundary. The
// interface stays the source of truth for the loop; contracts/agent-result.ts holds the
// compile-time check that fails the typecheck when the two drift.
import { z } from 'zod';
import { chatMessageSchema } from './chat-message.js';
import {
  tokenSequenceSchema,
  toolErrorRecordSchema,
  trajectoryStepSchema,
  usageSchema,
} from './trajectory.js';

/** Why the agent loop stopped (`AgentStopReason`). */
export const agentStopReasonSchema = z.enum([
  'answer',
  'max_turns',
  'max_tokens',
  'token_budget',
  'cost_budget',
  'wall_clock',
  'server_error',
  'aborted',
]);

export const agentTimingsSchema = z.object({
  totalMs: z.number().nonnegative(),
  chatMs: z.number().nonnegative(),
  toolMs: z.number().nonnegative(),
});

/** Exact tokens of a rollout on a managed server (`TokenRecord`). */
export const tokenRecordSchema = z.object({
  sequences: z.array(tokenSequenceSchema),
  splits: z.number().int().nonnegative(),
});

export const agentResultSchema = z.object({
  /** The whole conversation: prompt, assistant turns, tool results. */
  messages: z.array(chatMessageSchema),
  turnsUsed: z.number().int().nonnegative(),
  finishedNaturally: z.boolean(),
  /** The final answer text when the model finished naturally. */
  finalResponse: z.string().nullable(),
  reasoningPerTurn: z.array(z.string().nullable()),
  toolErrors: z.array(toolErrorRecordSchema),
  steps: z.array(trajectoryStepSchema),
  usage: usageSchema,
  timings: agentTimingsSchema,
  stopReason: agentStopReasonSchema,
  /** The error that ended the loop; any value (a ServerError in memory, a plain object after JSON). */
  error: z.unknown().optional(),
  tokenRecord: tokenRecordSchema.optional(),
  policyRefusals: z.number().int().nonnegative(),
});
