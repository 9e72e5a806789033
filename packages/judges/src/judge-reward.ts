// Turns a judge (a rubric judge, a panel, any JudgeV1) into an env reward function. The judge
// scores the finished rollout's trajectory; its verdict is kept in the reward details under
// `verdicts` (the CLI viewer shows them with their rationales); a failed verdict throws a
// JudgeError, so the group runner records a judge failure (kept out of the group statistics and
// retried within its budget) instead of a silent 0.
import {
  AbortedError,
  type EnvItem,
  InvalidArgumentError,
  JudgeError,
  type JudgeSubject,
  type JudgeV1,
  type RewardContext,
  type RewardResult,
  type RolloutView,
  type VerdictRecord,
  verdictRecord,
} from '@shears/core';
import { composeRewards, type RewardFunctionEntry } from './compose-rewards.js';

/** What the judge's score and every composed reward function see. */
export interface JudgeRewardInput<TItem extends EnvItem = EnvItem> {
  item: TItem;
  rollout: RolloutView;
  context: RewardContext;
}

export interface JudgeRewardOptions<TItem extends EnvItem = EnvItem> {
  /** Component name of the judge's score (default `judge`). */
  name?: string;
  /** Weight of the judge's score in the composed reward (default 1). */
  weight?: number;
  /**
   * Further reward functions composed with the judge's score (see composeRewards): the reward is
   * the weighted sum; a zero weight logs a metric without rewarding it.
   */
  rewards?: readonly RewardFunctionEntry<JudgeRewardInput<TItem>>[];
  /**
   * The subject shown to the judge. Default: the item's id and prompt, the rollout's messages
   * and final response, and `item.reference` as the reference answer when it is a string.
   */
  subject?: (input: JudgeRewardInput<TItem>) => JudgeSubject;
}

function defaultSubject<TItem extends EnvItem>({ item, rollout }: JudgeRewardInput<TItem>): JudgeSubject {
  return {
    taskId: item.id,
    task: item.prompt,
    messages: rollout.messages,
    finalResponse: rollout.finalResponse,
    ...(typeof item.reference === 'string' ? { reference: item.reference } : {}),
  };
}

/**
 * An env reward function (use it as, or inside, `computeReward`) that scores the rollout with
 * `judge`. Returns the verdict's score (weighted and composed with `options.rewards`), the
 * components, and `details.verdicts: [VerdictRecord]`. A failed verdict, or a score outside
 * [0, 1], throws a JudgeError naming the judge and the failure kind; the failed verdict is the
 * error's `cause`. A cancelled reward throws an AbortedError.
 */
export function judgeReward<TItem extends EnvItem = EnvItem>(
  judge: JudgeV1,
  options: JudgeRewardOptions<TItem> = {},
): (item: TItem, rollout: RolloutView, context: RewardContext) => Promise<RewardResult> {
  if (!judge || typeof judge !== 'object' || typeof judge.judge !== 'function') {
    throw new InvalidArgumentError({
      argument: 'judge',
      value: judge,
      message: 'judgeReward needs a JudgeV1 (an object with a judge(subject) method, e.g. createRubricJudge)',
    });
  }
  const name = options.name ?? 'judge';
  const makeSubject = options.subject ?? defaultSubject;
  // The judge's verdict per input, so the composed reward can put it in the details.
  const verdicts = new WeakMap<JudgeRewardInput<TItem>, VerdictRecord>();
  const judgeEntry: RewardFunctionEntry<JudgeRewardInput<TItem>> = {
    name,
    weight: options.weight ?? 1,
    async fn(input) {
      const verdict = await judge.judge(makeSubject(input), { signal: input.context.signal });
      const record = verdictRecord(verdict, judge.id);
      if (verdict.status === 'failed') {
        if (input.context.signal.aborted) throw new AbortedError({ cause: verdict });
        throw new JudgeError({
          message: `judge "${record.judge}" failed (${verdict.kind}): ${verdict.reason}`,
          judgeId: record.judge,
          cause: verdict,
        });
      }
      if (!(Number.isFinite(verdict.score) && verdict.score >= 0 && verdict.score <= 1)) {
        throw new JudgeError({
          message: `judge "${record.judge}" failed (out_of_range): score ${verdict.score} is outside [0, 1]`,
          judgeId: record.judge,
          cause: verdict,
        });
      }
      verdicts.set(input, record);
      return verdict.score;
    },
  };
  // composeRewards checks names (no duplicates) and weights (finite) up front.
  const composed = composeRewards([judgeEntry, ...(options.rewards ?? [])]);
  return async (item, rollout, context) => {
    const input: JudgeRewardInput<TItem> = { item, rollout, context };
    const { score, components } = await composed(input);
    const record = verdicts.get(input);
    // A flag on the verdict (an injection suspected) is the rollout's too, beside its score.
    const flags = record?.status === 'scored' ? record.details?.flags : undefined;
    return {
      score,
      components,
      details: {
        verdicts: record ? [record] : [],
        ...(Array.isArray(flags) && flags.length > 0 ? { flags } : {}),
      },
    };
  };
}
