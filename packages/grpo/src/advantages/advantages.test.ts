import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EnvV1, resolveAdvantageEstimator, runGroup, SandboxError } from '@shears/core';
import {
  createScriptedServer,
  createScriptedServerClient,
  createTempSandboxProvider,
} from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import {
  computeGroupAdvantages,
  createGroupFilterCounter,
  discountedReturns,
  stepAdvantages,
  tokenAdvantages,
} from './advantages.js';

describe('discounted returns and per-step credit', () => {
  it('matches the Atropos test values', () => {
    const returns = discountedReturns([1, 1, 1], 0.9);
    expect(returns[0]).toBeCloseTo(2.71, 10);
    expect(returns[1]).toBeCloseTo(1.9, 10);
    expect(returns[2]).toBe(1);
    expect(discountedReturns([1, 2, 3], 0)).toEqual([1, 2, 3]);
    expect(() => discountedReturns([1], 1.5)).toThrow(/gamma/);
  });

  it('pays the terminal advantage at the last step and discounts it back', () => {
    const steps = stepAdvantages(2, 3, 0.5);
    expect(steps).toEqual([0.5, 1, 2]);
  });

  it('aligns token advantages with masks, one value per assistant span', () => {
    const masks = [-100, -100, 5, 6, -100, 7, 8, -100];
    expect(tokenAdvantages(masks, 1.5)).toEqual([0, 0, 1.5, 1.5, 0, 1.5, 1.5, 0]);
    expect(tokenAdvantages(masks, [0.25, 1])).toEqual([0, 0, 0.25, 0.25, 0, 1, 1, 0]);
  });
});

describe('group advantages', () => {
  it('keeps infrastructure and judge failures out of the statistics', () => {
    const result = computeGroupAdvantages(
      [
        { score: 1, outcome: 'scored' },
        { score: null, outcome: 'infra_failure' },
        { score: 0, outcome: 'model_failure' },
        { score: 0.9, outcome: 'judge_failure' },
      ],
      { estimator: resolveAdvantageEstimator('dr-grpo') },
    );
    expect(result.stats).toMatchObject({ counted: 2, excluded: 2, mean: 0.5 });
    expect(result.advantages).toEqual([0.5, null, -0.5, null]);
    expect(result.dropped).toBeNull();
  });

  it('drops groups whose scores are all equal (configurable) and counts them', () => {
    const counter = createGroupFilterCounter();
    const flat = computeGroupAdvantages([
      { score: 1, outcome: 'scored' },
      { score: 1, outcome: 'scored' },
    ]);
    expect(flat.dropped).toEqual({ reason: 'all_scores_equal' });
    counter.record(flat);
    const kept = computeGroupAdvantages(
      [
        { score: 1, outcome: 'scored' },
        { score: 1, outcome: 'scored' },
      ],
      { dropEqualScores: false },
    );
    expect(kept.advantages).toEqual([0, 0]);
    counter.record(kept);
    counter.record(computeGroupAdvantages([{ score: null, outcome: 'aborted' }]));
    // A single counted rollout is not "all equal": Atropos silently drops every size-1 group.
    expect(computeGroupAdvantages([{ score: 1, outcome: 'scored' }]).dropped).toBeNull();
    expect(counter.snapshot()).toEqual({
      groups: 3,
      kept: 1,
      excludedRollouts: 1,
      dropped: { all_scores_equal: 1, too_few_counted: 1 },
    });
  });
});

describe('one owner for group statistics', () => {
  it("gives the statistics and advantages runGroup's record carries for the same rollouts", async () => {
    // Seven 0.1s and a 0.7 (the mean of 0.1s misses by an ulp), and one rollout whose reward
    // fails for an infrastructure reason: kept out of both computations.
    const rewards: Array<number | 'infra'> = [0.1, 0.1, 0.1, 0.7, 0.1, 'infra', 0.1, 0.1, 0.1];
    const server = await createScriptedServer({ policy: () => ({ content: 'done' }) });
    const root = mkdtempSync(join(tmpdir(), 'grpo-stats-'));
    try {
      const env: EnvV1 = {
        specificationVersion: 'v1',
        id: 'fixed-scores',
        nextItem: async () => ({ id: 't', prompt: 'p' }),
        buildMessages: (item) => [{ role: 'user', content: item.prompt }],
        tools: () => [],
        computeReward: async (_item, _rollout, context) => {
          const reward = rewards[Number(/-r(\d+)/.exec(context.rolloutId)?.[1])];
          if (reward === 'infra') throw new SandboxError({ message: 'sandbox went away' });
          return { score: reward as number };
        },
      };
      const record = await runGroup({
        env,
        item: { id: 't', prompt: 'p' },
        server: createScriptedServerClient({ baseUrl: server.url, model: 'scripted' }),
        sandboxes: createTempSandboxProvider({ root }),
        groupSize: rewards.length,
        retryBudget: 0,
      });
      const result = computeGroupAdvantages(
        record.rollouts.map((rollout) => ({ score: rollout.reward, outcome: rollout.outcome })),
      );
      expect(record.stats.excluded).toBe(1);
      expect(result.stats).toEqual(record.stats);
      expect(result.advantages).toEqual(record.advantages);
    } finally {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
