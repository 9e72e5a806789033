import type { JudgeSubject, JudgeV1 } from '@shears/core';
import { createScriptedServer, createScriptedServerClient, createSeededRandom } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import {
  agreement,
  applyFit,
  averageRanks,
  calibrateJudge,
  cohensKappa,
  createCalibratedJudge,
  fitAffine,
  fitCalibration,
  fitIsotonic,
  lengthBias,
  positionBias,
  spearman,
} from './calibration.js';
import { createRubric, DEFAULT_RUBRIC } from './rubric.js';
import { createRubricJudge } from './rubric-judge.js';
import { signed } from './test-support/scripted-judge.js';

/** Deterministic pseudo-random numbers (mulberry32). */

describe('agreement statistics', () => {
  it("Cohen's kappa equals the value worked out by hand", () => {
    // 10 items. judge: Y Y Y Y Y Y N N N N ; human: Y Y Y Y N N Y N N N
    // agreement: items 1-4 (YY), 8-10 (NN) = 7/10 -> po = 0.7
    // judge yes 6/10, human yes 5/10 -> pe = 0.6*0.5 + 0.4*0.5 = 0.5
    // kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    const judge = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0].map(Boolean);
    const human = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0].map(Boolean);
    expect(cohensKappa(judge, human)).toBeCloseTo(0.4, 12);
  });

  it('Spearman equals the value worked out by hand, ties included', () => {
    // x = [1, 2, 3, 4, 5], y = [2, 1, 4, 3, 5]: d = [-1, 1, -1, 1, 0], sum d^2 = 4
    // rho = 1 - 6*4 / (5*(25-1)) = 1 - 24/120 = 0.8
    expect(spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])).toBeCloseTo(0.8, 12);
    // ties get average ranks: [10, 20, 20, 30] -> [1, 2.5, 2.5, 4]
    expect(averageRanks([10, 20, 20, 30])).toEqual([1, 2.5, 2.5, 4]);
    // x ranks [1, 2.5, 2.5, 4], y ranks [1, 2, 3, 4]; Pearson of these:
    // mean 2.5 for both; dx = [-1.5, 0, 0, 1.5], dy = [-1.5, -0.5, 0.5, 1.5]
    // cov = 2.25 + 0 + 0 + 2.25 = 4.5; varx = 4.5; vary = 2.25+0.25+0.25+2.25 = 5 -> 4.5 / sqrt(22.5)
    expect(spearman([10, 20, 20, 30], [1, 2, 3, 4])).toBeCloseTo(4.5 / Math.sqrt(22.5), 12);
  });

  it('accuracy, mean offset and MAE', () => {
    const metrics = agreement([0.9, 0.6, 0.2, 0.4], [1, 0.4, 0, 0.6]);
    expect(metrics.accuracy).toBeCloseTo(0.5, 12); // 0.6 vs 0.4 and 0.4 vs 0.6 disagree on yes/no
    expect(metrics.meanOffset).toBeCloseTo((-0.1 + 0.2 + 0.2 - 0.2) / 4, 12);
    expect(metrics.meanAbsoluteError).toBeCloseTo((0.1 + 0.2 + 0.2 + 0.2) / 4, 12);
  });
});

describe('fitted corrections', () => {
  const random = createSeededRandom(7);
  const human = Array.from({ length: 400 }, () => random());
  // A lenient judge: compresses the scale and adds +0.15, with a little noise.
  const judge = human.map((score) => Math.min(1, 0.7 * score + 0.15 + (random() - 0.5) * 0.04));

  it('affine correction recovers a known bias within tolerance', () => {
    const fit = fitAffine(judge, human);
    // judge = 0.7 h + 0.15  =>  h = (judge - 0.15) / 0.7 = 1.4286 judge - 0.2143
    expect(fit.slope).toBeCloseTo(1 / 0.7, 1);
    expect(fit.intercept).toBeCloseTo(-0.15 / 0.7, 1);
    const calibration = fitCalibration({ judgeId: 'j', judgeScores: judge, humanScores: human });
    expect(Math.abs(calibration.before.meanOffset)).toBeGreaterThan(0.0);
    expect(Math.abs(calibration.after.meanOffset)).toBeLessThan(0.01);
    expect(calibration.after.meanAbsoluteError).toBeLessThan(calibration.before.meanAbsoluteError);
  });

  it('isotonic correction is monotone and recovers the bias', () => {
    const fit = fitIsotonic(judge, human);
    for (let index = 1; index < fit.points.length; index++) {
      expect(fit.points[index]![0]).toBeGreaterThanOrEqual(fit.points[index - 1]![0]);
      expect(fit.points[index]![1]).toBeGreaterThanOrEqual(fit.points[index - 1]![1]);
    }
    // A judge score of 0.5 means a human score of about (0.5 - 0.15) / 0.7 = 0.5
    expect(applyFit(fit, 0.5)).toBeCloseTo(0.5, 1);
    expect(applyFit(fit, 0.71)).toBeCloseTo(0.8, 1);
  });

  it('pool-adjacent-violators merges violating blocks', () => {
    const fit = fitIsotonic([1, 2, 3, 4], [1, 3, 2, 4]);
    expect(fit.points).toEqual([
      [1, 1],
      [2, 2.5],
      [3, 2.5],
      [4, 4],
    ]);
  });

  it('reports length bias and position bias', () => {
    const lengths = [100, 400, 800, 1600, 3200];
    const bias = lengthBias([0.2, 0.3, 0.5, 0.7, 0.9], lengths);
    expect(bias.correlation).toBeCloseTo(1, 12);
    expect(bias.slopePerThousandChars).toBeGreaterThan(0);
    const position = positionBias([
      { status: 'compared', winner: 'tie', consistent: false, positions: ['first', 'first'] },
      { status: 'compared', winner: 'a', consistent: true, positions: ['first', 'second'] },
    ]);
    expect(position.firstPositionWinRate).toBeCloseTo(0.75, 12);
    expect(position.inconsistencyRate).toBeCloseTo(0.5, 12);
  });
});

describe('calibrated judges', () => {
  const fakeJudge = (id: string, rubric = DEFAULT_RUBRIC): JudgeV1 & { rubric: { hash: string } } => ({
    specificationVersion: 'v1',
    id,
    rubric,
    async judge() {
      return { status: 'scored', score: 0.5 };
    },
  });

  it('applies the correction and keeps the raw score', async () => {
    const calibration = fitCalibration({
      judgeId: 'j',
      rubricHash: DEFAULT_RUBRIC.hash,
      judgeScores: [0.2, 0.4, 0.6, 0.8],
      humanScores: [0.0, 0.3, 0.6, 0.9],
    });
    const judge = createCalibratedJudge(fakeJudge('j'), calibration);
    const verdict = await judge.judge({ taskId: 't', task: 'x', messages: [] });
    expect(verdict.status).toBe('scored');
    if (verdict.status === 'scored') {
      expect(verdict.score).toBeCloseTo(0.45, 12);
      expect(verdict.details?.rawScore).toBe(0.5);
    }
  });

  it('refuses a judge whose rubric changed since calibration', () => {
    const calibration = fitCalibration({
      judgeId: 'j',
      rubricHash: DEFAULT_RUBRIC.hash,
      judgeScores: [0.2, 0.8],
      humanScores: [0, 1],
    });
    const changed = createRubric({
      id: 'shears-default',
      dimensions: [{ name: 'task_completion', description: 'Different wording' }],
    });
    expect(changed.hash).not.toBe(DEFAULT_RUBRIC.hash);
    expect(() => createCalibratedJudge(fakeJudge('j', changed), calibration)).toThrow(
      /rubric changed, recalibrate/,
    );
    expect(() => createCalibratedJudge(fakeJudge('other'), calibration)).toThrow(
      'was fitted for judge "j", not "other"',
    );
  });
});

describe('calibrating a judge over a gold set', () => {
  /** A gold item whose trajectory tells the scripted judge model the human score. */
  const goldSubject = (human: number, index: number): JudgeSubject => ({
    taskId: `gold-${index}`,
    task: 'Summarise the incident report',
    messages: [
      { role: 'user', content: 'Summarise the incident report' },
      { role: 'assistant', content: `summary ${index} [human=${human}]` },
    ],
    finalResponse: `summary ${index} [human=${human}]`,
  });

  it('recovers a judge that scores 0.7 * human + 0.15 and corrects its new verdicts', async () => {
    // The judge model is lenient at the bottom and harsh at the top: composite = 0.7 h + 0.15,
    // plus a small deterministic wobble so the fit is not exact.
    const server = await createScriptedServer({
      policy: (request) => {
        const prompt = String(request.messages[request.messages.length - 1]?.content ?? '');
        const human = Number(/\[human=([\d.]+)\]/.exec(prompt)![1]);
        const composite = 0.7 * human + 0.15 + 0.01 * Math.sin(human * 37);
        const dimension = Math.round(composite * 10);
        const dimensions = Object.fromEntries(
          DEFAULT_RUBRIC.dimensions.map((entry) => [entry.name, dimension]),
        );
        return { content: signed(request, { dimensions, composite, rationale: 'scripted' }) };
      },
    });
    try {
      const judge = createRubricJudge({
        id: 'lenient',
        server: createScriptedServerClient({ baseUrl: server.url, model: 'lenient' }),
      });
      const gold = Array.from({ length: 21 }, (_, index) => ({
        subject: goldSubject(index / 20, index),
        human: index / 20,
      }));
      const calibration = await calibrateJudge({ judge, gold, method: 'affine' });
      expect(server.chatRequests).toHaveLength(21);
      expect(calibration).toMatchObject({ judgeId: 'lenient', rubricHash: DEFAULT_RUBRIC.hash, failures: 0 });
      // human = (judge - 0.15) / 0.7: slope 1/0.7 = 1.4286, intercept -0.15/0.7 = -0.2143.
      expect(calibration.fit.kind).toBe('affine');
      if (calibration.fit.kind === 'affine') {
        expect(calibration.fit.slope).toBeCloseTo(1 / 0.7, 1);
        expect(Math.abs(calibration.fit.intercept - -0.15 / 0.7)).toBeLessThan(0.02);
      }
      expect(calibration.before.meanAbsoluteError).toBeGreaterThan(0.05);
      expect(calibration.after.meanAbsoluteError).toBeLessThan(0.02);

      const calibrated = createCalibratedJudge(judge, calibration);
      for (const [index, human] of [0.1, 0.33, 0.62, 0.9].entries()) {
        const verdict = await calibrated.judge(goldSubject(human, 100 + index));
        expect(verdict.status).toBe('scored');
        if (verdict.status !== 'scored') continue;
        const raw = verdict.details?.rawScore as number;
        expect(Math.abs(raw - human)).toBeGreaterThan(0.02);
        expect(Math.abs(verdict.score - human)).toBeLessThan(0.025);
      }
    } finally {
      await server.close();
    }
  });
});
