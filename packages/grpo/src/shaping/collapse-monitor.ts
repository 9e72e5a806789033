// Collapse prevention (the seed's SafetyMonitor): benchmark scores are compared with their
// baselines; any below `tolerance` × baseline (default 95 %) shifts the data mix toward
// capability data and emits an event; when all recover, the original mix is restored.
import { InvalidArgumentError } from '@shears/core';
import type { DataMix } from './data-mix.js';

export interface Regression {
  benchmark: string;
  baseline: number;
  current: number;
}

export type CollapseEvent =
  | { type: 'collapse_detected'; regressions: Regression[]; weights: Record<string, number> }
  | { type: 'collapse_recovered'; weights: Record<string, number> };

export interface CollapseMonitorSettings {
  baselines: Record<string, number>;
  /** A score below baseline × tolerance is a regression. Default 0.95. */
  tolerance?: number;
  /** The mix to shift; its `capabilitySource` gets `capabilityShare` of the total weight while regressed. */
  mix?: DataMix;
  capabilitySource?: string;
  /** Share of the mix given to capability data during a regression. Default 0.5 (the seed's ratio). */
  capabilityShare?: number;
  onEvent?: (event: CollapseEvent) => void;
}

export interface CollapseMonitor {
  readonly regressed: boolean;
  /** Compares current benchmark scores with the baselines; returns the regressions (empty when healthy). */
  check(scores: Record<string, number>): Regression[];
}

export function createCollapseMonitor(settings: CollapseMonitorSettings): CollapseMonitor {
  const tolerance = settings.tolerance ?? 0.95;
  const share = settings.capabilityShare ?? 0.5;
  if (!(share >= 0 && share < 1))
    throw new InvalidArgumentError({
      argument: 'capabilityShare',
      value: share,
      message: `capabilityShare must be within [0, 1), got ${share}`,
    });
  const source = settings.capabilitySource ?? 'capability';
  let saved: Record<string, number> | undefined;
  return {
    get regressed() {
      return saved !== undefined;
    },
    check(scores) {
      const regressions: Regression[] = [];
      for (const [benchmark, baseline] of Object.entries(settings.baselines)) {
        const current = scores[benchmark];
        if (current === undefined) continue;
        if (current < baseline * tolerance) regressions.push({ benchmark, baseline, current });
      }
      const mix = settings.mix;
      if (regressions.length > 0) {
        if (mix && saved === undefined) {
          saved = mix.weights();
          const others = Object.entries(saved).filter(([name]) => name !== source);
          const otherTotal = others.reduce((sum, [, weight]) => sum + weight, 0);
          // capability / (capability + others) = share.
          const capability = otherTotal === 0 ? 1 : (share * otherTotal) / (1 - share);
          mix.setWeights({ ...saved, [source]: capability });
        } else if (!mix) saved ??= {};
        settings.onEvent?.({ type: 'collapse_detected', regressions, weights: mix?.weights() ?? {} });
      } else if (saved !== undefined) {
        if (mix) mix.setWeights(saved);
        saved = undefined;
        settings.onEvent?.({ type: 'collapse_recovered', weights: mix?.weights() ?? {} });
      }
      return regressions;
    },
  };
}
