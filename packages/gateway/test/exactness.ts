// Test helper: checks that a thread's token record holds exactly what the scripted /generate
// server sampled — every unmasked token and its logprob, in order — and that every prompt the
// server saw extends the recorded sequence.
import type { TokenRecord } from '@shears/core';
import type { ScriptedGeneratedRecord } from '@shears/core/test';
import { expect } from 'vitest';

/** The generated entries whose prompts belong to this sequence (prompt is a prefix of it). */
export function entriesOf(
  tokens: readonly number[],
  generated: readonly ScriptedGeneratedRecord[],
): ScriptedGeneratedRecord[] {
  return generated.filter(
    (entry) =>
      entry.request.promptIds.length <= tokens.length &&
      entry.request.promptIds.every((id, index) => tokens[index] === id),
  );
}

export function expectExactRecord(
  record: TokenRecord | null | undefined,
  generated: readonly ScriptedGeneratedRecord[],
  options: { turns: number },
): void {
  expect(record, 'a phase-2 thread has a token record').toBeTruthy();
  if (!record) return;
  expect(record.splits).toBe(0);
  expect(record.sequences).toHaveLength(1);
  const sequence = record.sequences[0];
  if (!sequence) return;
  const mine = entriesOf(sequence.tokens, generated);
  expect(mine).toHaveLength(options.turns);
  const unmasked = sequence.tokens.filter((_, index) => sequence.masks[index] !== -100);
  expect(unmasked).toEqual(mine.flatMap((entry) => entry.tokenIds));
  const unmaskedLogprobs = sequence.logprobs.filter((_, index) => sequence.masks[index] !== -100);
  expect(unmaskedLogprobs).toEqual(mine.flatMap((entry) => entry.logprobs));
  sequence.masks.forEach((mask, index) => {
    if (mask === -100) expect(sequence.logprobs[index]).toBe(1.0);
    else expect(mask).toBe(sequence.tokens[index]);
  });
  // Each completion sits right after its own prompt.
  for (const entry of mine) {
    const start = entry.request.promptIds.length;
    expect(sequence.tokens.slice(start, start + entry.tokenIds.length)).toEqual(entry.tokenIds);
  }
}
