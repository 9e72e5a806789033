// Building Atropos wire groups (`ScoredData`, all 14 keys) from rollouts: phase-2 token records
// (tokens, masks, inference logprobs) or phase-1 chat transcripts tokenised with a chat
// template, plus per-sequence `overrides` and `group_overrides`.
import {
  type ChatMessage,
  InvalidArgumentError,
  SCORED_DATA_KEYS,
  type ScoredData,
  type ScoredGroupRecord,
  type TokenizerV1,
  type TokenRecord,
  type TokenSequence,
} from '@shears/core';
import { tokenAdvantages } from './advantages.js';

export interface RolloutForGroup {
  /** The rollout's reward. */
  score: number;
  /** Phase 2: the exact tokens the policy saw and produced. */
  tokens?: TokenRecord;
  /** The chat transcript (phase 1 source of tokens when a tokenizer is given; echoed as `messages`). */
  messages?: readonly ChatMessage[] | readonly Record<string, unknown>[];
  /** Per-sequence directives (e.g. `{ set_advantage_to_zero: true }`). */
  overrides?: Record<string, unknown>;
  /**
   * Scalar advantage, or one per assistant turn; becomes token-level `advantages`. A list is
   * counted across the rollout's sequences (a split token record continues where the previous
   * sequence stopped) and must have exactly one value per trained span: otherwise the credit
   * would land on the wrong turns, and buildScoredData throws a StepCreditMismatchError.
   */
  advantage?: number | readonly number[] | null;
}

/** Counts the trained spans (runs of mask ≠ -100) of a mask row: one per assistant turn. */
export function trainedSpans(masks: readonly number[]): number {
  let spans = 0;
  let previous = false;
  for (const mask of masks) {
    const trained = mask !== -100;
    if (trained && !previous) spans++;
    previous = trained;
  }
  return spans;
}

/** A rollout's per-step advantages do not match its trained spans (assistant turns in the tokens). */
export class StepCreditMismatchError extends InvalidArgumentError {
  readonly steps: number;
  readonly spans: number;
  constructor(options: { rollout: number; steps: number; spans: number }) {
    super({
      argument: `rollouts[${options.rollout}].advantage`,
      value: options.steps,
      message: `per-step advantages: rollout ${options.rollout} has ${options.steps} steps but ${options.spans} trained token spans (assistant turns); the credit cannot be placed on its turns`,
    });
    this.steps = options.steps;
    this.spans = options.spans;
  }
}

export interface BuildScoredDataOptions {
  rollouts: readonly RolloutForGroup[];
  envId?: number | null;
  groupOverrides?: Record<string, unknown> | null;
  generationParams?: Record<string, unknown> | null;
  /** Echo transcripts as `messages`. Default true. */
  includeMessages?: boolean;
  /** Tokenises phase-1 transcripts (rollouts without `tokens`). */
  tokenizer?: TokenizerV1;
  /** A token record split into several sequences: send `all` of them (default) or only the `last`. */
  splitSequences?: 'all' | 'last';
}

function wireMessage(message: ChatMessage | Record<string, unknown>): Record<string, unknown> {
  const record = { ...(message as Record<string, unknown>) };
  // Atropos rejects a message without a `content` key (assistant tool-call turns may omit it).
  if (!('content' in record) || record.content === undefined) record.content = null;
  return record;
}

/**
 * Tokenises a transcript with the tokenizer's chat template: every assistant message's tokens
 * are trained (mask = token id), everything else is -100. Relies on the template rendering a
 * prefix of the conversation as a prefix of the text, which chat templates do.
 */
export function tokenizeConversation(
  tokenizer: TokenizerV1,
  messages: readonly ChatMessage[],
): TokenSequence {
  const tokens = tokenizer.encode(tokenizer.applyChatTemplate([...messages]), { addSpecialTokens: false });
  const masks = tokens.map(() => -100);
  let start = 0;
  messages.forEach((message, index) => {
    const end = Math.min(
      tokens.length,
      tokenizer.encode(tokenizer.applyChatTemplate(messages.slice(0, index + 1)), { addSpecialTokens: false })
        .length,
    );
    if (message.role === 'assistant') {
      // The generation prompt belongs to the prompt, not to the answer.
      const promptEnd =
        index === 0
          ? 0
          : tokenizer.encode(
              tokenizer.applyChatTemplate(messages.slice(0, index), { addGenerationPrompt: true }),
              { addSpecialTokens: false },
            ).length;
      for (let position = Math.max(start, promptEnd); position < end; position++)
        masks[position] = tokens[position] as number;
    }
    start = end;
  });
  return { tokens, masks, logprobs: tokens.map(() => 1.0) };
}

/** One Atropos wire group with all 14 keys. */
export function buildScoredData(options: BuildScoredDataOptions): ScoredData {
  if (options.rollouts.length === 0)
    throw new InvalidArgumentError({
      argument: 'rollouts',
      value: [],
      message: 'buildScoredData: a group needs at least one rollout',
    });
  const tokens: number[][] = [];
  const masks: number[][] = [];
  const scores: number[] = [];
  const logprobs: (number[] | null)[] = [];
  const messages: Record<string, unknown>[][] = [];
  const overrides: Record<string, unknown>[] = [];
  const advantages: number[][] = [];
  let anyOverrides = false;
  let anyAdvantage = false;
  options.rollouts.forEach((rollout, index) => {
    let sequences: TokenSequence[];
    let realLogprobs = true;
    if (rollout.tokens && rollout.tokens.sequences.length > 0) {
      sequences =
        options.splitSequences === 'last' ? rollout.tokens.sequences.slice(-1) : rollout.tokens.sequences;
    } else if (options.tokenizer && rollout.messages) {
      sequences = [tokenizeConversation(options.tokenizer, rollout.messages as ChatMessage[])];
      realLogprobs = false;
    } else {
      throw new InvalidArgumentError({
        argument: `rollouts[${index}]`,
        value: undefined,
        message: `buildScoredData: rollout ${index} has no token record (phase 2) and no transcript plus tokenizer (phase 1) to tokenise`,
      });
    }
    const perStep = Array.isArray(rollout.advantage) ? (rollout.advantage as readonly number[]) : undefined;
    if (perStep) {
      const spans = sequences.reduce((sum, sequence) => sum + trainedSpans(sequence.masks), 0);
      if (spans !== perStep.length)
        throw new StepCreditMismatchError({ rollout: index, steps: perStep.length, spans });
    }
    let spanOffset = 0;
    for (const sequence of sequences) {
      if (sequence.masks.length !== sequence.tokens.length) {
        throw new InvalidArgumentError({
          argument: `rollouts[${index}].tokens`,
          value: sequence.masks.length,
          message: `buildScoredData: rollout ${index} has ${sequence.tokens.length} tokens but ${sequence.masks.length} masks`,
        });
      }
      tokens.push([...sequence.tokens]);
      masks.push([...sequence.masks]);
      scores.push(rollout.score);
      logprobs.push(
        realLogprobs && sequence.logprobs.length === sequence.tokens.length ? [...sequence.logprobs] : null,
      );
      messages.push((rollout.messages ?? []).map((message) => wireMessage(message)));
      // The oldest policy version that sampled into this sequence (when the server said one): a
      // trainer's off-policy lag for it is its own version at consumption minus this one.
      const versions = sequence.policyVersions;
      const policyVersion = versions && versions.length > 0 ? Math.min(...versions) : undefined;
      overrides.push({
        ...(rollout.overrides ?? {}),
        ...(policyVersion !== undefined ? { policy_version: policyVersion } : {}),
      });
      if ((rollout.overrides && Object.keys(rollout.overrides).length > 0) || policyVersion !== undefined)
        anyOverrides = true;
      if (rollout.advantage !== undefined && rollout.advantage !== null) {
        anyAdvantage = true;
        if (perStep) {
          advantages.push(tokenAdvantages(sequence.masks, perStep.slice(spanOffset)));
          spanOffset += trainedSpans(sequence.masks);
        } else advantages.push(tokenAdvantages(sequence.masks, rollout.advantage as number));
      } else advantages.push(sequence.masks.map(() => 0));
    }
  });
  const group: Record<string, unknown> = {};
  for (const key of SCORED_DATA_KEYS) group[key] = null;
  Object.assign(group, {
    tokens,
    masks,
    scores,
    advantages: anyAdvantage ? advantages : null,
    messages:
      options.includeMessages === false || options.rollouts.every((rollout) => !rollout.messages)
        ? null
        : messages,
    generation_params: options.generationParams ?? null,
    inference_logprobs: logprobs.every((row) => row !== null) ? logprobs : null,
    overrides: anyOverrides ? overrides : null,
    group_overrides: options.groupOverrides ?? null,
    env_id: options.envId ?? null,
  });
  return group as ScoredData;
}

export interface RecordToScoredDataOptions {
  envId?: number | null;
  tokenizer?: TokenizerV1;
  includeMessages?: boolean;
  /** Send advantages as token-level `advantages`. Default true. */
  includeAdvantages?: boolean;
  groupOverrides?: Record<string, unknown> | null;
  generationParams?: Record<string, unknown> | null;
  /**
   * Per rollout (record order), one advantage per step (see stepCredit) to send instead of the
   * rollout's scalar advantage; a null entry keeps the scalar.
   */
  stepAdvantages?: readonly (readonly number[] | null)[];
}

/**
 * The wire group for a shears group record, or null when the record was dropped or has no
 * counted rollout. Rollouts kept out of the statistics (null score) are left out of the group.
 */
export function scoredDataFromRecord(
  record: ScoredGroupRecord,
  options: RecordToScoredDataOptions = {},
): ScoredData | null {
  if (record.dropped) return null;
  // A stored wire group carries the scalar advantages it was built with: per-step ones rebuild it.
  const stored = options.stepAdvantages ? undefined : record.scoredData;
  if (stored && options.envId === undefined) return { ...emptyGroup(), ...stored } as ScoredData;
  const rollouts: RolloutForGroup[] = [];
  record.rollouts.forEach((trajectory, index) => {
    const score = record.scores[index];
    if (score === null || score === undefined) return;
    rollouts.push({
      score,
      tokens: trajectory.tokens,
      messages: trajectory.messages as ChatMessage[],
      advantage:
        options.includeAdvantages === false
          ? undefined
          : (options.stepAdvantages?.[index] ?? record.advantages[index] ?? undefined),
    });
  });
  if (rollouts.length === 0) return null;
  if (stored)
    return {
      ...emptyGroup(),
      ...stored,
      env_id: options.envId ?? stored.env_id ?? null,
    } as ScoredData;
  return buildScoredData({
    rollouts,
    envId: options.envId,
    tokenizer: options.tokenizer,
    includeMessages: options.includeMessages,
    groupOverrides: options.groupOverrides,
    generationParams: options.generationParams,
  });
}

function emptyGroup(): Record<string, null> {
  return Object.fromEntries(SCORED_DATA_KEYS.map((key) => [key, null]));
}
