import { describe, expect, it } from 'vitest';
import {
  ADVANTAGE_ESTIMATORS,
  drGrpoAdvantages,
  grpoAdvantages,
  grpoEstimator,
  resolveAdvantageEstimator,
  rlooAdvantages,
} from './advantages.js';

describe('advantage estimators', () => {
  it('GRPO normalises by the group mean and sample std (the seed), or population std', () => {
    const sample = grpoAdvantages([1, 0, 0, 1]);
    const std = Math.sqrt(1 / 3);
    expect(sample[0]).toBeCloseTo(0.5 / std, 6);
    expect(sample[1]).toBeCloseTo(-0.5 / std, 6);
    expect(grpoAdvantages([1, 2, 3, 4, 5], { std: 'population' })[4]).toBeCloseTo(2 / Math.sqrt(2), 6);
    expect(grpoAdvantages([0.3, 0.3])).toEqual([0, 0]);
    expect(grpoAdvantages([7])).toEqual([0]);
  });

  it('Dr.GRPO subtracts the mean only; RLOO leaves one out', () => {
    expect(drGrpoAdvantages([1, 0, 0, 1])).toEqual([0.5, -0.5, -0.5, 0.5]);
    expect(rlooAdvantages([1, 0, 0])).toEqual([1, -0.5, -0.5]);
    expect(rlooAdvantages([3])).toEqual([0]);
  });

  it('a group of equal scores gets exactly 0 from every estimator, even where the mean misses by an ulp', () => {
    // Seven 0.1s average to 0.09999999999999999 and eight 0.7s to 0.7000000000000001: without the
    // equality check GRPO gave each rollout ~1.4e-9, a signal the trainer would learn from.
    for (const scores of [Array(7).fill(0.1), Array(8).fill(0.7), Array(16).fill(1 / 3)]) {
      for (const estimator of Object.values(ADVANTAGE_ESTIMATORS)) {
        expect(estimator.compute(scores).every((advantage) => Object.is(advantage, 0))).toBe(true);
      }
      expect(grpoAdvantages(scores, { std: 'population' }).every((a) => Object.is(a, 0))).toBe(true);
    }
  });

  it('rejects non-finite scores with the index', () => {
    expect(() => grpoAdvantages([1, Number.NaN])).toThrow(/score 1/);
  });

  it('resolves estimators by name and lists the valid ones otherwise', () => {
    expect(resolveAdvantageEstimator('rloo').compute([1, 0])).toEqual([1, -1]);
    expect(() => resolveAdvantageEstimator('ppo')).toThrow(/grpo, dr-grpo, rloo/);
  });
});

describe('one estimator per name', () => {
  it("`grpo` resolved by name is runGroup's default, the sample-std estimator", () => {
    expect(resolveAdvantageEstimator('grpo')).toBe(grpoEstimator);
    expect(ADVANTAGE_ESTIMATORS.grpo).toBe(grpoEstimator);
    expect(grpoEstimator.compute([1, 0, 0, 1])).toEqual(grpoAdvantages([1, 0, 0, 1]));
    // Population std would give ±1 here; the seed's statistics.stdev gives ±0.866.
    expect(grpoEstimator.compute([1, 0, 0, 1])[0]).toBeCloseTo(Math.sqrt(3) / 2, 6);
  });
});
