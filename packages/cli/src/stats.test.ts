import { describe, expect, it } from 'vitest';
import { bootstrapMean, passAtK, successRule } from './stats.js';

describe('passAtK', () => {
  it('matches the closed form 1 - C(n-c,k)/C(n,k)', () => {
    expect(passAtK(10, 0, 1)).toBe(0);
    expect(passAtK(10, 10, 5)).toBe(1);
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 12);
    // 1 - C(7,2)/C(10,2) = 1 - 21/45
    expect(passAtK(10, 3, 2)).toBeCloseTo(1 - 21 / 45, 12);
    expect(passAtK(4, 3, 2)).toBe(1);
  });

  it('is NaN when k exceeds the samples and rejects impossible counts', () => {
    expect(passAtK(2, 1, 4)).toBeNaN();
    expect(() => passAtK(3, 4, 1)).toThrow(/0 <= c <= n/);
  });
});

describe('bootstrapMean', () => {
  it('brackets the mean, is reproducible per seed, and narrows with more tasks', () => {
    const small = bootstrapMean([0, 1, 1, 0, 1], { seed: 1 });
    expect(small.mean).toBeCloseTo(0.6);
    expect(small.low).toBeLessThanOrEqual(0.6);
    expect(small.high).toBeGreaterThanOrEqual(0.6);
    expect(bootstrapMean([0, 1, 1, 0, 1], { seed: 1 })).toEqual(small);
    const large = bootstrapMean(
      Array.from({ length: 500 }, (_, index) => (index % 5 < 3 ? 1 : 0)),
      { seed: 1 },
    );
    expect(large.high - large.low).toBeLessThan(small.high - small.low);
  });

  it('gives a zero-width interval for constant scores and NaN for no tasks', () => {
    expect(bootstrapMean([0.5, 0.5, 0.5])).toEqual({ mean: 0.5, low: 0.5, high: 0.5 });
    expect(bootstrapMean([]).mean).toBeNaN();
  });
});

describe('successRule', () => {
  const rollout = (outcome: string, reward: number | null, success?: boolean) => ({
    outcome,
    reward,
    success,
  });

  it("uses the env's verdict where it gives one, else reward >= 1; only scored rollouts succeed", () => {
    const rule = successRule(undefined);
    expect(rule.test(rollout('scored', 0.5, true))).toBe(true);
    expect(rule.test(rollout('scored', 1, false))).toBe(false);
    expect(rule.test(rollout('scored', 1))).toBe(true);
    expect(rule.test(rollout('scored', 0.99))).toBe(false);
    expect(rule.test(rollout('model_failure', 1, true))).toBe(false);
  });

  it('with a threshold, the reward decides', () => {
    const rule = successRule(0.5);
    expect(rule.test(rollout('scored', 0.5, false))).toBe(true);
    expect(rule.test(rollout('scored', 0.49, true))).toBe(false);
    expect(rule.description).toBe('reward >= 0.5 (run.success_threshold)');
  });
});
