import { describe, expect, it } from 'vitest';
import { buildScoredData, StepCreditMismatchError } from './scored-group.js';
import { stepCredit } from './step-credit.js';

const step = (calls: (string | null)[], thought?: string) => ({
  thought: thought ?? null,
  toolCalls: calls.map((error) => ({ error })),
});

describe('stepCredit', () => {
  it('pays the terminal advantage on the last step and discounts it back (no process reward)', () => {
    const credit = stepCredit([step([]), step([]), step([])], 1, { gamma: 0.9 });
    // G_2 = 1, G_1 = 0.9, G_0 = 0.81
    expect(credit.advantages[0]).toBeCloseTo(0.81, 12);
    expect(credit.advantages[1]).toBeCloseTo(0.9, 12);
    expect(credit.advantages[2]).toBeCloseTo(1, 12);
    expect(credit.processRewards).toEqual([0, 0, 0]);
  });

  it('adds a bonus per successful tool call and per substantive reasoning step, discounted', () => {
    const long = 'x'.repeat(40);
    const credit = stepCredit(
      // step 0: two good calls and one failed, short thought; step 1: long thought, no call; step 2: final answer
      [step([null, null, 'boom'], 'short'), step([], long), step([])],
      -0.5,
      { gamma: 0.5, toolCallBonus: 0.1, reasoningBonus: 0.05 },
    );
    // r = [0.2, 0.05, -0.5]; G_2 = -0.5; G_1 = 0.05 + 0.5·(-0.5) = -0.2; G_0 = 0.2 + 0.5·(-0.2) = 0.1
    expect(credit.processRewards[0]).toBeCloseTo(0.2, 12);
    expect(credit.processRewards[1]).toBeCloseTo(0.05, 12);
    expect(credit.advantages[0]).toBeCloseTo(0.1, 12);
    expect(credit.advantages[1]).toBeCloseTo(-0.2, 12);
    expect(credit.advantages[2]).toBeCloseTo(-0.5, 12);
  });

  it('caps the process rewards of a rollout in step order', () => {
    const credit = stepCredit([step([null, null, null]), step([null, null])], 0, {
      gamma: 1,
      toolCallBonus: 0.1,
      maxBonus: 0.35,
    });
    expect(credit.processRewards[0]).toBeCloseTo(0.3, 12);
    expect(credit.processRewards[1]).toBeCloseTo(0.05, 12);
    expect(credit.advantages[0]).toBeCloseTo(0.35, 12);
  });

  it('gives a rollout without steps nothing, and refuses a gamma outside [0, 1]', () => {
    expect(stepCredit([], 1, { gamma: 1 })).toEqual({ advantages: [], processRewards: [] });
    expect(() => stepCredit([step([])], 1, { gamma: 1.5 })).toThrow(/gamma must be within \[0, 1\], got 1.5/);
  });
});

describe('per-step advantages on the wire', () => {
  it('puts step t on the tokens of assistant turn t, continuing across split sequences', () => {
    const data = buildScoredData({
      rollouts: [
        {
          score: 1,
          advantage: [0.5, 0.7, 1],
          tokens: {
            sequences: [
              // prompt, turn 0, tool result, turn 1
              { tokens: [1, 2, 3, 4, 5, 6], masks: [-100, 2, 3, -100, 5, 6], logprobs: [0, 0, 0, 0, 0, 0] },
              // a split: the earlier turns are prompt now, turn 2 is trained
              {
                tokens: [1, 2, 3, 4, 5, 6, 7],
                masks: [-100, -100, -100, -100, -100, -100, 7],
                logprobs: [0, 0, 0, 0, 0, 0, 0],
              },
            ],
          } as never,
        },
      ],
    });
    expect(data.advantages).toEqual([
      [0, 0.5, 0.5, 0, 0.7, 0.7],
      [0, 0, 0, 0, 0, 0, 1],
    ]);
  });

  it('refuses per-step advantages that do not match the assistant turns', () => {
    expect(() =>
      buildScoredData({
        rollouts: [
          {
            score: 1,
            advantage: [0.5, 1],
            tokens: { sequences: [{ tokens: [1, 2], masks: [-100, 2], logprobs: [0, 0] }] } as never,
          },
        ],
      }),
    ).toThrow(StepCreditMismatchError);
  });
});
