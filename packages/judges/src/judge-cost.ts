// Token usage and cost of judge calls: the server's usage when it reports one, otherwise a
// count with tiktoken (loaded on first use), priced per million tokens.
import type { Usage } from '@shears/core';

export interface JudgePricing {
  /** USD per million prompt tokens. */
  inputPerMillion: number;
  /** USD per million completion tokens. */
  outputPerMillion: number;
}

type Encoder = { encode(text: string): ArrayLike<number> };
let encoderPromise: Promise<Encoder | null> | undefined;

async function loadEncoder(): Promise<Encoder | null> {
  encoderPromise ??= import('tiktoken')
    .then((module) => module.get_encoding('o200k_base') as unknown as Encoder)
    .catch(() => null);
  return encoderPromise;
}

/** Counts tokens with tiktoken's o200k_base encoding; falls back to ~4 characters a token. */
export async function countTokens(text: string): Promise<number> {
  const encoder = await loadEncoder();
  if (!encoder) return Math.ceil(text.length / 4);
  return encoder.encode(text).length;
}

export async function resolveUsage(options: {
  serverUsage: Usage | undefined;
  promptText: string;
  completionText: string;
  pricing?: JudgePricing;
}): Promise<Usage & { estimated: boolean }> {
  let usage: Usage & { estimated: boolean };
  if (options.serverUsage && options.serverUsage.totalTokens > 0) {
    usage = { ...options.serverUsage, estimated: false };
  } else {
    const promptTokens = await countTokens(options.promptText);
    const completionTokens = await countTokens(options.completionText);
    usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, estimated: true };
  }
  if (options.pricing && usage.costUsd === undefined) {
    usage.costUsd =
      (usage.promptTokens * options.pricing.inputPerMillion +
        usage.completionTokens * options.pricing.outputPerMillion) /
      1_000_000;
  }
  return usage;
}
