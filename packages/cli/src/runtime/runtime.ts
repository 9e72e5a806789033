// The live parts of a run, created from its plan: the env (with `env.tools`, its toolsets and
// sandbox checked, and `judge` in its reward step), the server, the sandbox provider, the judges,
// progress, the run's stop control; and `runGroup`, one group through the kernel's group runner
// with the options the plan gives, built once when the runtime starts.
import {
  type ConcurrencyLimiter,
  createConcurrencyLimiter,
  type EnvItem,
  type EnvV1,
  type Registry,
  type RunGroupOptions,
  runGroup,
  type SandboxProviderV1,
  type ScoredGroupRecord,
  type ServerV1,
  type ToolCallParserV1,
} from '@shears/core';
import type { RunPlan } from '../plan/run-plan.js';
import { createProgress, type ProgressReporter } from '../progress/progress.js';
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
import { configureEnv, createExtraTools } from './env-tools.js';
import { createRunControl, type RunControl } from './run-control.js';

/** The registry a run creates its parts through (the CLI's plugin, the built-in packages, `plugins`). */
export interface RunRegistry {
  registry: Registry;
  plugins: PluginStatus[];
}

export interface Runtime {
  /** The env, with `env.tools` added, its toolsets and sandbox checked, and `judge` in its reward step when the plan has one. */
  env: EnvV1;
  server: ServerV1;
  sandboxes: SandboxProviderV1;
  limiter: ConcurrencyLimiter;
  progress: ProgressReporter;
  /** How the run stops: drain, its time bound, the circuit breaker; failures seen so far. */
  control: RunControl;
  /** One group of `groupSize` rollouts of `item` through the kernel's group runner. */
  runGroup(item: EnvItem, groupSize: number): Promise<ScoredGroupRecord>;
  close(): Promise<void>;
}

/** The registry of the plan's plugins (composed once per command; every runtime of the run uses it). */
export function composeRunRegistry(plan: RunPlan): Promise<RunRegistry> {
  return composeRegistry(plan, { cwd: plan.cwd, logger: plan.session.logger });
}

/** `server.tool_parser` and `server.fallback_parser`, resolved by name in the parsers registry. */
export async function resolveParsers(
  registry: Registry,
  server: Pick<RunPlan['server'], 'parser' | 'fallbackParser'>,
): Promise<{ parser?: ToolCallParserV1; fallbackParser?: ToolCallParserV1 }> {
  const parser = server.parser
    ? await createFromConfig(registry, 'parsers', server.parser, 'server.tool_parser', {})
    : undefined;
  const fallbackParser = server.fallbackParser
    ? await createFromConfig(registry, 'parsers', server.fallbackParser, 'server.fallback_parser', {})
    : undefined;
  return { parser, fallbackParser };
}

export async function startRuntime(
  plan: RunPlan,
  options: { registry: RunRegistry; totalGroups?: number; label?: string },
): Promise<Runtime> {
  const { session, control: settings } = plan;
  const { registry } = options.registry;
  const progress = createProgress({
    mode: settings.progress,
    write: (text) => session.io.stderr(session.redact(text)),
    totalGroups: options.totalGroups,
    label: options.label,
  });
  const control = createRunControl({
    signal: session.signal,
    drain: session.drain,
    drainTimeoutMs: settings.drainTimeoutMs,
    maxRepeatedFailures: settings.maxRepeatedFailures,
    note: (text) => progress.note(text),
  });
  const closers: Array<() => Promise<void> | void> = [() => control.close()];
  try {
    const { parser, fallbackParser } = await resolveParsers(registry, plan.server);
    const extraTools = await createExtraTools(registry, plan.env.tools);
    const toolsets = registry.toolsets();
    const created = await createEnv(registry, plan.env);
    closers.push(() => created.close?.());
    const env = configureEnv(created, {
      plan: plan.env,
      extraTools,
      toolsets,
      sandboxProvider: sandboxProviderId(plan.sandbox, created),
      logger: session.logger,
    });
    const judges = await createJudges(registry, plan.judges);
    for (const judgeServer of judges.servers) closers.push(() => judgeServer.close?.());
    const sandboxes = await createSandboxProvider(registry, plan.sandbox, env);
    closers.push(() => sandboxes.close());
    // Set up before the server: an env's scripted demo policy may need its prepared tasks.
    await env.setup?.({ signal: session.signal, logger: session.logger });
    const rawServer = await createServer(registry, plan.server, env);
    closers.push(() => rawServer.close?.());
    const server = observeServer(rawServer, (count) => progress.addTokens(count));
    const judgedEnv = judges.judge ? withJudge(env, judges.judge.judge, judges.judge.weight) : env;
    const limiter = createConcurrencyLimiter(settings.concurrency);
    const { toolsets: selection, maxTurns, actionPolicy } = plan.env;
    // runGroup's options but the item and the group size: the same for every group of the run.
    const groupOptions: Omit<RunGroupOptions, 'item' | 'groupSize'> = {
      env: judgedEnv,
      server,
      sandboxes,
      limiter,
      budget: maxTurns === undefined ? undefined : { maxTurns },
      retryBudget: plan.group.retries,
      advantages: plan.group.advantages,
      allEqualScores: plan.group.allEqualScores,
      temperature: plan.server.temperature,
      maxTokens: plan.server.maxTokens,
      ...(judges.groupJudge
        ? { groupJudge: judges.groupJudge.judge, groupJudgeWeight: judges.groupJudge.weight }
        : {}),
      ...(parser ? { parser } : {}),
      ...(fallbackParser ? { fallbackParser } : {}),
      ...(actionPolicy ? { beforeToolCall: actionPolicy.beforeToolCall } : {}),
      ...(selection?.enabled ? { enabledToolsets: selection.enabled } : {}),
      ...(selection?.disabled ? { disabledToolsets: selection.disabled } : {}),
      ...(selection?.distribution ? { toolsetDistribution: selection.distribution } : {}),
      toolsets,
      signal: control.signal,
      drainSignal: control.drain,
      logger: session.logger,
      onEvent: (event) => {
        control.observe(event);
        if (event.type === 'rollout_started') progress.rolloutStarted();
        else if (event.type === 'rollout_finished') progress.rolloutFinished(event.outcome, event.willRetry);
      },
    };
    return {
      env: judgedEnv,
      server,
      sandboxes,
      limiter,
      progress,
      control,
      runGroup: (item, groupSize) => runGroup({ ...groupOptions, item, groupSize }),
      async close() {
        progress.stop();
        for (const close of closers.reverse()) {
          try {
            await close();
          } catch (error) {
            session.logger.warn(`cleanup failed: ${(error as Error).message}`);
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
