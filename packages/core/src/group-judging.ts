// The group judge's pass over a finished group: it scores the `scored` rollouts together; a
// scored verdict combines into the rollout's reward and joins `details.verdicts`, a failed one
// makes the rollout a judge failure (kept out of the statistics). The judge call is repeated
// within the retry budget while any verdict failed.
import type { AgentResult } from './contracts/agent-result.js';
import { type GroupJudgeV1, type JudgeSubject, type Verdict, verdictRecord } from './contracts/judge.js';
import type { Logger } from './contracts/logger.js';
import { describeError } from './errors.js';
import type { AttemptResult } from './rollout-attempt.js';

/**
 * Runs the group judge over the `scored` rollouts (in place): a scored verdict combines into the
 * reward and joins `details.verdicts`; a failed one turns the rollout into a judge failure.
 * Returns the group score per rollout index.
 */
export async function applyGroupJudge(options: {
  judge: GroupJudgeV1;
  weight: number;
  results: AttemptResult[];
  subject: (agent: AgentResult) => JudgeSubject;
  retries: number;
  logger: Logger;
  signal?: AbortSignal;
}): Promise<Map<number, number>> {
  const { judge, weight, results, signal } = options;
  const judged = results.flatMap((result, index) =>
    result.outcome === 'scored' && result.agent ? [{ index, result, agent: result.agent }] : [],
  );
  const scores = new Map<number, number>();
  if (judged.length === 0) return scores;
  const subjects = judged.map(({ agent }) => options.subject(agent));
  const failure = (kind: string, reason: string): Verdict => ({
    status: 'failed',
    kind,
    reason,
    judgeId: judge.id,
  });
  const started = performance.now();
  let verdicts: Verdict[] = [];
  for (let call = 0; call <= options.retries; call++) {
    try {
      const returned = await judge.judgeGroup(subjects, signal ? { signal } : {});
      verdicts =
        Array.isArray(returned) && returned.length === subjects.length
          ? returned.map((verdict) =>
              verdict.status === 'scored' &&
              !(Number.isFinite(verdict.score) && verdict.score >= 0 && verdict.score <= 1)
                ? failure('out_of_range', `score ${verdict.score} is outside [0, 1]`)
                : verdict,
            )
          : subjects.map(() =>
              failure(
                'other',
                `returned ${Array.isArray(returned) ? returned.length : 'no list of'} verdicts for ${subjects.length} rollouts`,
              ),
            );
    } catch (error) {
      // A group judge that throws breaks its contract; its rollouts still only fail as judge failures.
      verdicts = subjects.map(() => failure('other', `judgeGroup threw: ${describeError(error)}`));
    }
    if (signal?.aborted || verdicts.every((verdict) => verdict.status === 'scored')) break;
    if (call < options.retries)
      options.logger.warn('group judge failed; judging the group again', {
        judgeId: judge.id,
        failed: verdicts.filter((verdict) => verdict.status === 'failed').length,
      });
  }
  const seconds = (performance.now() - started) / 1000;
  judged.forEach(({ index, result }, position) => {
    const verdict = verdicts[position]!;
    result.wallTimeSeconds += seconds;
    if (result.timings) result.timings.groupJudgeMs = seconds * 1000;
    if (verdict.status === 'failed') {
      result.outcome = signal?.aborted ? 'aborted' : 'judge_failure';
      result.reason = signal?.aborted
        ? 'aborted during group judging'
        : `group judge "${verdict.judgeId ?? judge.id}" failed (${verdict.kind}): ${verdict.reason}`;
      return;
    }
    const envScore = result.reward?.score ?? 0;
    const previous = result.reward?.details?.verdicts;
    result.reward = {
      score: (1 - weight) * envScore + weight * verdict.score,
      components: { ...result.reward?.components, before_group_judge: envScore, group_judge: verdict.score },
      details: {
        ...result.reward?.details,
        verdicts: [...(Array.isArray(previous) ? previous : []), verdictRecord(verdict, judge.id)],
      },
    };
    scores.set(index, verdict.score);
  });
  return scores;
}
