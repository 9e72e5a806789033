// A panel of judges on different models or endpoints: all judge concurrently, the successful
// verdicts are aggregated (mean, median, trimmed mean, majority vote), disagreement is
// recorded and flagged above a threshold, and too few successful judges is a judge failure.
import {
  InvalidArgumentError,
  type JudgeSubject,
  type JudgeV1,
  type Usage,
  type Verdict,
} from '@shears/core';
import {
  AGGREGATION_METHODS,
  type AggregationMethod,
  aggregate,
  type Disagreement,
  disagreement,
} from './aggregate.js';
import type { InjectionRecord } from './injection-policy.js';
import { JUDGE_INJECTION_FLAG } from './injection-screen.js';
import { addUsage } from './judge-cost.js';

export interface JudgePanelSettings {
  id?: string;
  judges: readonly JudgeV1[];
  aggregation?: AggregationMethod;
  /** Minimum number of successful judges (default: a majority of the panel). */
  quorum?: number;
  /** Flag the item when the judges' scores span more than this (default 0.3). */
  disagreementThreshold?: number;
}

export interface PanelMemberResult {
  judgeId: string;
  status: 'scored' | 'failed';
  score?: number;
  kind?: string;
  reason?: string;
  rationale?: string;
  /** What the member's judge was shown (prompt sha256 and nonce). */
  judgeInput?: unknown;
  /** The member's record of a suspected injection, when it had one. */
  injection?: unknown;
}

export interface PanelDetails {
  aggregation: AggregationMethod;
  members: PanelMemberResult[];
  disagreement: Disagreement;
  successful: number;
  quorum: number;
  /** A member's record of a suspected injection (the screen reads the same text for every member). */
  injection?: unknown;
  flags?: string[];
}

/** A member's record when its score is a penalty that no other member's score may outvote. */
function penalisedBy(verdict: Extract<Verdict, { status: 'scored' }>): InjectionRecord | undefined {
  const record = verdict.details?.injection as InjectionRecord | undefined;
  return record?.action === 'zero' && (record.origin === 'agent' || record.cause === 'judge_reply_echo')
    ? record
    : undefined;
}

export function createJudgePanel(settings: JudgePanelSettings): JudgeV1 {
  const judges = settings.judges;
  if (judges.length === 0)
    throw new InvalidArgumentError({
      argument: 'judges',
      value: judges,
      message: 'A judge panel needs at least one judge',
    });
  const aggregation = settings.aggregation ?? 'trimmed_mean';
  if (!AGGREGATION_METHODS.includes(aggregation)) {
    throw new InvalidArgumentError({
      argument: 'aggregation',
      value: aggregation,
      message: `Unknown aggregation "${aggregation}" (available: ${AGGREGATION_METHODS.join(', ')})`,
    });
  }
  const quorum = settings.quorum ?? Math.floor(judges.length / 2) + 1;
  if (!Number.isInteger(quorum) || quorum < 1 || quorum > judges.length) {
    throw new InvalidArgumentError({
      argument: 'quorum',
      value: quorum,
      message: `quorum must be an integer from 1 to ${judges.length} (the panel size)`,
    });
  }
  const threshold = settings.disagreementThreshold ?? 0.3;
  const id = settings.id ?? `panel(${judges.map((judge) => judge.id).join(',')})`;

  return {
    specificationVersion: 'v1',
    id,
    async judge(subject: JudgeSubject, options = {}): Promise<Verdict> {
      const verdicts = await Promise.all(
        judges.map(async (judge): Promise<Verdict> => {
          try {
            return await judge.judge(subject, options);
          } catch (error) {
            // A judge that throws breaks its contract; it still only counts as one failed member.
            return {
              status: 'failed',
              kind: 'other',
              reason: error instanceof Error ? error.message : String(error),
              judgeId: judge.id,
            };
          }
        }),
      );
      let usage: Usage | undefined;
      const members: PanelMemberResult[] = verdicts.map((verdict, index) => {
        usage = addUsage(usage, verdict.usage);
        const judgeId = judges[index]!.id;
        if (verdict.status !== 'scored')
          return { judgeId, status: 'failed', kind: verdict.kind, reason: verdict.reason };
        const { judgeInput, injection } = verdict.details ?? {};
        return {
          judgeId,
          status: 'scored',
          score: verdict.score,
          rationale: verdict.rationale,
          ...(judgeInput !== undefined ? { judgeInput } : {}),
          ...(injection !== undefined ? { injection } : {}),
        };
      });
      const scored = verdicts.filter(
        (verdict): verdict is Extract<Verdict, { status: 'scored' }> => verdict.status === 'scored',
      );
      // A member that scored the rollout a penalty for its own text (or for a reply it broke) sets
      // the panel's score, quorum or not: the same text faces every member, and averaging it away would let an
      // injection that one member caught still pay.
      const penalties = scored.filter((verdict) => penalisedBy(verdict) !== undefined);
      if (penalties.length > 0) {
        const lowest = penalties.reduce((low, verdict) => (verdict.score < low.score ? verdict : low));
        const record = penalisedBy(lowest)!;
        return {
          status: 'scored',
          score: lowest.score,
          rationale: `${lowest.judgeId ?? 'a member'}: ${lowest.rationale ?? ''}`,
          usage,
          judgeId: id,
          details: {
            aggregation,
            members,
            disagreement: disagreement(
              scored.map((verdict) => verdict.score),
              threshold,
            ),
            successful: scored.length,
            quorum,
            injection: record,
            flags: [JUDGE_INJECTION_FLAG],
          } satisfies PanelDetails as unknown as Record<string, unknown>,
        };
      }
      if (scored.length < quorum) {
        const failures = members
          .filter((member) => member.status === 'failed')
          .map((member) => `${member.judgeId}: ${member.kind} (${member.reason})`)
          .join('; ');
        return {
          status: 'failed',
          kind: 'quorum',
          reason: `only ${scored.length} of ${judges.length} judges gave a verdict (quorum ${quorum}): ${failures}`,
          usage,
          judgeId: id,
        };
      }
      const scores = scored.map((verdict) => verdict.score);
      const dimensionNames = new Set(scored.flatMap((verdict) => Object.keys(verdict.dimensions ?? {})));
      const dimensions: Record<string, number> = {};
      for (const name of dimensionNames) {
        const values = scored
          .map((verdict) => verdict.dimensions?.[name])
          .filter((value): value is number => value !== undefined);
        // Dimensions are on their own scales; a vote only makes sense for the composite.
        if (values.length > 0)
          dimensions[name] = aggregate(aggregation === 'majority' ? 'median' : aggregation, values);
      }
      // A flag raised by any member is the panel's flag: the record must not lose it.
      const flaggedMember = members.find((member) => member.injection !== undefined);
      const details: PanelDetails = {
        aggregation,
        members,
        disagreement: disagreement(scores, threshold),
        successful: scored.length,
        quorum,
        ...(flaggedMember ? { injection: flaggedMember.injection, flags: [JUDGE_INJECTION_FLAG] } : {}),
      };
      return {
        status: 'scored',
        score: aggregate(aggregation, scores),
        dimensions: Object.keys(dimensions).length > 0 ? dimensions : undefined,
        rationale: members
          .filter((member) => member.rationale)
          .map((member) => `${member.judgeId}: ${member.rationale}`)
          .join('\n'),
        usage,
        judgeId: id,
        details: details as unknown as Record<string, unknown>,
      };
    },
  };
}
