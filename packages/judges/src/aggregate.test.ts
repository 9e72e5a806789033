import { describe, expect, it } from 'vitest';
import { aggregate, disagreement, majorityVote, median, trimmedMean } from './aggregate.js';

describe('aggregation maths', () => {
  it('trimmed mean keeps both scores with 2 judges (nothing to trim)', () => {
    expect(trimmedMean([0.2, 0.8])).toBeCloseTo(0.5, 12);
  });

  it('trimmed mean with 3 judges is the middle score', () => {
    expect(trimmedMean([0.9, 0.1, 0.4])).toBeCloseTo(0.4, 12);
  });

  it('trimmed mean with 5 judges drops one highest and one lowest', () => {
    // sorted: 0.0 0.5 0.6 0.7 1.0 -> mean(0.5, 0.6, 0.7) = 0.6
    expect(trimmedMean([1.0, 0.6, 0.0, 0.7, 0.5])).toBeCloseTo(0.6, 12);
    // an outlier judge cannot drag the score: the plain mean would be 0.56
    expect(aggregate('mean', [1.0, 0.6, 0.0, 0.7, 0.5])).toBeCloseTo(0.56, 12);
  });

  it('median of even and odd counts', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('majority vote over yes/no verdicts, with ties visible', () => {
    expect(majorityVote([1, 1, 0])).toBe(1);
    expect(majorityVote([0, 1, 0])).toBe(0);
    expect(majorityVote([1, 0])).toBe(0.5);
  });

  it('flags disagreement above the threshold', () => {
    expect(disagreement([0.5, 0.6, 0.55], 0.3).flagged).toBe(false);
    const wide = disagreement([0.1, 0.9, 0.5], 0.3);
    expect(wide.flagged).toBe(true);
    expect(wide.range).toBeCloseTo(0.8, 12);
  });

  it('rejects empty and non-finite inputs with a message naming the problem', () => {
    expect(() => trimmedMean([])).toThrow('trimmed_mean: needs at least one score');
    expect(() => aggregate('mean', [0.1, Number.NaN])).toThrow('finite');
    expect(() => aggregate('avg' as never, [1])).toThrow(
      'Unknown aggregation "avg" (available: mean, median, trimmed_mean, majority)',
    );
  });
});
