// One runtime: the live parts a run of groups needs, created from its plan: progress, the run's
// stop control, the judges, the env (with `env.tools`, its toolsets and sandbox checked, and
// `judge` in its reward step), the sandbox provider, the server; and `runGroup`, one group through
// the kernel's group runner with the options the plan gives, built once when the runtime starts.
import {
  type ConcurrencyLimiter,
  createConcurrencyLimiter,
  type EnvItem,
  type EnvV1,
  type RunGroupOptions,
  runGroup,
  type SandboxProviderV1,
  type ScoredGroupRecord,
  type ServerV1,
} from '@shears/core';
import type { RunPlan } from '../plan/run-plan.js';
import { createProgress, type ProgressReporter } from '../progress/progress.js';
import { createRuntimeParts } from './compose.js';
import { configureEnv } from './env-tools.js';
import { createJudges, withJudge } from './judges.js';
import type { RunRegistry } from './registry.js';
import { createRunControl, type RunControl } from './run-control.js';

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

export async function startRuntime(
  plan: RunPlan,
  options: { registry: RunRegistry; totalGroups?: number; label?: string },
): Promise<Runtime> {
  const { session, control: settings } = plan;
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
  const close = async (warn: boolean) => {
    progress.stop();
    for (const closer of closers.reverse()) {
      try {
        await closer();
      } catch (error) {
        if (warn) session.logger.warn(`cleanup failed: ${(error as Error).message}`);
      }
    }
  };
  try {
    const judges = await createJudges(options.registry, plan.judges);
    for (const judgeServer of judges.servers) closers.push(() => judgeServer.close?.());
    const judged = (env: EnvV1) =>
      judges.judge ? withJudge(env, judges.judge.judge, judges.judge.weight) : env;
    const parts = await createRuntimeParts(options.registry, plan, {
      own: (closer) => closers.push(closer),
      onTokens: (count) => progress.addTokens(count),
      judged,
    });
    const env = configureEnv(parts.env, {
      plan: plan.env,
      extraTools: parts.extraTools,
      toolsets: parts.toolsets,
      sandboxProvider: parts.sandboxProvider,
      logger: session.logger,
    });
    const limiter = createConcurrencyLimiter(settings.concurrency);
    const { toolsets: selection, maxTurns, actionPolicy } = plan.env;
    const { parser, fallbackParser, server, sandboxes } = parts;
    // runGroup's options but the item and the group size: the same for every group of the run.
    const groupOptions: Omit<RunGroupOptions, 'item' | 'groupSize'> = {
      env,
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
      toolsets: parts.toolsets,
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
      env,
      server,
      sandboxes,
      limiter,
      progress,
      control,
      runGroup: (item, groupSize) => runGroup({ ...groupOptions, item, groupSize }),
      close: () => close(true),
    };
  } catch (error) {
    await close(false);
    throw error;
  }
}
