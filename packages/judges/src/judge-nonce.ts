// Per-call secrets of a judge prompt. Each judge call draws a fresh nonce from a CSPRNG after the
// trajectory is finished, so no agent text can contain it: it tags the transcript boundaries and
// the instructions, and the verdict must echo it (verdict-parsing.ts). Candidate labels of group
// and pairwise prompts are drawn the same way, so an agent cannot name itself or a rival.
// What the judge was shown is recorded as the prompt's sha256 and the nonce, so a verdict can be
// re-checked against a rebuilt prompt.
import { createHash, randomInt } from 'node:crypto';
import type { ChatMessage } from '@shears/core';
import { canonicalJson } from './hash.js';

// No 0/o, 1/l/i: a nonce survives being read aloud, retyped or folded (untrusted-text.ts).
const NONCE_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const LABEL_LETTERS = 'ABCDEFGHJKMNPQRSTUVWXYZ';
const LABEL_DIGITS = '23456789';

/** Draws a random index below `size` (crypto by default; tests may inject a deterministic source). */
export type RandomIndex = (size: number) => number;

const cryptoIndex: RandomIndex = (size) => randomInt(size);

/** A fresh 12-character nonce (about 59 bits). */
export function createJudgeNonce(random: RandomIndex = cryptoIndex): string {
  let nonce = '';
  for (let index = 0; index < 12; index++) nonce += NONCE_ALPHABET[random(NONCE_ALPHABET.length)];
  return nonce;
}

/** `count` distinct candidate labels such as "KX7". */
export function createCandidateLabels(count: number, random: RandomIndex = cryptoIndex): string[] {
  const labels = new Set<string>();
  while (labels.size < count) {
    labels.add(
      `${LABEL_LETTERS[random(LABEL_LETTERS.length)]}${LABEL_LETTERS[random(LABEL_LETTERS.length)]}${LABEL_DIGITS[random(LABEL_DIGITS.length)]}`,
    );
  }
  return [...labels];
}

/** sha256 (hex) of the messages a judge was sent, over canonical JSON of role and content. */
export function judgePromptHash(messages: readonly ChatMessage[]): string {
  const shown = messages.map((message) => ({ role: message.role, content: message.content }));
  return createHash('sha256').update(canonicalJson(shown)).digest('hex');
}

/** What one judge call was shown, as kept in a verdict's details (`judgeInput`). */
export interface JudgeInputRecord {
  /** sha256 of the prompt messages (judgePromptHash). */
  promptSha256: string;
  /** The call's nonce: it tagged the transcript boundaries and the verdict had to echo it. */
  nonce: string;
  /** The version of the prompt format, so a re-check rebuilds the same prompt. */
  format: typeof JUDGE_PROMPT_FORMAT;
  /** Group calls: the label this subject was shown under, and its position in the prompt. */
  label?: string;
  position?: number;
}

/** Bumped whenever the judge prompts change shape. */
export const JUDGE_PROMPT_FORMAT = 'quarantine-v2';

export function judgeInputRecord(
  messages: readonly ChatMessage[],
  nonce: string,
  shownAs?: { label: string; position: number },
): JudgeInputRecord {
  return { promptSha256: judgePromptHash(messages), nonce, format: JUDGE_PROMPT_FORMAT, ...shownAs };
}

/**
 * The nonce a judge request asks its answer to echo, read from the request's system message
 * (which holds no agent text), or undefined. For scripted judge servers in tests and for tools
 * that replay judge requests.
 */
export function judgeNonceOf(
  messages: ReadonlyArray<{ role: string; content?: unknown }>,
): string | undefined {
  const system = messages.find((message) => message.role === 'system');
  const text = typeof system?.content === 'string' ? system.content : '';
  return /"nonce": "([a-z0-9]+)" exactly/.exec(text)?.[1];
}
