// A judge's verdict as kept in a rollout's `rewardDetails.verdicts`: the one shape the group
// runner (group judges) and @shears/judges' judgeReward write, and the CLI viewer reads. A
// Verdict becomes one through `verdictRecord` (contracts/judge.ts).
import { z } from 'zod';
import { usageSchema } from './trajectory.js';

const scoredVerdictRecordSchema = z.object({
  /** The judge's id. */
  judge: z.string(),
  status: z.literal('scored'),
  score: z.number(),
  rationale: z.string().optional(),
  /** Per-dimension scores, each on its rubric's scale. */
  dimensions: z.record(z.string(), z.number()).optional(),
  /** Tokens and cost of the judge call(s). */
  usage: usageSchema.optional(),
  cached: z.literal(true).optional(),
  /** A panel's spread of member scores (std, range, flagged). */
  disagreement: z.unknown().optional(),
  /** The verdict's remaining details (a panel's members, an injection flag, a rubric hash, ...). */
  details: z.record(z.string(), z.unknown()).optional(),
});

const failedVerdictRecordSchema = z.object({
  judge: z.string(),
  status: z.literal('failed'),
  /** timeout | unparseable | out_of_range | server_error | quorum | aborted | other */
  kind: z.string(),
  reason: z.string(),
  usage: usageSchema.optional(),
});

export const verdictRecordSchema = z.discriminatedUnion('status', [
  scoredVerdictRecordSchema,
  failedVerdictRecordSchema,
]);
export type VerdictRecord = z.infer<typeof verdictRecordSchema>;
