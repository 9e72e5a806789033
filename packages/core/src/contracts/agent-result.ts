// What one agent loop returns (`runAgent`, or an env's own `doRollout`): the conversation, its
// steps and tool errors, usage, timings and why it stopped. Its zod schema, for a result that
// crossed a process or file boundary, is schemas/agent-result.ts; the check at the bottom fails
// the typecheck when the two drift.
import type { z } from 'zod';
import type { agentResultSchema } from '../schemas/agent-result.js';
import type { ToolErrorRecord, TrajectoryStep } from '../schemas/trajectory.js';
import type { ChatMessage } from './chat.js';
import type { TokenRecord, Usage } from './server.js';

/** Why the loop stopped. */
export type AgentStopReason =
  | 'answer'
  | 'max_turns'
  /** The server cut the last reply at its token limit (`finish_reason: "length"`). */
  | 'max_tokens'
  | 'token_budget'
  | 'cost_budget'
  | 'wall_clock'
  | 'server_error'
  | 'aborted';

export interface AgentTimings {
  totalMs: number;
  chatMs: number;
  toolMs: number;
}

export interface AgentResult {
  /** The whole conversation: prompt, assistant turns, tool results. */
  messages: ChatMessage[];
  turnsUsed: number;
  finishedNaturally: boolean;
  /** The final answer text when the model finished naturally. */
  finalResponse: string | null;
  reasoningPerTurn: Array<string | null>;
  toolErrors: ToolErrorRecord[];
  steps: TrajectoryStep[];
  usage: Usage;
  timings: AgentTimings;
  stopReason: AgentStopReason;
  /** The error that ended the loop (a ServerError, kept so the runner can classify it). */
  error?: unknown;
  /** Exact tokens, when the server is managed. */
  tokenRecord?: TokenRecord;
  policyRefusals: number;
}

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
