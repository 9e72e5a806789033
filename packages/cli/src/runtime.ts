// The pieces every running command shares: composed registry, env, server, sandbox provider,
// progress, the run's stop control, and the call into the kernel's group runner.
import { resolve } from 'node:path';
import {
  type ConcurrencyLimiter,
  ConfigError,
  createConcurrencyLimiter,
  type EnvItem,
  type EnvV1,
  type GroupJudgeV1,
  type Logger,
  type Registry,
  resolveAdvantageEstimator,
  runGroup,
  type SandboxProviderV1,
  type ScoredGroupRecord,
  type ServerV1,
  type ToolCallParserV1,
  type ToolsetDefinition,
} from '@shears/core';
import type { ActionPolicy } from '@shears/tools-terminal';
import {
  composeRegistry,
  createEnv,
  createFromConfig,
  createJudges,
  createSandboxProvider,
  createServer,
  observeServer,
  type PluginStatus,
  sandboxProviderId,
  withJudge,
} from './compose.js';
import type { ShearsConfig } from './config/config-schema.js';
import { configureEnv, createExtraTools } from './env-tools.js';
import type { CliIo } from './io.js';
import { buildActionPolicy, checkToolsetsConfig } from './plan/env-plan.js';
import { advantageEstimator } from './plan/loop-plan.js';
import { createProgress, type ProgressMode, type ProgressReporter } from './progress/progress.js';
import type { Redactor } from './redact.js';
import { createRunControl, type RunControl } from './run/run-control.js';

export interface CommandContext {
  config: ShearsConfig;
  apiKey: string | undefined;
  io: CliIo;
  logger: Logger;
  redact: Redactor;
  /** Stops the run at once (the second Ctrl-C). */
  signal: AbortSignal;
  /** Stops the run gently (the first Ctrl-C): no new rollouts; finished ones still rewarded. */
  drain: AbortSignal;
  positionals: string[];
  flags: Record<string, string | true>;
}

export interface Runtime {
  registry: Registry;
  plugins: PluginStatus[];
  /** The env, with `env.tools` added, its toolsets and sandbox checked, and `judge` in its reward step when the config sets one. */
  env: EnvV1;
  /** The toolsets the loaded plugins declare (registry.toolsets()), given to every group. */
  toolsets: Record<string, ToolsetDefinition>;
  server: ServerV1;
  /** `group_judge`, given to every group. */
  groupJudge: { judge: GroupJudgeV1; weight: number } | undefined;
  sandboxes: SandboxProviderV1;
  limiter: ConcurrencyLimiter;
  progress: ProgressReporter;
  /** How the run stops: drain, its time bound, the circuit breaker; failures seen so far. */
  control: RunControl;
  /** `env.action_policy`, checked before every tool call. */
  actionPolicy: ActionPolicy | undefined;
  /** `server.tool_parser`: parses tool calls from the text whenever the server returns none. */
  parser: ToolCallParserV1 | undefined;
  /** `server.fallback_parser`: parses text containing `<tool_call>` when the server returns none. */
  fallbackParser: ToolCallParserV1 | undefined;
  close(): Promise<void>;
}

/** `server.tool_parser` and `server.fallback_parser`, resolved by name in the parsers registry. */
export async function resolveParsers(
  registry: Registry,
  config: ShearsConfig,
): Promise<{ parser?: ToolCallParserV1; fallbackParser?: ToolCallParserV1 }> {
  const { tool_parser: parserId, fallback_parser: fallbackId } = config.server;
  const parser = parserId
    ? await createFromConfig(registry, 'parsers', parserId, 'server.tool_parser', {})
    : undefined;
  // The fallback only matters without a parser; `none` turns it off.
  const fallbackParser =
    !parserId && fallbackId !== 'none'
      ? await createFromConfig(registry, 'parsers', fallbackId, 'server.fallback_parser', {})
      : undefined;
  return { parser, fallbackParser };
}

function progressMode(context: CommandContext): ProgressMode {
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
  const control = createRunControl({
    signal: context.signal,
    drain: context.drain,
    drainTimeoutMs: config.run.drain_timeout_ms,
    maxRepeatedFailures: config.run.max_repeated_failures ?? Math.max(10, config.run.concurrency),
    note: (text) => progress.note(text),
  });
  const closers: Array<() => Promise<void> | void> = [() => control.close()];
  try {
    const actionPolicy = buildActionPolicy(config);
    checkToolsetsConfig(config);
    const { parser, fallbackParser } = await resolveParsers(registry, config);
    const extraTools = await createExtraTools(registry, config);
    const toolsets = registry.toolsets();
    const created = await createEnv(registry, config, context.io.cwd);
    closers.push(() => created.close?.());
    const env = configureEnv(created, {
      config,
      extraTools,
      toolsets,
      sandboxProvider: sandboxProviderId(config, created),
      logger: context.logger,
    });
    const judges = await createJudges(registry, config);
    for (const judgeServer of judges.servers) closers.push(() => judgeServer.close?.());
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
      env: judges.judge ? withJudge(env, judges.judge.judge, judges.judge.weight) : env,
      toolsets,
      server,
      groupJudge: judges.groupJudge,
      sandboxes,
      limiter: createConcurrencyLimiter(config.run.concurrency),
      progress,
      control,
      actionPolicy,
      parser,
      fallbackParser,
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
    advantages: advantageEstimator(config.run.advantage),
    allEqualScores: config.run.all_equal_scores,
    temperature: config.server.temperature,
    maxTokens: config.server.max_tokens,
    ...(runtime.groupJudge
      ? { groupJudge: runtime.groupJudge.judge, groupJudgeWeight: runtime.groupJudge.weight }
      : {}),
    ...(runtime.parser ? { parser: runtime.parser } : {}),
    ...(runtime.fallbackParser ? { fallbackParser: runtime.fallbackParser } : {}),
    ...(runtime.actionPolicy ? { beforeToolCall: runtime.actionPolicy.beforeToolCall } : {}),
    ...(config.env.toolsets?.enabled ? { enabledToolsets: config.env.toolsets.enabled } : {}),
    ...(config.env.toolsets?.disabled ? { disabledToolsets: config.env.toolsets.disabled } : {}),
    ...(config.env.toolsets?.distribution ? { toolsetDistribution: config.env.toolsets.distribution } : {}),
    toolsets: runtime.toolsets,
    signal: runtime.control.signal,
    drainSignal: runtime.control.drain,
    logger: context.logger,
    onEvent: (event) => {
      runtime.control.observe(event);
      if (event.type === 'rollout_started') runtime.progress.rolloutStarted();
      else if (event.type === 'rollout_finished')
        runtime.progress.rolloutFinished(event.outcome, event.willRetry);
    },
  });
}

export function resolveOut(context: CommandContext, path: string): string {
  return resolve(context.io.cwd, path);
}

/** `runs/demo.jsonl` → `runs/demo.html`. */
export function reportPathFor(jsonlPath: string): string {
  return `${jsonlPath.replace(/\.jsonl?$/i, '')}.html`;
}
