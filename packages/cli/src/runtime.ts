// The pieces every running command shares: composed registry, env, server, sandbox provider,
// progress, a redacting JSONL writer, and the call into the kernel's group runner.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  type ConcurrencyLimiter,
  createConcurrencyLimiter,
  type EnvItem,
  type EnvV1,
  type Logger,
  type Registry,
  runGroup,
  type SandboxProviderV1,
  type ScoredGroupRecord,
  type ServerV1,
} from '@shears/core';
import { resolveAdvantageEstimator } from '@shears/grpo';
import {
  composeRegistry,
  createEnv,
  createSandboxProvider,
  createServer,
  observeServer,
  type PluginStatus,
} from './compose.js';
import type { ShearsConfig } from './config/config-schema.js';
import type { CliIo } from './io.js';
import { createProgress, type ProgressMode, type ProgressReporter } from './progress/progress.js';
import type { Redactor } from './redact.js';

export interface CommandContext {
  config: ShearsConfig;
  apiKey: string | undefined;
  io: CliIo;
  logger: Logger;
  redact: Redactor;
  signal: AbortSignal;
  positionals: string[];
  flags: Record<string, string | true>;
}

export interface Runtime {
  registry: Registry;
  plugins: PluginStatus[];
  env: EnvV1;
  server: ServerV1;
  sandboxes: SandboxProviderV1;
  limiter: ConcurrencyLimiter;
  progress: ProgressReporter;
  close(): Promise<void>;
}

export function progressMode(context: CommandContext): ProgressMode {
  const wanted = context.config.run.progress;
  if (wanted === 'auto') return context.io.isTty ? 'bars' : 'lines';
  return wanted;
}

export async function startRuntime(
  context: CommandContext,
  options: { totalGroups?: number; label?: string } = {},
): Promise<Runtime> {
  const { config } = context;
  const { registry, plugins } = await composeRegistry(config, {
    cwd: context.io.cwd,
    logger: context.logger,
  });
  const progress = createProgress({
    mode: progressMode(context),
    write: (text) => context.io.stderr(context.redact(text)),
    totalGroups: options.totalGroups,
    label: options.label,
  });
  const closers: Array<() => Promise<void> | void> = [];
  try {
    const env = await createEnv(registry, config);
    closers.push(() => env.close?.());
    const sandboxes = await createSandboxProvider(registry, config, env);
    closers.push(() => sandboxes.close());
    // Set up before the server: an env's scripted demo policy may need its prepared tasks.
    await env.setup?.({ signal: context.signal, logger: context.logger });
    const rawServer = await createServer(registry, config, context.apiKey, context.io.cwd, env);
    closers.push(() => rawServer.close?.());
    const server = observeServer(rawServer, (count) => progress.addTokens(count));
    return {
      registry,
      plugins,
      env,
      server,
      sandboxes,
      limiter: createConcurrencyLimiter(config.run.concurrency),
      progress,
      async close() {
        progress.stop();
        for (const close of closers.reverse()) {
          try {
            await close();
          } catch (error) {
            context.logger.warn(`cleanup failed: ${(error as Error).message}`);
          }
        }
      },
    };
  } catch (error) {
    progress.stop();
    for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => undefined);
    throw error;
  }
}

/** Runs one group of `groupSize` rollouts of `item` through the kernel's group runner. */
export async function runOneGroup(
  runtime: Runtime,
  context: CommandContext,
  item: EnvItem,
  groupSize: number,
): Promise<ScoredGroupRecord> {
  const { config } = context;
  return runGroup({
    env: runtime.env,
    item,
    server: runtime.server,
    sandboxes: runtime.sandboxes,
    groupSize,
    limiter: runtime.limiter,
    budget: config.env.max_turns === undefined ? undefined : { maxTurns: config.env.max_turns },
    retryBudget: config.run.max_retries,
    advantages: resolveAdvantageEstimator(config.run.advantage),
    allEqualScores: config.run.all_equal_scores,
    temperature: config.server.temperature,
    maxTokens: config.server.max_tokens,
    signal: context.signal,
    logger: context.logger,
    onEvent: (event) => {
      if (event.type === 'rollout_started') runtime.progress.rolloutStarted();
      else if (event.type === 'rollout_finished')
        runtime.progress.rolloutFinished(event.outcome, event.willRetry);
    },
  });
}

/** Appends JSON lines, with secrets redacted, creating the directory first. */
export function createJsonlWriter(path: string, redact: Redactor, options: { append?: boolean } = {}) {
  mkdirSync(dirname(path), { recursive: true });
  if (!options.append) writeFileSync(path, '');
  return {
    path,
    write(record: unknown) {
      appendFileSync(path, `${redact(JSON.stringify(record))}\n`);
    },
  };
}

export function resolveOut(context: CommandContext, path: string): string {
  return resolve(context.io.cwd, path);
}

/** `runs/demo.jsonl` → `runs/demo.html`. */
export function reportPathFor(jsonlPath: string): string {
  return `${jsonlPath.replace(/\.jsonl?$/i, '')}.html`;
}
