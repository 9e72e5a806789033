// One scored group as shears writes it to JSONL: the rollouts, their scores and advantages,
// group statistics, and (when tokens are present) the Atropos wire group.
import { z } from 'zod';
import { scoredDataSchema } from './scored-data.js';
import { trajectorySchema } from './trajectory.js';

export const groupStatsSchema = z.object({
  /** Rollouts that entered the statistics (scored or model failures). */
  counted: z.number().int(),
  /** Rollouts kept out (infrastructure, judge failures, timeouts, aborts). */
  excluded: z.number().int(),
  mean: z.number().nullable(),
  /** Population std of the counted scores (descriptive; the `grpo` estimator divides by the sample std). */
  std: z.number().nullable(),
  min: z.number().nullable(),
  max: z.number().nullable(),
});
export type GroupStats = z.infer<typeof groupStatsSchema>;

export const scoredGroupRecordSchema = z.object({
  kind: z.literal('shears.group'),
  version: z.literal(1),
  groupId: z.string(),
  envId: z.string(),
  taskId: z.string(),
  item: z.looseObject({ id: z.string(), prompt: z.string() }),
  createdAt: z.string(),
  rollouts: z.array(trajectorySchema),
  /** Per rollout, in order; null when the rollout has no valid score. */
  scores: z.array(z.number().nullable()),
  advantages: z.array(z.number().nullable()),
  advantageMethod: z.string(),
  stats: groupStatsSchema,
  /**
   * Set when the group is not for training: `kind` says why (`all_equal`: every counted score is
   * equal; `no_valid_score`: no rollout was scored; `partial`: the run stopped before every
   * rollout finished), `reason` says it in words.
   */
  dropped: z
    .object({ reason: z.string(), kind: z.enum(['all_equal', 'no_valid_score', 'partial']).optional() })
    .nullish(),
  /**
   * Set when the run was stopped (Ctrl-C, a circuit breaker) before every rollout of the group
   * finished: `stopped` rollouts ended as `aborted`. A partial group has no advantages.
   */
  partial: z.object({ reason: z.string(), stopped: z.number().int() }).nullish(),
  toolsets: z.array(z.string()).optional(),
  /** The Atropos wire group, when token records exist (phase 2) or were built. */
  scoredData: scoredDataSchema.nullish(),
  wallTimeSeconds: z.number(),
  /**
   * Set by the improvement loop of `shears serve`/`train`: `replayOf` on a replayed copy of an
   * earlier group (its rollouts ran then), `source` (training env or capability data),
   * `curriculumLevel` (the difficulty its task was drawn at), `stepAdvantages` (per rollout, the
   * per-step advantages sent to the trainer instead of the scalar one).
   */
  loop: z
    .object({
      replayOf: z.string().optional(),
      source: z.enum(['train', 'capability']).optional(),
      curriculumLevel: z.union([z.number(), z.string()]).optional(),
      stepAdvantages: z.array(z.array(z.number()).nullable()).optional(),
    })
    .optional(),
});
export type ScoredGroupRecord = z.infer<typeof scoredGroupRecordSchema>;
