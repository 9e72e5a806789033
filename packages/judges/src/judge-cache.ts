// A cache of verdicts keyed by judge, rubric hash and trajectory hash, so re-judging the same
// trajectory with the same judge and rubric costs nothing. Only scored verdicts are cached:
// a failure must be retried, not remembered.
import type { JudgeSubject, Verdict } from '@shears/core';
import { contentHash } from './hash.js';

export interface JudgeCache {
  get(key: string): Verdict | undefined;
  set(key: string, verdict: Verdict): void;
  readonly stats: { hits: number; misses: number };
}

export function createMemoryJudgeCache(options: { maxEntries?: number } = {}): JudgeCache {
  const maxEntries = options.maxEntries ?? 10_000;
  const entries = new Map<string, Verdict>();
  const stats = { hits: 0, misses: 0 };
  return {
    stats,
    get(key) {
      const found = entries.get(key);
      if (found === undefined) {
        stats.misses++;
        return undefined;
      }
      stats.hits++;
      // Refresh recency: Map iteration order is insertion order.
      entries.delete(key);
      entries.set(key, found);
      return found;
    },
    set(key, verdict) {
      if (verdict.status !== 'scored') return;
      entries.delete(key);
      entries.set(key, verdict);
      while (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
  };
}

/** Hash of what a judge sees of a subject. */
export function trajectoryHash(subject: JudgeSubject): string {
  return contentHash({
    task: subject.task,
    messages: subject.messages,
    finalResponse: subject.finalResponse ?? null,
    reference: subject.reference ?? null,
  });
}

export function judgeCacheKey(judgeId: string, rubricHash: string, subject: JudgeSubject): string {
  return `${judgeId}|${rubricHash}|${trajectoryHash(subject)}`;
}
