// Judge contract: a verdict on one trajectory (or a whole group). A failed verdict is a
// failure, never a score of 0.
import type { VerdictRecord } from '../schemas/verdict-record.js';
import type { ChatMessage } from './chat.js';
import type { Usage } from './server.js';

export interface JudgeSubject {
  taskId: string;
  /** The task as the agent saw it. */
  task: string;
  /** The trajectory's messages (system, user, assistant with tool calls, tool results). */
  messages: ChatMessage[];
  /** Final answer text, when known. */
  finalResponse?: string | null;
  /** A reference answer or gold solution, when the task has one. */
  reference?: string;
  metadata?: Record<string, unknown>;
}

export type Verdict =
  | {
      status: 'scored';
      /** Composite score in [0, 1]. */
      score: number;
      /** Named rubric dimensions, each on its own scale (the default rubric uses 0-10). */
      dimensions?: Record<string, number>;
      rationale?: string;
      usage?: Usage;
      judgeId?: string;
      /** True when the verdict came from the cache. */
      cached?: boolean;
      details?: Record<string, unknown>;
    }
  | {
      status: 'failed';
      /** timeout | unparseable | out_of_range | server_error | quorum | aborted | other */
      kind: string;
      reason: string;
      usage?: Usage;
      judgeId?: string;
    };

export interface JudgeV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  judge(subject: JudgeSubject, options?: { signal?: AbortSignal }): Promise<Verdict>;
}

/** Scores all rollouts of a group in one go; returns one verdict per subject, in input order. */
export interface GroupJudgeV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  judgeGroup(subjects: JudgeSubject[], options?: { signal?: AbortSignal }): Promise<Verdict[]>;
}

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
