// Experience replay for online/offline mixing (the seed's `replay_buffer`): keeps only
// high-scoring items (score above a threshold, e.g. 0.7), bounded, sampled in proportion to
// priority (the score by default) without replacement.
import {
  InvalidArgumentError,
  type ScoredGroupRecord,
  ShearsError,
  type TrajectorySinkV1,
  throwIfAborted,
} from '@shears/core';

export interface ReplayBufferSettings {
  /** Items kept at most; when full, the lowest-priority item makes room for a better one. Default 10,000. */
  capacity?: number;
  /** Only items scoring strictly above this are kept. Default 0.7. */
  threshold?: number;
  /** Sampling weight of an item; default its score. */
  priority?: (score: number) => number;
  random?: () => number;
}

export interface ReplayBuffer<TItem> {
  readonly size: number;
  /** Adds the item when its score passes the threshold; returns whether it was kept. */
  add(item: TItem, score: number): boolean;
  /** Up to `count` distinct items, drawn with probability proportional to priority. */
  sample(count: number): TItem[];
  items(): { item: TItem; score: number }[];
  clear(): void;
}

export function createReplayBuffer<TItem>(settings: ReplayBufferSettings = {}): ReplayBuffer<TItem> {
  const capacity = settings.capacity ?? 10_000;
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new InvalidArgumentError({
      argument: 'capacity',
      value: capacity,
      message: `replay buffer capacity must be a positive integer, got ${capacity}`,
    });
  const threshold = settings.threshold ?? 0.7;
  const priority = settings.priority ?? ((score: number) => score);
  const random = settings.random ?? Math.random;
  let entries: { item: TItem; score: number; weight: number }[] = [];
  return {
    get size() {
      return entries.length;
    },
    add(item, score) {
      if (!(score > threshold)) return false;
      const weight = Math.max(0, priority(score));
      if (entries.length >= capacity) {
        let lowest = 0;
        entries.forEach((entry, index) => {
          if (entry.weight < (entries[lowest] as { weight: number }).weight) lowest = index;
        });
        if ((entries[lowest] as { weight: number }).weight >= weight) return false;
        entries.splice(lowest, 1);
      }
      entries.push({ item, score, weight });
      return true;
    },
    sample(count) {
      const pool = [...entries];
      const out: TItem[] = [];
      while (out.length < count && pool.length > 0) {
        const total = pool.reduce((sum, entry) => sum + entry.weight, 0);
        let pick = pool.length - 1;
        if (total > 0) {
          let target = random() * total;
          for (let index = 0; index < pool.length; index++) {
            target -= (pool[index] as { weight: number }).weight;
            if (target < 0) {
              pick = index;
              break;
            }
          }
        } else pick = Math.floor(random() * pool.length);
        out.push((pool[pick] as { item: TItem }).item);
        pool.splice(pick, 1);
      }
      return out;
    },
    items: () => entries.map(({ item, score }) => ({ item, score })),
    clear() {
      entries = [];
    },
  };
}

/**
 * A TrajectorySinkV1 that keeps high-scoring groups in a replay buffer (priority = the group's
 * best counted score), for mixing them back into later batches.
 */
export function createReplayBufferSink(
  buffer: ReplayBuffer<ScoredGroupRecord>,
): TrajectorySinkV1 & { buffer: ReplayBuffer<ScoredGroupRecord> } {
  let closed = false;
  return {
    specificationVersion: 'v1',
    id: 'replay-buffer',
    buffer,
    async write(group, options = {}) {
      if (closed)
        throw new ShearsError('replay-buffer sink: write after close', { code: 'SHEARS_SINK_CLOSED' });
      throwIfAborted(options.signal);
      const scores = group.scores.filter((score): score is number => typeof score === 'number');
      if (group.dropped || scores.length === 0) return;
      buffer.add(group, Math.max(...scores));
    },
    async close() {
      closed = true;
    },
  };
}
