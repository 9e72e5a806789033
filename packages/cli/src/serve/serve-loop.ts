// The env worker loop behind `shears serve` and `shears train`: register with the trajectory
// API, then run groups and post them, pausing while the queue this env sees (GET /status-env,
// its own groups plus those competing for the same batches) is more than `off_policy_limit`
// batches ahead of the trainer.
import { resolve } from 'node:path';
import { ConfigError, type TokenizerV1 } from '@shears/core';
import { scoredDataFromRecord } from '@shears/grpo';
import { createHfTokenizer } from '@shears/servers';
import { type CommandContext, runOneGroup, startRuntime } from '../runtime.js';
import { type AtroposLink, createAtroposLink, sleep } from './atropos-link.js';

export interface ServeResult {
  groupsSent: number;
  groupsSkipped: number;
  pauses: number;
}

// Loading a tokenizer.json of a large vocabulary takes seconds; workers in one process share it.
const tokenizerCache = new Map<string, TokenizerV1>();

export async function loadTokenizer(path: string, cwd: string): Promise<TokenizerV1> {
  const key = resolve(cwd, path);
  const cached = tokenizerCache.get(key);
  if (cached) return cached;
  const tokenizer = loadTokenizerUncached(key);
  tokenizerCache.set(key, tokenizer);
  return tokenizer;
}

function loadTokenizerUncached(path: string): TokenizerV1 {
  try {
    return createHfTokenizer({ dir: path });
  } catch (cause) {
    throw new ConfigError({
      message: `server.tokenizer: cannot load a tokenizer from ${path} (${(cause as Error).message}); point it at a folder with tokenizer.json and tokenizer_config.json`,
      issues: [{ path: 'server.tokenizer', message: 'tokenizer could not be loaded', value: path }],
      cause,
    });
  }
}

/** A copy of `value` with `redact` applied to every string in it (keys included). */
export function redactStrings<T>(value: T, redact: (text: string) => string): T {
  const walk = (item: unknown): unknown => {
    if (typeof item === 'string') return redact(item);
    if (Array.isArray(item)) return item.map(walk);
    if (ArrayBuffer.isView(item) || item instanceof Date) return item;
    if (item !== null && typeof item === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(item)) out[redact(key)] = walk(inner);
      return out;
    }
    return item;
  };
  return walk(value) as T;
}

/** How many trainer batches are waiting in the queue, from /status-env and /info. */
export function batchesAhead(status: { queue_size: number }, batchSize: number, groupSize: number): number {
  if (batchSize <= 0) return 0;
  return (status.queue_size * groupSize) / batchSize;
}

export async function runServeLoop(
  context: CommandContext,
  options: { maxGroups?: number; link?: AtroposLink; label?: string } = {},
): Promise<ServeResult> {
  const { config } = context;
  const link =
    options.link ??
    createAtroposLink({
      url: config.api.url,
      authToken: config.api.auth_token,
      pollMs: config.api.poll_ms,
      signal: context.signal,
      logger: context.logger,
    });
  const tokenizer = config.server.tokenizer
    ? await loadTokenizer(config.server.tokenizer, context.io.cwd)
    : undefined;
  const runtime = await startRuntime(context, {
    totalGroups: options.maxGroups,
    label: options.label ?? 'sent',
  });
  const result: ServeResult = { groupsSent: 0, groupsSkipped: 0, pauses: 0 };
  try {
    let waitingNoted = false;
    const envId = await link.registerEnv({
      name: config.env.name,
      groupSize: config.env.group_size,
      maxTokenLength: 32_768,
      signal: context.signal,
      onWait: () => {
        if (!waitingNoted) runtime.progress.note(`waiting for the trainer to start (${link.url})`);
        waitingNoted = true;
      },
    });
    runtime.progress.note(`registered with ${link.url} as env ${envId}`);
    let batchSize = (await link.info(context.signal)).batch_size;
    let started = 0;
    let paused = false;
    const window = Math.max(1, Math.ceil(config.run.concurrency / config.env.group_size));
    const worker = async () => {
      while (!context.signal.aborted && (options.maxGroups === undefined || started < options.maxGroups)) {
        const status = await link.status(context.signal);
        if (batchSize <= 0) batchSize = (await link.info(context.signal)).batch_size;
        const ahead = batchesAhead(status, batchSize, config.env.group_size);
        if (ahead >= config.api.off_policy_limit) {
          if (!paused) {
            result.pauses++;
            runtime.progress.note(
              `paused: ${ahead.toFixed(1)} batches queued ahead of the trainer (off_policy_limit ${config.api.off_policy_limit}, step ${status.current_step})`,
            );
          }
          paused = true;
          await sleep(config.api.poll_ms, context.signal);
          continue;
        }
        if (paused) runtime.progress.note(`resumed at trainer step ${status.current_step}`);
        paused = false;
        // Checked again after the await: the other workers may have taken the last slots meanwhile.
        if (options.maxGroups !== undefined && started >= options.maxGroups) break;
        started++;
        const item = await runtime.env.nextItem();
        if (!item) break;
        const record = await runOneGroup(runtime, context, item, config.env.group_size);
        runtime.progress.groupFinished(record);
        // Same redaction as the JSONL and HTML: secrets never reach the trainer, neither in
        // `messages` nor in tokens (phase-1 tokens are made from the redacted transcript).
        const data = scoredDataFromRecord(redactStrings(record, context.redact), {
          envId,
          tokenizer,
          includeMessages: true,
        });
        if (!data) {
          result.groupsSkipped++;
          continue;
        }
        await link.postScoredData(data, context.signal);
        result.groupsSent++;
      }
    };
    await Promise.all(Array.from({ length: window }, worker));
  } catch (error) {
    // Stopping (Ctrl-C, or `train` shutting down) interrupts requests in flight; that is not a failure.
    if (!context.signal.aborted) throw error;
  } finally {
    await runtime.close();
  }
  return result;
}
