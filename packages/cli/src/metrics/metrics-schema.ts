// The run metrics stream (`<out>.metrics.jsonl`): one `group` row per finished group, one
// `window` row per time window and one `step` row per trainer step seen on the trajectory API.
// Rows are versioned; a reader parses them with `metricsRowSchema` (docs/runs.md describes each field).
import { rolloutOutcomeSchema } from '@shears/core';
import { z } from 'zod';

/** count / mean / population std / min / max of some values; the numbers are null when count is 0. */
export const summaryStatsSchema = z.object({
  count: z.number().int(),
  mean: z.number().nullable(),
  std: z.number().nullable(),
  min: z.number().nullable(),
  max: z.number().nullable(),
});
export type SummaryStats = z.infer<typeof summaryStatsSchema>;

const toolMetricsSchema = z.object({
  calls: z.number().int(),
  errors: z.number().int(),
  /** errors / calls; null without calls. */
  errorRate: z.number().nullable(),
  /** Mean tool latency (ms) as the agent loop measured it. */
  meanLatencyMs: z.number().nullable(),
});

/**
 * Milliseconds summed over the rollouts' last attempts: `model` (chat calls), `tools` (tool
 * execution), `sandboxAcquire`, `reward` (env verifier and judges, whole), `judges` (the judge's
 * share of the reward plus group-judge calls), `sandboxRelease`. Rollouts of records without
 * timings count 0 for the parts they lack; `missingTimings` says how many.
 */
export const latencySchema = z.object({
  model: z.number(),
  tools: z.number(),
  sandboxAcquire: z.number(),
  reward: z.number(),
  judges: z.number(),
  sandboxRelease: z.number(),
  missingTimings: z.number().int(),
});
export type LatencySplit = z.infer<typeof latencySchema>;

const judgeMetricsSchema = z.object({
  /** Judge verdicts recorded in the rollouts (scored and failed). */
  verdicts: z.number().int(),
  /** Failed verdicts, by kind (timeout, unparseable, ...). */
  failures: z.record(z.string(), z.number().int()),
  /** Rollouts whose outcome is judge_failure. */
  judgeFailureRollouts: z.number().int(),
  /** Panel verdicts with a disagreement measure, their mean std and how many were flagged. */
  panels: z.number().int(),
  meanDisagreementStd: z.number().nullable(),
  flagged: z.number().int(),
});

const tokenMetricsSchema = z.object({
  prompt: z.number(),
  completion: z.number(),
  /** Completion tokens per second of wall time (the group's wall time, or the window's length). */
  completionPerSecond: z.number().nullable(),
  costUsd: z.number(),
});

/** What the trajectory API said (serve, train): the trainer's step and the queue ahead of it. */
const trainerMetricsSchema = z.object({
  /** Trainer step when the group started (the status poll before it). */
  stepAtStart: z.number().int(),
  /** Latest trainer step known when the group finished (from any worker's poll). */
  stepAtEnd: z.number().int(),
  /** Trainer steps taken while the group ran: how far off-policy its data already is, in steps. */
  lagSteps: z.number().int(),
  /** Groups queued on the API for the trainer at the start of the group (GET /status-env). */
  queueSize: z.number().int(),
});

const common = {
  version: z.literal(1),
  /** ISO time the row was written. */
  at: z.string(),
  /** Seconds since the metrics stream started. */
  elapsedSeconds: z.number(),
  command: z.enum(['process', 'serve', 'train', 'evaluate']),
};

/** The improvement loop's view of a group (serve, train with `loop`): where it came from, at which level. */
const groupLoopSchema = z.object({
  /** Set on a replayed group: the id of the group it replays (its rollouts ran then, not now). */
  replayOf: z.string().optional(),
  /** `train`: the training env; `capability`: loop.safety's capability data. */
  source: z.enum(['train', 'capability']).optional(),
  /** The curriculum level (a difficulty value) the group's task was drawn at. */
  curriculumLevel: z.union([z.number(), z.string()]).optional(),
});

export const groupMetricsSchema = z.object({
  kind: z.literal('shears.metrics.group'),
  ...common,
  /** The `train` worker that ran the group. */
  worker: z.string().optional(),
  groupId: z.string(),
  envId: z.string(),
  taskId: z.string(),
  rollouts: z.number().int(),
  /** Rewards of the counted rollouts (scored and model failures). */
  reward: summaryStatsSchema,
  /** Share of counted rollouts that solved their task (the run's success rule); null with none counted. */
  passRate: z.number().nullable(),
  outcomes: z.partialRecord(rolloutOutcomeSchema, z.number().int()),
  /** No two counted scores differ (or none was counted): the group teaches the policy nothing. */
  zeroSignal: z.boolean(),
  dropped: z.string().nullable(),
  partial: z.boolean(),
  advantage: summaryStatsSchema,
  turns: summaryStatsSchema,
  toolCalls: z.number().int(),
  toolErrors: z.number().int(),
  tools: z.record(z.string(), toolMetricsSchema),
  tokens: tokenMetricsSchema,
  latencyMs: latencySchema,
  judges: judgeMetricsSchema,
  wallTimeSeconds: z.number(),
  trainer: trainerMetricsSchema.optional(),
  loop: groupLoopSchema.optional(),
});
export type GroupMetrics = z.infer<typeof groupMetricsSchema>;

const taskMetricsSchema = z.object({
  groups: z.number().int(),
  reward: summaryStatsSchema,
  passRate: z.number().nullable(),
});

/** The aggregate over a set of groups (a window, or the groups since the last trainer step). */
const aggregateFields = {
  groups: z.number().int(),
  /** Groups finished per second over the row's span. */
  groupsPerSecond: z.number().nullable(),
  rollouts: z.number().int(),
  reward: summaryStatsSchema,
  perTask: z.record(z.string(), taskMetricsSchema),
  passRate: z.number().nullable(),
  outcomes: z.partialRecord(rolloutOutcomeSchema, z.number().int()),
  zeroSignalShare: z.number().nullable(),
  droppedGroups: z.number().int(),
  partialGroups: z.number().int(),
  advantage: summaryStatsSchema,
  turns: summaryStatsSchema,
  toolCalls: z.number().int(),
  toolErrorRate: z.number().nullable(),
  tools: z.record(z.string(), toolMetricsSchema),
  tokens: tokenMetricsSchema,
  latencyMs: latencySchema,
  judges: judgeMetricsSchema,
  /** Latest trajectory-API view (serve, train): trainer step, queue, the largest lag of a group in the span. */
  trainer: z
    .object({ step: z.number().int(), queueSize: z.number().int(), maxLagSteps: z.number().int().nullable() })
    .optional(),
  /**
   * With `loop` set: replayed groups sent in the span (not in the statistics above: their
   * rollouts ran earlier) and their share of all groups sent, groups of capability data, and the
   * curriculum level at the span's end.
   */
  loop: z
    .object({
      replayGroups: z.number().int(),
      replayShare: z.number().nullable(),
      capabilityGroups: z.number().int(),
      curriculumLevel: z.union([z.number(), z.string()]).nullable(),
    })
    .optional(),
};

export const windowMetricsSchema = z.object({
  kind: z.literal('shears.metrics.window'),
  ...common,
  /** The window's span, ISO times; the last window of a run is cut short at its end (`final`). */
  start: z.string(),
  end: z.string(),
  seconds: z.number(),
  final: z.boolean(),
  ...aggregateFields,
});
export type WindowMetrics = z.infer<typeof windowMetricsSchema>;

export const stepMetricsSchema = z.object({
  kind: z.literal('shears.metrics.step'),
  ...common,
  /** The trainer step now reported by the trajectory API; the aggregate covers the groups finished since the previous step row. */
  step: z.number().int(),
  previousStep: z.number().int().nullable(),
  seconds: z.number(),
  ...aggregateFields,
});
export type StepMetrics = z.infer<typeof stepMetricsSchema>;

/**
 * One optimiser step as the trainer reported it (`shears train` with the reference trainer: a line
 * of its metrics.jsonl, carried into the run's stream as it is written): the loss, the KL to the
 * reference policy, the policy's entropy and the batch's mean reward, by trainer step. A value
 * the trainer did not report is null.
 */
export const trainerStepMetricsSchema = z.object({
  kind: z.literal('shears.metrics.trainer'),
  ...common,
  /** The trainer's step (1 for the first optimiser step). */
  step: z.number().int(),
  /** The training loss of the step (GRPO: the clipped surrogate plus the KL term), per token. */
  loss: z.number().nullable(),
  /** KL divergence to the reference policy, nats per token (0 without a reference: beta 0). */
  kl: z.number().nullable(),
  /** Mean entropy of the policy over the trained tokens, nats per token. */
  entropy: z.number().nullable(),
  /** Mean score of the batch's sequences. */
  rewardMean: z.number().nullable(),
  clipFraction: z.number().nullable(),
  gradNorm: z.number().nullable(),
  /** The batch carried no signal (all advantages zero): no step was taken. */
  skipped: z.boolean(),
});
export type TrainerStepMetrics = z.infer<typeof trainerStepMetricsSchema>;

/** An evaluation during training (loop.evaluation): held-out tasks, k samples each, against the current policy. */
export const evalMetricsSchema = z.object({
  kind: z.literal('shears.metrics.eval'),
  ...common,
  /** The trainer step the evaluation was started at. */
  step: z.number().int(),
  env: z.string(),
  k: z.number().int(),
  tasks: z.number().int(),
  /** Unbiased pass@k (k = 1, 2, 4, …, k) averaged over the tasks. */
  passAtK: z.record(z.string(), z.number()),
  /** Mean score over tasks, with a bootstrap interval (evaluate.bootstrap_samples, evaluate.confidence). */
  meanScore: z.object({
    mean: z.number().nullable(),
    low: z.number().nullable(),
    high: z.number().nullable(),
    confidence: z.number(),
  }),
  /** pass@1 over tasks with a bootstrap interval (same samples and confidence); null without a task result. */
  passAt1Interval: z.object({ mean: z.number(), low: z.number(), high: z.number() }).nullable(),
  /** False when a task got no complete result (the run stopped, rollouts failed): the numbers cover part of the set. */
  complete: z.boolean(),
  missing: z.number().int(),
  seconds: z.number(),
});
export type EvalMetrics = z.infer<typeof evalMetricsSchema>;

/** An event of the improvement loop: the curriculum moved, the safety monitor shifted or restored the mix. */
export const loopEventMetricsSchema = z.object({
  kind: z.literal('shears.metrics.loop'),
  ...common,
  event: z.enum(['curriculum_advanced', 'curriculum_fell_back', 'safety_regressed', 'safety_recovered']),
  /** Latest trainer step known when it happened. */
  step: z.number().int().nullable(),
  /** Curriculum: the levels (difficulty values) and the rolling mean that moved it. */
  from: z.union([z.number(), z.string()]).optional(),
  to: z.union([z.number(), z.string()]).optional(),
  mean: z.number().optional(),
  /** Safety: the evaluation score, its baseline and tolerance, and the data mix weights now in force. */
  score: z.number().optional(),
  baseline: z.number().optional(),
  tolerance: z.number().optional(),
  weights: z.record(z.string(), z.number()).optional(),
});
export type LoopEventMetrics = z.infer<typeof loopEventMetricsSchema>;

export const metricsRowSchema = z.discriminatedUnion('kind', [
  groupMetricsSchema,
  windowMetricsSchema,
  stepMetricsSchema,
  trainerStepMetricsSchema,
  evalMetricsSchema,
  loopEventMetricsSchema,
]);
export type MetricsRow = z.infer<typeof metricsRowSchema>;
