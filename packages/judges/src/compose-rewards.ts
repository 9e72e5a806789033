// Weighted composition of reward functions. The score is the weighted sum; every component is
// reported, including zero-weight metrics that are logged but not rewarded. A function that
// throws fails the whole reward (a JudgeError stays a judge failure, never a 0).
import { InvalidArgumentError } from '@shears/core';

export interface RewardFunctionEntry<TInput> {
  name: string;
  weight: number;
  fn: (input: TInput) => number | Promise<number>;
}

export interface ComposedReward {
  score: number;
  components: Record<string, number>;
}

export function composeRewards<TInput>(
  entries: readonly RewardFunctionEntry<TInput>[],
): (input: TInput) => Promise<ComposedReward> {
  const names = new Set<string>();
  for (const entry of entries) {
    if (names.has(entry.name))
      throw new InvalidArgumentError({
        argument: 'rewards',
        value: entry.name,
        message: `Reward function "${entry.name}" is listed twice`,
      });
    if (!Number.isFinite(entry.weight))
      throw new InvalidArgumentError({
        argument: `rewards.${entry.name}.weight`,
        value: entry.weight,
        message: `Weight of "${entry.name}" must be a finite number`,
      });
    names.add(entry.name);
  }
  return async (input) => {
    const values = await Promise.all(entries.map((entry) => entry.fn(input)));
    const components: Record<string, number> = {};
    let score = 0;
    entries.forEach((entry, index) => {
      const value = values[index]!;
      if (!Number.isFinite(value)) {
        throw new InvalidArgumentError({
          argument: entry.name,
          value,
          message: `Reward function "${entry.name}" returned ${value}, not a finite number`,
        });
      }
      components[entry.name] = value;
      score += entry.weight * value;
    });
    return { score, components };
  };
}
