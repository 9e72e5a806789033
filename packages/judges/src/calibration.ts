// Judge calibration against a gold set of human scores: agreement statistics (accuracy and
// Cohen's kappa on yes/no, Spearman correlation, mean offset), a fitted per-judge correction
// (affine least squares or isotonic regression by pool-adjacent-violators), length and
// position bias reports. A calibration carries the rubric's hash and its own content hash, so
// applying it to a judge whose rubric changed is refused.
import {
  ConfigError,
  InvalidArgumentError,
  type JudgeSubject,
  type JudgeV1,
  type Verdict,
} from '@shears/core';
import { contentHash } from './hash.js';
import type { PairwiseOutcome } from './pairwise-judge.js';

function requirePairs(x: readonly number[], y: readonly number[], what: string): void {
  if (x.length !== y.length)
    throw new InvalidArgumentError({
      argument: what,
      message: `${what}: the two series differ in length (${x.length} vs ${y.length})`,
    });
  if (x.length === 0)
    throw new InvalidArgumentError({ argument: what, message: `${what}: needs at least one pair` });
}

function average(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Ranks starting at 1, ties get the average of the ranks they span. */
export function averageRanks(values: readonly number[]): number[] {
  const order = values.map((value, index) => ({ value, index })).sort((a, b) => a.value - b.value);
  const ranks = new Array<number>(values.length);
  let start = 0;
  while (start < order.length) {
    let end = start;
    while (end + 1 < order.length && order[end + 1]!.value === order[start]!.value) end++;
    const rank = (start + end) / 2 + 1;
    for (let index = start; index <= end; index++) ranks[order[index]!.index] = rank;
    start = end + 1;
  }
  return ranks;
}

export function pearson(x: readonly number[], y: readonly number[]): number {
  requirePairs(x, y, 'pearson');
  const meanX = average(x);
  const meanY = average(y);
  let covariance = 0;
  let varianceX = 0;
  let varianceY = 0;
  for (let index = 0; index < x.length; index++) {
    const dx = x[index]! - meanX;
    const dy = y[index]! - meanY;
    covariance += dx * dy;
    varianceX += dx * dx;
    varianceY += dy * dy;
  }
  if (varianceX === 0 || varianceY === 0) return Number.NaN;
  return covariance / Math.sqrt(varianceX * varianceY);
}

/** Spearman's rank correlation (Pearson over average ranks); NaN when a series is constant. */
export function spearman(x: readonly number[], y: readonly number[]): number {
  requirePairs(x, y, 'spearman');
  return pearson(averageRanks(x), averageRanks(y));
}

/** Cohen's kappa for two raters' yes/no labels; NaN when chance agreement is 1 (both constant). */
export function cohensKappa(a: readonly boolean[], b: readonly boolean[]): number {
  if (a.length !== b.length || a.length === 0) {
    throw new InvalidArgumentError({
      argument: 'labels',
      message: `cohensKappa: needs two equally long, non-empty label lists (${a.length} vs ${b.length})`,
    });
  }
  let agree = 0;
  let aYes = 0;
  let bYes = 0;
  for (let index = 0; index < a.length; index++) {
    if (a[index] === b[index]) agree++;
    if (a[index]) aYes++;
    if (b[index]) bYes++;
  }
  const n = a.length;
  const observed = agree / n;
  const expected = (aYes / n) * (bYes / n) + ((n - aYes) / n) * ((n - bYes) / n);
  if (expected === 1) return Number.NaN;
  return (observed - expected) / (1 - expected);
}

export interface AgreementMetrics {
  n: number;
  /** Fraction of items where judge and human agree on yes/no (score >= threshold). */
  accuracy: number;
  kappa: number;
  spearman: number;
  /** Mean of judge minus human. */
  meanOffset: number;
  meanAbsoluteError: number;
}

export function agreement(
  judgeScores: readonly number[],
  humanScores: readonly number[],
  options: { threshold?: number } = {},
): AgreementMetrics {
  requirePairs(judgeScores, humanScores, 'agreement');
  const threshold = options.threshold ?? 0.5;
  const judgeYes = judgeScores.map((score) => score >= threshold);
  const humanYes = humanScores.map((score) => score >= threshold);
  let agree = 0;
  let offset = 0;
  let absolute = 0;
  for (let index = 0; index < judgeScores.length; index++) {
    if (judgeYes[index] === humanYes[index]) agree++;
    offset += judgeScores[index]! - humanScores[index]!;
    absolute += Math.abs(judgeScores[index]! - humanScores[index]!);
  }
  const n = judgeScores.length;
  return {
    n,
    accuracy: agree / n,
    kappa: cohensKappa(judgeYes, humanYes),
    spearman: spearman(judgeScores, humanScores),
    meanOffset: offset / n,
    meanAbsoluteError: absolute / n,
  };
}

export type CalibrationFit =
  | { kind: 'affine'; slope: number; intercept: number }
  | { kind: 'isotonic'; points: Array<[number, number]> }
  | { kind: 'identity' };

/** Least-squares line mapping judge scores onto human scores. */
export function fitAffine(
  judgeScores: readonly number[],
  humanScores: readonly number[],
): Extract<CalibrationFit, { kind: 'affine' }> {
  requirePairs(judgeScores, humanScores, 'fitAffine');
  const meanX = average(judgeScores);
  const meanY = average(humanScores);
  let covariance = 0;
  let variance = 0;
  for (let index = 0; index < judgeScores.length; index++) {
    covariance += (judgeScores[index]! - meanX) * (humanScores[index]! - meanY);
    variance += (judgeScores[index]! - meanX) ** 2;
  }
  // A judge that always gives the same score carries no information: map it to the human mean.
  if (variance === 0) return { kind: 'affine', slope: 0, intercept: meanY };
  const slope = covariance / variance;
  return { kind: 'affine', slope, intercept: meanY - slope * meanX };
}

/** Isotonic (monotone non-decreasing) regression by pool-adjacent-violators. */
export function fitIsotonic(
  judgeScores: readonly number[],
  humanScores: readonly number[],
): Extract<CalibrationFit, { kind: 'isotonic' }> {
  requirePairs(judgeScores, humanScores, 'fitIsotonic');
  const pairs = judgeScores.map((x, index) => ({ x, y: humanScores[index]! })).sort((a, b) => a.x - b.x);
  type Block = { sum: number; count: number; minX: number; maxX: number };
  const blocks: Block[] = [];
  for (const pair of pairs) {
    blocks.push({ sum: pair.y, count: 1, minX: pair.x, maxX: pair.x });
    while (blocks.length > 1) {
      const last = blocks[blocks.length - 1]!;
      const previous = blocks[blocks.length - 2]!;
      // Equal x values must share a value too, or the fit would not be a function of x.
      if (previous.sum / previous.count > last.sum / last.count || previous.maxX === last.minX) {
        blocks.pop();
        previous.sum += last.sum;
        previous.count += last.count;
        previous.maxX = last.maxX;
      } else break;
    }
  }
  const points: Array<[number, number]> = [];
  for (const block of blocks) {
    const value = block.sum / block.count;
    points.push([block.minX, value]);
    if (block.maxX !== block.minX) points.push([block.maxX, value]);
  }
  return { kind: 'isotonic', points };
}

export function applyFit(fit: CalibrationFit, score: number): number {
  let value: number;
  switch (fit.kind) {
    case 'identity':
      value = score;
      break;
    case 'affine':
      value = fit.slope * score + fit.intercept;
      break;
    case 'isotonic': {
      const points = fit.points;
      if (points.length === 0) return score;
      if (score <= points[0]![0]) value = points[0]![1];
      else if (score >= points[points.length - 1]![0]) value = points[points.length - 1]![1];
      else {
        let low = 0;
        let high = points.length - 1;
        while (high - low > 1) {
          const middle = (low + high) >> 1;
          if (points[middle]![0] <= score) low = middle;
          else high = middle;
        }
        const [x0, y0] = points[low]!;
        const [x1, y1] = points[high]!;
        value = x1 === x0 ? y1 : y0 + ((score - x0) / (x1 - x0)) * (y1 - y0);
      }
      break;
    }
  }
  return Math.min(1, Math.max(0, value));
}

export interface LengthBias {
  /** Spearman correlation of score with response length. */
  correlation: number;
  /** Least-squares change in score per 1,000 characters. */
  slopePerThousandChars: number;
}

export function lengthBias(scores: readonly number[], lengths: readonly number[]): LengthBias {
  const fit = fitAffine(lengths, scores);
  return { correlation: spearman(scores, lengths), slopePerThousandChars: fit.slope * 1000 };
}

export interface PositionBias {
  comparisons: number;
  /** Share of decisive single-order judgements won by the first position (0.5 = unbiased). */
  firstPositionWinRate: number;
  /** Share of pairs whose two orders disagreed. */
  inconsistencyRate: number;
}

export function positionBias(outcomes: readonly PairwiseOutcome[]): PositionBias {
  let decisive = 0;
  let first = 0;
  let compared = 0;
  let inconsistent = 0;
  for (const outcome of outcomes) {
    if (outcome.status !== 'compared') continue;
    compared++;
    if (!outcome.consistent) inconsistent++;
    for (const position of outcome.positions) {
      if (position === 'tie') continue;
      decisive++;
      if (position === 'first') first++;
    }
  }
  return {
    comparisons: compared,
    firstPositionWinRate: decisive === 0 ? Number.NaN : first / decisive,
    inconsistencyRate: compared === 0 ? Number.NaN : inconsistent / compared,
  };
}

export interface GoldItem {
  subject: JudgeSubject;
  /** Human score in [0, 1]. */
  human: number;
}

export interface Calibration {
  judgeId: string;
  rubricHash: string | null;
  goldHash: string;
  method: CalibrationFit['kind'];
  fit: CalibrationFit;
  /** Agreement of the raw judge with the gold set, and after the correction (in-sample). */
  before: AgreementMetrics;
  after: AgreementMetrics;
  lengthBias: LengthBias;
  /** Gold items the judge failed on (left out of the fit). */
  failures: number;
  hash: string;
}

export function fitCalibration(options: {
  judgeId: string;
  rubricHash?: string | null;
  judgeScores: readonly number[];
  humanScores: readonly number[];
  lengths?: readonly number[];
  method?: 'affine' | 'isotonic';
  threshold?: number;
  goldHash?: string;
  failures?: number;
}): Calibration {
  const method = options.method ?? 'affine';
  const fit =
    method === 'isotonic'
      ? fitIsotonic(options.judgeScores, options.humanScores)
      : fitAffine(options.judgeScores, options.humanScores);
  const corrected = options.judgeScores.map((score) => applyFit(fit, score));
  const body = {
    judgeId: options.judgeId,
    rubricHash: options.rubricHash ?? null,
    goldHash: options.goldHash ?? contentHash(options.humanScores),
    method,
    fit,
    before: agreement(options.judgeScores, options.humanScores, { threshold: options.threshold }),
    after: agreement(corrected, options.humanScores, { threshold: options.threshold }),
    lengthBias: lengthBias(options.judgeScores, options.lengths ?? options.judgeScores.map(() => 0)),
    failures: options.failures ?? 0,
  };
  return { ...body, hash: contentHash(body) };
}

/** Runs the judge over a gold set and fits a correction. */
export async function calibrateJudge(options: {
  judge: JudgeV1 & { rubric?: { hash: string } };
  gold: readonly GoldItem[];
  method?: 'affine' | 'isotonic';
  threshold?: number;
  signal?: AbortSignal;
}): Promise<Calibration> {
  const judgeScores: number[] = [];
  const humanScores: number[] = [];
  const lengths: number[] = [];
  let failures = 0;
  for (const item of options.gold) {
    const verdict = await options.judge.judge(item.subject, { signal: options.signal });
    if (verdict.status !== 'scored') {
      failures++;
      continue;
    }
    judgeScores.push(verdict.score);
    humanScores.push(item.human);
    lengths.push((item.subject.finalResponse ?? '').length || JSON.stringify(item.subject.messages).length);
  }
  if (judgeScores.length < 2) {
    throw new InvalidArgumentError({
      argument: 'gold',
      message: `calibration needs at least 2 judged gold items (got ${judgeScores.length}, ${failures} failed)`,
    });
  }
  return fitCalibration({
    judgeId: options.judge.id,
    rubricHash: options.judge.rubric?.hash ?? null,
    judgeScores,
    humanScores,
    lengths,
    method: options.method,
    threshold: options.threshold,
    goldHash: contentHash(options.gold.map((item) => ({ subject: item.subject, human: item.human }))),
    failures,
  });
}

/** Wraps a judge so its scores pass through the calibration; refuses a changed rubric or another judge. */
export function createCalibratedJudge(
  judge: JudgeV1 & { rubric?: { hash: string } },
  calibration: Calibration,
): JudgeV1 {
  if (calibration.judgeId !== judge.id) {
    throw new ConfigError({
      message: `Calibration ${calibration.hash} was fitted for judge "${calibration.judgeId}", not "${judge.id}"`,
    });
  }
  const rubricHash = judge.rubric?.hash ?? null;
  if (calibration.rubricHash !== rubricHash) {
    throw new ConfigError({
      message: `Judge "${judge.id}" uses rubric ${rubricHash ?? '(none)'} but calibration ${calibration.hash} was fitted with rubric ${calibration.rubricHash ?? '(none)'}: the rubric changed, recalibrate`,
    });
  }
  return {
    specificationVersion: 'v1',
    id: judge.id,
    async judge(subject, options): Promise<Verdict> {
      const verdict = await judge.judge(subject, options);
      if (verdict.status !== 'scored') return verdict;
      return {
        ...verdict,
        score: applyFit(calibration.fit, verdict.score),
        details: { ...verdict.details, rawScore: verdict.score, calibration: calibration.hash },
      };
    },
  };
}
