// zod schema for what `runAgent` returns (the `AgentResult` interface of agent-loop.ts), for
// checking a result that crossed a process or file boundary. The interface stays the source of
// truth for the loop; the compile-time check at the bottom fails the typecheck when the two drift.
import { z } from 'zod';
import type { AgentResult } from '../agent-loop.js';
import type { ChatMessage } from '../contracts/chat.js';
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

// Compile-time agreement between the schema and the interface: the keys are the same and every
// field but `messages` is assignable both ways, so a field added to, removed from or retyped in
// either one breaks the typecheck. Parsed messages need only be usable as `ChatMessage`: the
// interface's content parts and tool calls lack the index signature zod's loose objects carry.
type MutuallyAssignable<TLeft, TRight> = [TLeft] extends [TRight]
  ? [TRight] extends [TLeft]
    ? true
    : false
  : false;
type Assert<TCondition extends true> = TCondition;
type ParsedAgentResult = z.output<typeof agentResultSchema>;
// biome-ignore lint/correctness/noUnusedVariables: a compile-time check, never used at run time
type SchemaAgreesWithInterface = Assert<
  MutuallyAssignable<
    [keyof ParsedAgentResult, Omit<ParsedAgentResult, 'messages'>, ParsedAgentResult['messages']],
    [keyof AgentResult, Omit<AgentResult, 'messages'>, ParsedAgentResult['messages'] & ChatMessage[]]
  >
>;
