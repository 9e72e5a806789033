import type { ChatMessage, TokenizerV1 } from '@shears/core';
import { SCORED_DATA_KEYS, scoredDataSchema } from '@shears/core';
import { sampleScoredGroup } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import { buildScoredData, scoredDataFromRecord, tokenizeConversation } from './scored-group.js';

// A real (if tiny) tokenizer: one token per character, a ChatML-like template.
export const charTokenizer: TokenizerV1 = {
  specificationVersion: 'v1',
  id: 'chars',
  encode: (text) => [...text].map((character) => character.codePointAt(0) as number),
  decode: (ids) => String.fromCodePoint(...ids),
  applyChatTemplate: (messages, options = {}) =>
    messages
      .map((message) => `<${message.role}>${typeof message.content === 'string' ? message.content : ''}</>`)
      .join('') + (options.addGenerationPrompt ? '<assistant>' : ''),
  stopTokenIds: [],
};

describe('buildScoredData', () => {
  it('turns phase-2 token records into tokens, masks and inference logprobs with all 14 keys', () => {
    const group = buildScoredData({
      rollouts: [
        {
          score: 1,
          tokens: {
            sequences: [{ tokens: [1, 5, 9], masks: [-100, 5, 9], logprobs: [1, -0.5, -0.1] }],
            splits: 0,
          },
          advantage: 0.7,
          overrides: { temperature: 0.5 },
        },
        {
          score: 0,
          tokens: { sequences: [{ tokens: [1, 6], masks: [-100, 6], logprobs: [1, -2] }], splits: 0 },
          advantage: -0.7,
        },
      ],
      envId: 3,
      groupOverrides: { group_size: 2 },
      generationParams: { temperature: 1 },
    });
    expect(Object.keys(group).sort()).toEqual([...SCORED_DATA_KEYS].sort());
    expect(scoredDataSchema.safeParse(group).success).toBe(true);
    expect(group.tokens).toEqual([
      [1, 5, 9],
      [1, 6],
    ]);
    expect(group.masks).toEqual([
      [-100, 5, 9],
      [-100, 6],
    ]);
    expect(group.inference_logprobs).toEqual([
      [1, -0.5, -0.1],
      [1, -2],
    ]);
    expect(group.advantages).toEqual([
      [0, 0.7, 0.7],
      [0, -0.7],
    ]);
    expect(group.overrides).toEqual([{ temperature: 0.5 }, {}]);
    expect(group.group_overrides).toEqual({ group_size: 2 });
    expect(group.env_id).toBe(3);
    expect(group.messages).toBeNull();
  });

  it("puts each sequence's oldest policy version in its overrides, so a trainer can measure its lag", () => {
    const group = buildScoredData({
      rollouts: [
        {
          score: 1,
          tokens: {
            sequences: [
              { tokens: [1, 5, 9], masks: [-100, 5, 9], logprobs: [1, -0.5, -0.1], policyVersions: [4, 5] },
            ],
            splits: 0,
          },
          overrides: { temperature: 0.5 },
        },
        // A server that sent no version (vLLM): nothing is claimed for this sequence.
        {
          score: 0,
          tokens: { sequences: [{ tokens: [1, 6], masks: [-100, 6], logprobs: [1, -2] }], splits: 0 },
        },
      ],
    });
    expect(group.overrides).toEqual([{ temperature: 0.5, policy_version: 4 }, {}]);
    expect(scoredDataSchema.safeParse(group).success).toBe(true);
  });

  it('sends every sequence of a split record, each with the rollout score', () => {
    const record = {
      sequences: [
        { tokens: [1], masks: [1], logprobs: [-1] },
        { tokens: [2, 3], masks: [-100, 3], logprobs: [1, -1] },
      ],
      splits: 1,
    };
    expect(buildScoredData({ rollouts: [{ score: 0.5, tokens: record }] }).scores).toEqual([0.5, 0.5]);
    expect(
      buildScoredData({ rollouts: [{ score: 0.5, tokens: record }], splitSequences: 'last' }).tokens,
    ).toEqual([[2, 3]]);
  });

  it('tokenises phase-1 transcripts, training only the assistant turns', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'yo' },
    ];
    const sequence = tokenizeConversation(charTokenizer, messages);
    const text = charTokenizer.decode(sequence.tokens);
    expect(text).toBe('<user>hi</><assistant>yo</>');
    const trained = charTokenizer.decode(
      sequence.tokens.filter((_, index) => sequence.masks[index] !== -100),
    );
    expect(trained).toBe('yo</>');
    const group = buildScoredData({ rollouts: [{ score: 1, messages }], tokenizer: charTokenizer });
    expect(group.inference_logprobs).toBeNull();
    expect(group.messages).toEqual([messages]);
  });

  it('names what is missing when a rollout has neither tokens nor a tokenizer', () => {
    expect(() =>
      buildScoredData({ rollouts: [{ score: 1, messages: [{ role: 'user', content: 'x' }] }] }),
    ).toThrow(/rollout 0 has no token record/);
  });

  it('builds from a group record, leaving out uncounted rollouts and dropped groups', () => {
    const record = sampleScoredGroup('g1', [1, 0, 0.5]);
    record.scores[2] = null;
    const group = scoredDataFromRecord(record, { tokenizer: charTokenizer, envId: 0 });
    expect(group?.scores).toEqual([1, 0]);
    expect(group?.env_id).toBe(0);
    expect(scoredDataFromRecord({ ...record, dropped: { reason: 'all_scores_equal' } })).toBeNull();
  });
});
