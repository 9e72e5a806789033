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

/** Sum of two usages; the cost is known when either side priced its call. */
export function addUsage(total: Usage | undefined, usage: Usage | undefined): Usage | undefined {
  if (!usage) return total;
  const base = total ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  const sum: Usage = {
    promptTokens: base.promptTokens + usage.promptTokens,
    completionTokens: base.completionTokens + usage.completionTokens,
    totalTokens: base.totalTokens + usage.totalTokens,
  };
  if (base.reasoningTokens !== undefined || usage.reasoningTokens !== undefined)
    sum.reasoningTokens = (base.reasoningTokens ?? 0) + (usage.reasoningTokens ?? 0);
  if (base.costUsd !== undefined || usage.costUsd !== undefined)
    sum.costUsd = (base.costUsd ?? 0) + (usage.costUsd ?? 0);
  return sum;
}

/**
 * Splits the usage of one call that judged `count` subjects into per-subject shares that add up
 * to the whole: tokens as integers (the remainder goes to the first shares), cost evenly.
 */
export function splitUsage(total: Usage, count: number): Usage[] {
  const share = (value: number, index: number) => Math.floor(value / count) + (index < value % count ? 1 : 0);
  return Array.from({ length: count }, (_, index) => ({
    promptTokens: share(total.promptTokens, index),
    completionTokens: share(total.completionTokens, index),
    totalTokens: share(total.totalTokens, index),
    ...(total.reasoningTokens !== undefined ? { reasoningTokens: share(total.reasoningTokens, index) } : {}),
    ...(total.costUsd !== undefined ? { costUsd: total.costUsd / count } : {}),
  }));
}
