// `shears serve` from its plan, and the setup `shears train` shares with it: the model's tokenizer
// (loaded first: a run without one is refused before anything else), the run's output (guard,
// W&B), the trajectory API's first answer, the run's parts (registry, sinks, runtime), the
// improvement loop, the serve loop; then everything closed and the report written.
import type { TokenizerV1 } from '@shears/core';
import { createLoopController, type LoopController } from '../loop/loop-controller.js';
import { openRunOutput, type RunOutput } from '../output/run-output.js';
import { writeReportFromJsonl } from '../output/run-report.js';
import type { RunPlan } from '../plan/run-plan.js';
import type { RunRegistry } from '../runtime/registry.js';
import { openRun, type RunParts } from '../runtime/run-parts.js';
import { startRuntime } from '../runtime/runtime.js';
import { createAtroposLink, reachApi } from './atropos-link.js';
import { runServeLoop } from './serve-loop.js';
import { formatServeResult, type ServeResult } from './serve-result.js';
import { loadTokenizer } from './tokenizer.js';

/** Runs `shears serve`; the result, and its closing line. */
export async function runServe(plan: RunPlan): Promise<{ result: ServeResult; summary: string }> {
  const { session } = plan;
  const feed = plan.feed!;
  const tokenizer = loadTokenizer(feed.tokenizer);
  const output = await openRunOutput(plan);
  const link = createAtroposLink({
    url: feed.api.url,
    authToken: feed.api.authToken,
    pollMs: feed.api.pollMs,
    signal: session.signal,
    logger: session.logger,
  });
  let loop: LoopController | undefined;
  let parts: RunParts | undefined;
  let result: ServeResult | undefined;
  try {
    const info = await reachApi(link, session.drain);
    parts = await openRun(plan, {
      mode: output.mode,
      ...(info ? { runtime: { totalGroups: feed.maxGroups, label: 'group' } } : {}),
      sides: true,
    });
    await output.start({ sinks: parts.sinks });
    loop = await createLoopController(plan, {
      sides: parts.sides,
      metrics: output.metrics,
      note: (text) => session.io.stderr(`${session.redact(text)}\n`),
    });
    result = await runServeLoop(plan, {
      runtime: parts.runtime,
      link,
      info,
      output,
      tokenizer,
      ...(loop ? { loop } : {}),
    });
  } finally {
    await loop?.close();
    await parts?.close();
    await output.close({ incomplete: result === undefined || result.stoppedBy !== undefined });
  }
  await writeReportFromJsonl(plan, {
    title: `shears serve · ${plan.env.name}`,
    incomplete: result.stoppedBy !== undefined,
  });
  return { result, summary: formatServeResult(result, feed.api.url) };
}

/** What `train`'s workers share: the tokenizer, the registry, the run's output (open). */
export interface Feed {
  tokenizer: TokenizerV1;
  registry: RunRegistry;
  output: RunOutput;
  /** The loop's side runs (one for all workers), and how to release them. */
  sides: RunParts['sides'];
  close(): Promise<void>;
}

/** `shears train`'s setup before its trainer and workers start. */
export async function openFeed(plan: RunPlan): Promise<Feed> {
  const tokenizer = loadTokenizer(plan.feed!.tokenizer);
  const output = await openRunOutput(plan);
  try {
    const parts = await openRun(plan, { mode: output.mode, sides: true });
    await output.start({ sinks: parts.sinks });
    return { tokenizer, registry: parts.registry, output, sides: parts.sides, close: () => parts.close() };
  } catch (error) {
    await output.close({ incomplete: true });
    throw error;
  }
}

/** One of `train`'s workers: its own link to the API, its runtime once the API answered, its serve loop. */
export async function runServeWorker(
  plan: RunPlan,
  options: { feed: Feed; worker: string; loop?: LoopController },
): Promise<ServeResult> {
  const { session } = plan;
  const api = plan.feed!.api;
  const link = createAtroposLink({
    url: api.url,
    authToken: api.authToken,
    pollMs: api.pollMs,
    signal: session.signal,
    logger: session.logger,
  });
  const info = await reachApi(link, session.drain);
  const runtime = info
    ? await startRuntime(plan, { registry: options.feed.registry, label: 'group' })
    : undefined;
  try {
    return await runServeLoop(plan, {
      runtime,
      link,
      info,
      output: options.feed.output,
      tokenizer: options.feed.tokenizer,
      worker: options.worker,
      ...(options.loop ? { loop: options.loop } : {}),
    });
  } finally {
    await runtime?.close();
  }
}
