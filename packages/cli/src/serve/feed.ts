// What `shears serve` and `shears train` set up alike before their workers start: the model's
// tokenizer (loaded first: a run without one is refused before anything else), the registry the
// run's parts are created through, and the run's output, open (its JSONL and sinks, the metrics
// stream, W&B, Prometheus). `train`'s workers share them.
import type { TokenizerV1 } from '@shears/core';
import { openRunOutput, type RunOutput } from '../output/run-output.js';
import type { RunPlan } from '../plan/run-plan.js';
import { composeRunRegistry, type RunRegistry } from '../runtime/runtime.js';
import { loadTokenizer } from './tokenizer.js';

export interface Feed {
  tokenizer: TokenizerV1;
  registry: RunRegistry;
  output: RunOutput;
}

export async function openFeed(plan: RunPlan): Promise<Feed> {
  const tokenizer = loadTokenizer(plan.feed!.tokenizer);
  const registry = await composeRunRegistry(plan);
  const output = await openRunOutput(plan, registry);
  try {
    await output.start();
  } catch (error) {
    await output.close({ incomplete: true });
    throw error;
  }
  return { tokenizer, registry, output };
}
