// The trajectory of one rollout (the seed's Trajectory / TrajectoryStep / ToolCall, extended
// with outcome, usage, timings and token records), and its zod schema for reading JSONL back.
import { z } from 'zod';
import { chatMessageSchema } from './chat-message.js';

/** How a rollout ended. Only `scored` and `model_failure` enter group statistics. */
export const rolloutOutcomeSchema = z.enum([
  /** Finished and rewarded. */
  'scored',
  /** The model misbehaved (no answer, garbage, turn limit); rewarded 0 and kept in the statistics. */
  'model_failure',
  /** Sandbox or server died: kept out of group statistics, retried within a budget. */
  'infra_failure',
  /** The reward's judge failed: kept out, retried. */
  'judge_failure',
  /** The env's own reward threw or returned no finite score (a bug in the env): kept out, not retried. */
  'env_error',
  /** The rollout ran past its wall-clock limit. */
  'timeout',
  /** Cancelled from outside. */
  'aborted',
]);
export type RolloutOutcome = z.infer<typeof rolloutOutcomeSchema>;

export const trajectoryToolCallSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.string(),
  result: z.string(),
  error: z.string().nullish(),
  latencyMs: z.number(),
  /** The result was persisted into the sandbox because of its size. */
  persisted: z.boolean().optional(),
});
export type TrajectoryToolCall = z.infer<typeof trajectoryToolCallSchema>;

export const trajectoryStepSchema = z.object({
  stepId: z.number().int(),
  /** Reasoning of this turn (`reasoning_content` / `reasoning` / `reasoning_details`). */
  thought: z.string().nullish(),
  /** Assistant text of this turn. */
  content: z.string().nullish(),
  toolCalls: z.array(trajectoryToolCallSchema),
  timestamp: z.number(),
  chatMs: z.number(),
  toolMs: z.number(),
});
export type TrajectoryStep = z.infer<typeof trajectoryStepSchema>;

export const toolErrorRecordSchema = z.object({
  turn: z.number().int(),
  toolName: z.string(),
  /** Arguments text, truncated to 200 characters. */
  arguments: z.string(),
  error: z.string(),
  /** Tool result text, truncated to 500 characters. */
  toolResult: z.string(),
});
export type ToolErrorRecord = z.infer<typeof toolErrorRecordSchema>;

export const usageSchema = z.object({
  promptTokens: z.number(),
  completionTokens: z.number(),
  totalTokens: z.number(),
  reasoningTokens: z.number().optional(),
  costUsd: z.number().optional(),
});

export const tokenSequenceSchema = z.object({
  tokens: z.array(z.number().int()),
  masks: z.array(z.number().int()),
  logprobs: z.array(z.number()),
  /** Policy version of each generated turn, when the server sends one (see TokenSequence). */
  policyVersions: z.array(z.number().int()).optional(),
});

export const trajectorySchema = z.object({
  rolloutId: z.string(),
  taskId: z.string(),
  taskDescription: z.string(),
  modelId: z.string(),
  outcome: rolloutOutcomeSchema,
  outcomeReason: z.string().nullish(),
  /** Attempts made (retries after infrastructure or judge failures). */
  attempts: z.number().int(),
  messages: z.array(chatMessageSchema),
  steps: z.array(trajectoryStepSchema),
  finalResponse: z.string().nullable(),
  finishedNaturally: z.boolean(),
  turnsUsed: z.number().int(),
  /** The composed reward; null when the rollout has no valid score. */
  reward: z.number().nullable(),
  rewardComponents: z.record(z.string(), z.number()).optional(),
  rewardDetails: z.record(z.string(), z.unknown()).optional(),
  advantage: z.number().nullish(),
  /** Whether the rollout solved its task, as the env's reward says (`RewardResult.success`). */
  success: z.boolean().nullish(),
  judgeScore: z.number().nullish(),
  toolErrors: z.array(toolErrorRecordSchema),
  /** Tool calls refused by the action policy. */
  policyRefusals: z.number().int(),
  usage: usageSchema,
  tokenCount: z.number().int(),
  wallTimeSeconds: z.number(),
  /**
   * Where the last attempt's time went outside the agent loop (model and tool time are in
   * `steps[].chatMs` / `toolMs`): acquiring the sandbox, the reward (env verifier and judges), a
   * group judge's call (shared by the group), releasing the sandbox. Absent in older records.
   */
  timings: z
    .object({
      sandboxAcquireMs: z.number(),
      rewardMs: z.number(),
      groupJudgeMs: z.number().optional(),
      sandboxReleaseMs: z.number(),
    })
    .optional(),
  /** Exact token record (phase 2 only). */
  tokens: z.object({ sequences: z.array(tokenSequenceSchema), splits: z.number().int() }).optional(),
  /** Toolsets this rollout's group was offered. */
  toolsets: z.array(z.string()).optional(),
});
export type Trajectory = z.infer<typeof trajectorySchema>;
