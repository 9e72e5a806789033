// Per-step credit (the seed's discounted per-step returns with process rewards): each assistant
// step of a rollout earns a small process reward (a bonus per tool call of that step that did not
// fail, a bonus when its reasoning is substantive), the rollout's group-relative advantage is paid
// on its last step, and step t's advantage is the discounted return G_t = r_t + γ·G_{t+1}. The
// values become per-token advantages, one per trained span (assistant turn), in Atropos'
// `advantages` field.
import { InvalidArgumentError } from '@shears/core';
import { discountedReturns } from './advantages.js';

export interface StepCreditSettings {
  /** Discount per step, in [0, 1]. 1: every step gets the whole terminal advantage. */
  gamma: number;
  /** Process reward per tool call of a step that returned no error. Default 0. */
  toolCallBonus?: number;
  /** Process reward for a step whose reasoning has at least `minReasoningChars` characters. Default 0. */
  reasoningBonus?: number;
  /** Default 40. */
  minReasoningChars?: number;
  /** Cap on the sum of a rollout's process rewards, so shaping never outweighs the task. Default: no cap. */
  maxBonus?: number;
}

/** What step credit reads of one agent step (a trajectory step has these fields). */
export interface StepForCredit {
  thought?: string | null;
  toolCalls: readonly { error?: string | null }[];
}

export interface StepCredit {
  /** One advantage per step, in order. */
  advantages: number[];
  /** The process reward each step earned (before discounting), after the cap. */
  processRewards: number[];
}

function checkBonus(name: string, value: number | undefined): number {
  const bonus = value ?? 0;
  if (!Number.isFinite(bonus))
    throw new InvalidArgumentError({
      argument: name,
      value: bonus,
      message: `${name} must be a finite number, got ${bonus}`,
    });
  return bonus;
}

/**
 * Per-step advantages of one rollout: step t gets Σ_{k≥t} γ^(k−t)·r_k where r_k is step k's
 * process reward, plus the terminal advantage on the last step. A rollout without steps gets none.
 * Example: γ = 0.5, terminal advantage 1, two steps, one good tool call in step 0 with bonus 0.1 →
 * r = [0.1, 1], advantages [0.6, 1].
 */
export function stepCredit(
  steps: readonly StepForCredit[],
  terminalAdvantage: number,
  settings: StepCreditSettings,
): StepCredit {
  const toolCallBonus = checkBonus('toolCallBonus', settings.toolCallBonus);
  const reasoningBonus = checkBonus('reasoningBonus', settings.reasoningBonus);
  const minReasoningChars = settings.minReasoningChars ?? 40;
  let budget = settings.maxBonus ?? Number.POSITIVE_INFINITY;
  const processRewards = steps.map((step) => {
    const good = step.toolCalls.filter((call) => !call.error).length;
    const reasoned = typeof step.thought === 'string' && step.thought.trim().length >= minReasoningChars;
    let reward = good * toolCallBonus + (reasoned ? reasoningBonus : 0);
    // The cap is spent in step order: later steps get what is left.
    if (reward > budget) reward = Math.max(0, budget);
    budget -= Math.max(0, reward);
    return reward;
  });
  if (steps.length === 0) return { advantages: [], processRewards: [] };
  const rewards = processRewards.map((reward, index) =>
    index === steps.length - 1 ? reward + terminalAdvantage : reward,
  );
  return { advantages: discountedReturns(rewards, settings.gamma), processRewards };
}
