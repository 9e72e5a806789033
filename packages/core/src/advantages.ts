// Advantage estimators for a group's counted scores, one per name, owned here so that runGroup's
// default and the CLI's `run.advantage` are the same computation (@shears/grpo re-exports them).
// `grpo` is the seed's: (score − mean) / (sample std + 1e-8), as Python's `statistics.stdev` and
// torch's default `std()` (the TRL trainer's) compute it. See docs/decisions/advantage-estimators.md.
import { InvalidArgumentError, NoSuchEntryError } from './errors.js';
import type { GroupStats } from './schemas/group-record.js';

/** Turns the counted scores of a group into advantages (same order and length). */
export interface AdvantageEstimator {
  readonly name: string;
  compute(scores: readonly number[]): number[];
}

export interface GrpoOptions {
  /** `sample` (n − 1, the seed's `statistics.stdev`) or `population` (n). Default `sample`. */
  std?: 'sample' | 'population';
  /** Added to the std before dividing. Default 1e-8 (the seed's). */
  epsilon?: number;
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/**
 * Whether every score is the same number. Such a group carries no signal, and its advantages are
 * exactly 0: the floating-point mean of equal values can miss them by one ulp (seven 0.1s average
 * to 0.09999999999999999), which would otherwise give every rollout a tiny advantage (~1e-9).
 */
function noSpread(scores: readonly number[]): boolean {
  return scores.every((score) => score === scores[0]);
}

function checkScores(scores: readonly number[]): void {
  scores.forEach((score, index) => {
    if (typeof score !== 'number' || !Number.isFinite(score)) {
      throw new InvalidArgumentError({
        argument: `scores[${index}]`,
        value: score,
        message: `advantage: score ${index} is not a finite number (${String(score)})`,
      });
    }
  });
}

/**
 * The statistics a group record carries: count, mean, population std (descriptive; the `grpo`
 * estimator divides by the sample std), min and max of the counted scores. One owner: runGroup's
 * records and @shears/grpo's group filter both use it.
 */
export function groupStats(scores: readonly number[], excluded: number): GroupStats {
  if (scores.length === 0) return { counted: 0, excluded, mean: null, std: null, min: null, max: null };
  const average = mean(scores);
  const std = Math.sqrt(scores.reduce((sum, score) => sum + (score - average) ** 2, 0) / scores.length);
  return {
    counted: scores.length,
    excluded,
    mean: average,
    std,
    min: Math.min(...scores),
    max: Math.max(...scores),
  };
}

/** GRPO: (score − group mean) / (group std + ε). A group with no spread gets zeros. */
export function grpoAdvantages(scores: readonly number[], options: GrpoOptions = {}): number[] {
  checkScores(scores);
  if (scores.length === 0) return [];
  if (noSpread(scores)) return scores.map(() => 0);
  const average = mean(scores);
  const denominator = options.std === 'population' ? scores.length : scores.length - 1;
  const variance =
    denominator <= 0 ? 0 : scores.reduce((sum, score) => sum + (score - average) ** 2, 0) / denominator;
  const std = Math.sqrt(variance);
  if (std === 0) return scores.map(() => 0);
  return scores.map((score) => (score - average) / (std + (options.epsilon ?? 1e-8)));
}

/** Dr.GRPO: score − group mean, no std normalisation (removes the difficulty bias). */
export function drGrpoAdvantages(scores: readonly number[]): number[] {
  checkScores(scores);
  if (scores.length === 0) return [];
  if (noSpread(scores)) return scores.map(() => 0);
  const average = mean(scores);
  return scores.map((score) => score - average);
}

/** RLOO: score − mean of the other rollouts' scores. A single rollout gets 0. */
export function rlooAdvantages(scores: readonly number[]): number[] {
  checkScores(scores);
  if (scores.length < 2 || noSpread(scores)) return scores.map(() => 0);
  const total = scores.reduce((sum, score) => sum + score, 0);
  return scores.map((score) => score - (total - score) / (scores.length - 1));
}

/** The seed's GRPO estimator: runGroup's default and `run.advantage: grpo`. */
export const grpoEstimator: AdvantageEstimator = {
  name: 'grpo',
  compute: (scores) => grpoAdvantages(scores),
};

export const ADVANTAGE_ESTIMATORS: Readonly<Record<string, AdvantageEstimator>> = {
  grpo: grpoEstimator,
  'dr-grpo': { name: 'dr-grpo', compute: drGrpoAdvantages },
  rloo: { name: 'rloo', compute: rlooAdvantages },
};

/** The estimator registered under `name` (`grpo`, `dr-grpo`, `rloo`). */
export function resolveAdvantageEstimator(name: string): AdvantageEstimator {
  const estimator = Object.hasOwn(ADVANTAGE_ESTIMATORS, name) ? ADVANTAGE_ESTIMATORS[name] : undefined;
  if (!estimator)
    throw new NoSuchEntryError({
      kind: 'advantage estimator',
      id: name,
      available: Object.keys(ADVANTAGE_ESTIMATORS),
    });
  return estimator;
}
