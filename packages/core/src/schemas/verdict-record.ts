// A judge's verdict as kept in a rollout's `rewardDetails.verdicts`: the one shape the group
// runner (group judges) and @shears/judges' judgeReward write, and the CLI viewer reads.
import { z } from 'zod';
import type { Verdict } from '../contracts/judge.js';
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

/** The record of `verdict` for `rewardDetails.verdicts`; `judgeId` names it when the verdict does not. */
export function verdictRecord(verdict: Verdict, judgeId: string): VerdictRecord {
  const judge = verdict.judgeId ?? judgeId;
  if (verdict.status === 'failed') {
    return {
      judge,
      status: 'failed',
      kind: verdict.kind,
      reason: verdict.reason,
      ...(verdict.usage ? { usage: verdict.usage } : {}),
    };
  }
  const { disagreement, ...details } = verdict.details ?? {};
  return {
    judge,
    status: 'scored',
    score: verdict.score,
    ...(verdict.rationale ? { rationale: verdict.rationale } : {}),
    ...(verdict.dimensions ? { dimensions: verdict.dimensions } : {}),
    ...(verdict.usage ? { usage: verdict.usage } : {}),
    ...(verdict.cached ? { cached: true as const } : {}),
    ...(disagreement !== undefined ? { disagreement } : {}),
    ...(Object.keys(details).length > 0 ? { details } : {}),
  };
}
