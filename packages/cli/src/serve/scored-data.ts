// Turns a scored group into the Atropos wire group. Managed (phase-2) rollouts already carry
// exact tokens; for chat (phase-1) rollouts the conversation is tokenized with the model's own
// tokenizer and chat template, masking everything but the assistant turns.
import type { ChatMessage, ScoredData, ScoredGroupRecord, TokenizerV1 } from '@shears/core';

const COUNTED = new Set(['scored', 'model_failure']);

/** Tokens and masks of one conversation: -100 on prompt and tool positions, the id on assistant positions. */
export function tokenizeConversation(
  tokenizer: TokenizerV1,
  messages: readonly ChatMessage[],
): { tokens: number[]; masks: number[] } {
  const tokens: number[] = [];
  const masks: number[] = [];
  let rendered = '';
  for (let index = 0; index < messages.length; index++) {
    const text = tokenizer.applyChatTemplate(messages.slice(0, index + 1) as ChatMessage[], {});
    // Templates that rewrite history (dropping old reasoning) break the prefix; then the earlier
    // part is re-encoded and masked, which only ever under-trains, never trains on prompt text.
    const extends_ = text.startsWith(rendered);
    const segment = extends_ ? text.slice(rendered.length) : text;
    if (!extends_) {
      tokens.length = 0;
      masks.length = 0;
    }
    const ids = tokenizer.encode(segment, { addSpecialTokens: false });
    const generated = messages[index]!.role === 'assistant';
    for (const id of ids) {
      tokens.push(id);
      masks.push(generated && extends_ ? id : -100);
    }
    rendered = text;
  }
  return { tokens, masks };
}

/** The wire group, or null when nothing in the group can be trained on. */
export function toScoredData(
  record: ScoredGroupRecord,
  options: { envId: number | null; tokenizer?: TokenizerV1 },
): ScoredData | null {
  if (record.dropped) return null;
  if (record.scoredData) return { ...record.scoredData, env_id: options.envId };
  const indexes = record.rollouts
    .map((rollout, index) => (COUNTED.has(rollout.outcome) && record.scores[index] !== null ? index : -1))
    .filter((index) => index >= 0);
  if (indexes.length === 0) return null;
  const tokens: number[][] = [];
  const masks: number[][] = [];
  for (const index of indexes) {
    const rollout = record.rollouts[index]!;
    const sequence = rollout.tokens?.sequences.at(-1);
    if (sequence) {
      tokens.push(sequence.tokens);
      masks.push(sequence.masks);
    } else if (options.tokenizer) {
      const tokenized = tokenizeConversation(options.tokenizer, rollout.messages as ChatMessage[]);
      tokens.push(tokenized.tokens);
      masks.push(tokenized.masks);
    } else {
      throw new Error(
        "rollouts have no token records; set server.tokenizer (the model's tokenizer folder) or use a managed vLLM/SGLang server",
      );
    }
  }
  return {
    tokens,
    masks,
    scores: indexes.map((index) => record.scores[index]!),
    advantages: null,
    ref_logprobs: null,
    messages: indexes.map(
      (index) => record.rollouts[index]!.messages as Array<{ role: string; content: unknown }>,
    ),
    generation_params: null,
    inference_logprobs: null,
    overrides: null,
    group_overrides: { group_id: record.groupId, task_id: record.taskId },
    images: null,
    env_id: options.envId,
    distill_token_ids: null,
    distill_logprobs: null,
  };
}
