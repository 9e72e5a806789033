// Evaluation statistics: the unbiased pass@k estimator (Chen et al. 2021) and a seeded
// percentile bootstrap for the mean score.

/** Probability that at least one of k samples drawn from n (c correct) is correct. */
export function passAtK(n: number, c: number, k: number): number {
  if (
    !Number.isInteger(n) ||
    !Number.isInteger(c) ||
    !Number.isInteger(k) ||
    n < 0 ||
    c < 0 ||
    c > n ||
    k < 1
  ) {
    throw new RangeError(`passAtK: need integers 0 <= c <= n and k >= 1 (got n=${n}, c=${c}, k=${k})`);
  }
  if (k > n) return Number.NaN;
  if (n - c < k) return 1;
  // 1 - C(n-c, k) / C(n, k) as a product, which stays stable for large n.
  let miss = 1;
  for (let index = n - c + 1; index <= n; index++) miss *= 1 - k / index;
  return 1 - miss;
}

/** A small seeded PRNG (mulberry32), so confidence intervals are reproducible. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ConfidenceInterval {
  mean: number;
  low: number;
  high: number;
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Percentile bootstrap of the mean over `values` (one value per task, so tasks are the unit). */
export function bootstrapMean(
  values: readonly number[],
  options: { samples?: number; confidence?: number; seed?: number } = {},
): ConfidenceInterval {
  const samples = options.samples ?? 1000;
  const confidence = options.confidence ?? 0.95;
  const center = mean(values);
  if (values.length === 0) return { mean: Number.NaN, low: Number.NaN, high: Number.NaN };
  const random = createRandom(options.seed ?? 0);
  const means = new Float64Array(samples);
  for (let sample = 0; sample < samples; sample++) {
    let sum = 0;
    for (let index = 0; index < values.length; index++) sum += values[Math.floor(random() * values.length)]!;
    means[sample] = sum / values.length;
  }
  means.sort();
  const tail = (1 - confidence) / 2;
  const at = (quantile: number) => means[Math.min(samples - 1, Math.max(0, Math.floor(quantile * samples)))]!;
  return { mean: center, low: at(tail), high: at(1 - tail) };
}

/** The part of a rollout that says whether it solved its task. */
export interface SuccessInput {
  outcome: string;
  reward: number | null;
  success?: boolean | null;
}

export interface SuccessRule {
  /** How success is decided, in words, for summaries. */
  readonly description: string;
  test(rollout: SuccessInput): boolean;
}

/**
 * What counts as solved for pass@k, `correct` and `solved`: with `run.success_threshold`, a
 * reward at least that; otherwise the env's own verdict (`success` from its reward) where it
 * gives one, else a reward of at least 1. Only a `scored` rollout can succeed.
 */
export function successRule(threshold: number | undefined): SuccessRule {
  if (threshold !== undefined)
    return {
      description: `reward >= ${threshold} (run.success_threshold)`,
      test: (rollout) =>
        rollout.outcome === 'scored' && rollout.reward !== null && rollout.reward >= threshold,
    };
  return {
    description: "the env's verdict (success from its reward) where it gives one, else reward >= 1",
    test: (rollout) => {
      if (rollout.outcome !== 'scored') return false;
      if (typeof rollout.success === 'boolean') return rollout.success;
      return rollout.reward !== null && rollout.reward >= 1;
    },
  };
}
