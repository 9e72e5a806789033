// Training-data mixing: online/offline batches (the seed's 70 % fresh rollouts + 30 % replay)
// and a weighted mix of named data sources whose weights the collapse monitor can shift.
import { InvalidArgumentError } from '@shears/core';
import type { ReplayBuffer } from './replay-buffer.js';

export interface MixedBatch<TItem> {
  items: TItem[];
  online: number;
  offline: number;
}

/**
 * A batch of `batchSize` items: `onlineFraction` of fresh items (in order), the rest sampled
 * from the replay buffer; when the buffer runs short, fresh items fill the gap.
 */
export function mixOnlineOffline<TItem>(options: {
  online: readonly TItem[];
  replay: ReplayBuffer<TItem>;
  batchSize: number;
  onlineFraction?: number;
}): MixedBatch<TItem> {
  const fraction = options.onlineFraction ?? 0.7;
  if (!(fraction >= 0 && fraction <= 1))
    throw new InvalidArgumentError({
      argument: 'onlineFraction',
      value: fraction,
      message: `onlineFraction must be within [0, 1], got ${fraction}`,
    });
  const wantOnline = Math.min(options.online.length, Math.floor(options.batchSize * fraction));
  const offline = options.replay.sample(options.batchSize - wantOnline);
  const online = options.online.slice(0, Math.min(options.online.length, options.batchSize - offline.length));
  return { items: [...online, ...offline], online: online.length, offline: offline.length };
}

export interface DataMix {
  weights(): Record<string, number>;
  setWeight(source: string, weight: number): void;
  setWeights(weights: Record<string, number>): void;
  /** Splits `total` items over the sources by weight (largest remainder, so the counts sum to `total`). */
  allocate(total: number): Record<string, number>;
}

export function createDataMix(initial: Record<string, number>): DataMix {
  let current: Record<string, number> = {};
  const check = (source: string, weight: number) => {
    if (!(weight >= 0) || !Number.isFinite(weight))
      throw new InvalidArgumentError({
        argument: source,
        value: weight,
        message: `data mix weight of "${source}" must be a finite number ≥ 0, got ${weight}`,
      });
  };
  const setWeights = (weights: Record<string, number>) => {
    for (const [source, weight] of Object.entries(weights)) check(source, weight);
    current = { ...weights };
  };
  setWeights(initial);
  return {
    weights: () => ({ ...current }),
    setWeight(source, weight) {
      check(source, weight);
      current[source] = weight;
    },
    setWeights,
    allocate(total) {
      const entries = Object.entries(current);
      const sum = entries.reduce((acc, [, weight]) => acc + weight, 0);
      const out: Record<string, number> = Object.fromEntries(entries.map(([source]) => [source, 0]));
      if (sum === 0 || total <= 0) return out;
      const shares = entries.map(([source, weight]) => ({ source, exact: (total * weight) / sum }));
      let given = 0;
      for (const share of shares) {
        out[share.source] = Math.floor(share.exact);
        given += Math.floor(share.exact);
      }
      shares.sort((a, b) => (b.exact % 1) - (a.exact % 1));
      for (let index = 0; given < total; index++, given++) {
        const share = shares[index % shares.length] as { source: string };
        out[share.source] = (out[share.source] ?? 0) + 1;
      }
      return out;
    },
  };
}
