// The group runner: G rollouts of one item, concurrently under a global limiter. Every rollout
// owns a sandbox (acquire → agent → reward in the same sandbox → dispose, also on error and
// abort) and ends with a typed outcome. Infrastructure and judge failures are kept out of the
// group statistics and retried within a budget; model failures count with reward 0; an env whose
// own reward throws is an `env_error` (a bug, not retried). An optional group judge scores the
// finished rollouts together. The result is a ScoredGroupRecord with group-normalised
// advantages, or a partial record without advantages when the run was stopped mid-group.
// One attempt is rollout-attempt.ts; the group judge's pass, group-judging.ts; the record,
// group-record.ts.
import { randomUUID } from 'node:crypto';
import { type AdvantageEstimator, grpoEstimator } from './advantages.js';
import { type ConcurrencyLimiter, createConcurrencyLimiter } from './concurrency-limiter.js';
import type { BudgetV1 } from './contracts/budget.js';
import type { EnvItem, EnvV1, RolloutView } from './contracts/env.js';
import type { GroupJudgeV1, JudgeSubject } from './contracts/judge.js';
import type { Logger } from './contracts/logger.js';
import { silentLogger } from './contracts/logger.js';
import type { ToolCallParserV1 } from './contracts/parser.js';
import type { SandboxProviderV1 } from './contracts/sandbox.js';
import type { ServerV1 } from './contracts/server.js';
import type { ToolCallDecision, ToolCallRequest, ToolV1 } from './contracts/tool.js';
import { ConfigError, describeError, InvalidArgumentError, ServerError } from './errors.js';
import { applyGroupJudge } from './group-judging.js';
import { buildGroupRecord, type SettledRollout } from './group-record.js';
import {
  type AttemptResult,
  type RolloutAttemptScope,
  rolloutView,
  runRolloutAttempt,
} from './rollout-attempt.js';
import type { ScoredGroupRecord } from './schemas/group-record.js';
import type { RolloutOutcome } from './schemas/trajectory.js';
import { ignoreAborted, sleep } from './sleep.js';
import {
  mergeToolToolsets,
  sampleToolsets,
  selectTools,
  type ToolsetDefinition,
  type ToolsetDistribution,
} from './toolsets.js';

export type GroupEvent =
  | {
      type: 'group_started';
      groupId: string;
      taskId: string;
      groupSize: number;
      toolsets: string[] | undefined;
    }
  | { type: 'rollout_started'; groupId: string; rolloutId: string; index: number; attempt: number }
  | {
      type: 'rollout_finished';
      groupId: string;
      rolloutId: string;
      index: number;
      attempt: number;
      outcome: RolloutOutcome;
      reason: string | null;
      reward: number | null;
      tokens: number;
      turns: number;
      /** True when the outcome will be retried. */
      willRetry: boolean;
      /** What was thrown, when anything was (for `env_error`, the env's own error with its stack). */
      error?: unknown;
    }
  | { type: 'group_finished'; groupId: string; record: ScoredGroupRecord };

export interface RunGroupOptions<TItem extends EnvItem = EnvItem> {
  env: EnvV1<TItem>;
  item: TItem;
  server: ServerV1;
  sandboxes: SandboxProviderV1;
  /** Rollouts per group (G). */
  groupSize: number;
  /** Shared across groups to bound concurrent rollouts globally; default: one limiter of `groupSize`. */
  limiter?: ConcurrencyLimiter;
  /** Overrides on top of `env.budget(item)`. */
  budget?: Partial<BudgetV1>;
  parser?: ToolCallParserV1;
  fallbackParser?: ToolCallParserV1;
  temperature?: number;
  maxTokens?: number;
  extraBody?: Record<string, unknown>;
  /** Action policy for every rollout's tool calls. */
  beforeToolCall?: (
    call: ToolCallRequest & { rolloutId: string },
  ) => ToolCallDecision | Promise<ToolCallDecision>;
  /**
   * Toolset distribution sampled once per group; tools outside the sampled toolsets are not
   * offered. Takes precedence over `enabledToolsets` (as hermes' `distribution` does).
   */
  toolsetDistribution?: string | ToolsetDistribution;
  /** Toolsets to offer when there is no distribution (hermes' `enabled_toolsets`); default: all tools. */
  enabledToolsets?: readonly string[];
  /**
   * Toolsets whose tools are never offered, subtracted after enabling or sampling, also from
   * composites that include them (hermes' `disabled_toolsets`).
   */
  disabledToolsets?: readonly string[];
  distributions?: Readonly<Record<string, ToolsetDistribution>>;
  /** Toolset definitions (usually `registry.toolsets()`; default none); each env tool's own `toolset` is added to them. */
  toolsets?: Readonly<Record<string, ToolsetDefinition>>;
  /** Extra attempts per rollout after infrastructure or judge failures (default 2). */
  retryBudget?: number;
  /** Longest wait honoured from a server's Retry-After before retrying (default 5 s). */
  maxRetryDelayMs?: number;
  /** Advantage estimator (default `grpo`: the seed's mean / sample std; see ADVANTAGE_ESTIMATORS). */
  advantages?: AdvantageEstimator;
  /** What to do when every counted score is equal (default 'drop', as Atropos does). */
  allEqualScores?: 'keep' | 'drop';
  /** Time limit for `env.computeReward` per rollout; past it the rollout ends as a timeout. */
  rewardTimeoutMs?: number;
  /** Also reward rollouts that did not finish naturally (default: they are model failures with reward 0). */
  rewardUnfinished?: boolean;
  /**
   * Scores the group's `scored` rollouts together once every rollout is done (e.g. @shears/judges'
   * createGroupJudge). A failed verdict makes its rollout a `judge_failure` (kept out of the
   * statistics); the judge call, not the rollouts, is repeated up to `retryBudget` times while
   * any verdict failed, and the last call's verdicts are used.
   */
  groupJudge?: GroupJudgeV1;
  /**
   * Share of the group verdict in a judged rollout's reward:
   * `(1 - weight) × env reward + weight × group score`. Default 1 (the verdict replaces the env reward).
   */
  groupJudgeWeight?: number;
  /** The subject shown to the group judge per rollout (default: item id and prompt, messages, final response, `item.reference`). */
  groupJudgeSubject?: (item: TItem, rollout: RolloutView) => JudgeSubject;
  groupId?: string;
  /** Stops everything at once, rewards included (the second Ctrl-C, or the drain's time bound). */
  signal?: AbortSignal;
  /**
   * Stops the group gently (the first Ctrl-C): no rollout or retry starts any more, agent loops
   * in flight stop, and rollouts that already finished their turns still get their reward, until
   * `signal` fires. Stopped rollouts end as `aborted` and make the group partial.
   */
  drainSignal?: AbortSignal;
  logger?: Logger;
  onEvent?: (event: GroupEvent) => void;
  random?: () => number;
  now?: () => number;
}

/**
 * Which of the env's tools a group is offered, given its sampled toolsets (see selectTools:
 * tools of no toolset are always offered; an unknown toolset name throws).
 */
export function filterToolsByToolsets(
  tools: readonly ToolV1[],
  sampled: readonly string[],
  toolsets: Readonly<Record<string, ToolsetDefinition>> = {},
): ToolV1[] {
  return selectTools(tools, { enabled: sampled, toolsets });
}

export async function runGroup<TItem extends EnvItem>(
  options: RunGroupOptions<TItem>,
): Promise<ScoredGroupRecord> {
  const { env, item, server } = options;
  if (!Number.isInteger(options.groupSize) || options.groupSize < 1) {
    throw new InvalidArgumentError({
      argument: 'groupSize',
      value: options.groupSize,
      message: `groupSize must be a positive integer (got ${options.groupSize})`,
    });
  }
  const groupJudgeWeight = options.groupJudgeWeight ?? 1;
  if (!(Number.isFinite(groupJudgeWeight) && groupJudgeWeight >= 0 && groupJudgeWeight <= 1)) {
    throw new InvalidArgumentError({
      argument: 'groupJudgeWeight',
      value: options.groupJudgeWeight,
      message: `groupJudgeWeight must be a number from 0 to 1 (got ${options.groupJudgeWeight})`,
    });
  }
  if (options.groupJudge !== undefined && typeof options.groupJudge?.judgeGroup !== 'function') {
    throw new InvalidArgumentError({
      argument: 'groupJudge',
      value: options.groupJudge,
      message: 'groupJudge must be a GroupJudgeV1 (an object with a judgeGroup(subjects) method)',
    });
  }
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  const groupId = options.groupId ?? `group-${randomUUID().slice(0, 8)}`;
  const limiter = options.limiter ?? createConcurrencyLimiter(options.groupSize);
  const retryBudget = options.retryBudget ?? 2;
  const estimator = options.advantages ?? grpoEstimator;
  const signal = options.signal;
  // Everything but the reward stops on either signal; the reward only on `signal`.
  const stopSignal =
    signal && options.drainSignal
      ? AbortSignal.any([signal, options.drainSignal])
      : (options.drainSignal ?? signal);
  const started = performance.now();
  const emit = (event: GroupEvent) => {
    try {
      options.onEvent?.(event);
    } catch (error) {
      logger.warn('onEvent listener threw', { error: describeError(error) });
    }
  };

  const allTools = env.tools(item);
  const toolsetTable = options.toolsets ?? {};
  if (options.toolsetDistribution && options.enabledToolsets) {
    logger.warn('toolsetDistribution takes precedence; enabledToolsets is ignored', {
      enabledToolsets: [...options.enabledToolsets],
    });
  }
  // Every toolset name is checked here, before any sandbox starts: an unknown one throws.
  const sampledToolsets = options.toolsetDistribution
    ? sampleToolsets(options.toolsetDistribution, {
        toolsets: mergeToolToolsets(allTools, toolsetTable),
        ...(options.distributions ? { distributions: options.distributions } : {}),
        ...(options.random ? { random: options.random } : {}),
      })
    : undefined;
  const enabledToolsets =
    sampledToolsets ?? (options.enabledToolsets ? [...options.enabledToolsets] : undefined);
  const offeredTools =
    enabledToolsets !== undefined || options.disabledToolsets !== undefined
      ? selectTools(allTools, {
          enabled: enabledToolsets ?? null,
          disabled: options.disabledToolsets ?? [],
          toolsets: toolsetTable,
        })
      : allTools;
  const budget: Partial<BudgetV1> = { ...(env.budget?.(item) ?? {}), ...(options.budget ?? {}) };
  const sandboxSpec = env.sandboxSpec?.(item);
  const prompt = env.buildMessages(item);
  emit({
    type: 'group_started',
    groupId,
    taskId: item.id,
    groupSize: options.groupSize,
    toolsets: enabledToolsets,
  });

  const attemptScope: RolloutAttemptScope<TItem> = {
    env,
    item,
    server,
    sandboxes: options.sandboxes,
    sandboxSpec,
    prompt,
    offeredTools,
    allTools,
    budget,
    parser: options.parser,
    fallbackParser: options.fallbackParser,
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    extraBody: options.extraBody,
    beforeToolCall: options.beforeToolCall,
    rewardTimeoutMs: options.rewardTimeoutMs,
    rewardUnfinished: options.rewardUnfinished,
    signal,
    stopSignal,
    logger,
    now,
  };

  const runRollout = async (index: number): Promise<SettledRollout> => {
    let attempts = 0;
    for (;;) {
      attempts++;
      const rolloutId = `${groupId}-r${index}${attempts > 1 ? `-a${attempts}` : ''}`;
      let result: AttemptResult;
      try {
        result = await limiter.run(
          () => {
            emit({ type: 'rollout_started', groupId, rolloutId, index, attempt: attempts });
            return runRolloutAttempt(attemptScope, rolloutId);
          },
          stopSignal ? { signal: stopSignal } : {},
        );
      } catch (error) {
        // Only an abort while waiting for a slot reaches here.
        result = {
          outcome: 'aborted',
          reason: 'aborted while queued',
          agent: undefined,
          reward: undefined,
          error,
          wallTimeSeconds: 0,
        };
      }
      const retryable =
        (result.outcome === 'infra_failure' || result.outcome === 'judge_failure') &&
        !(ServerError.isInstance(result.error) && !result.error.retryable) &&
        !refusedInput(result.error) &&
        attempts <= retryBudget &&
        !stopSignal?.aborted;
      emit({
        type: 'rollout_finished',
        groupId,
        rolloutId,
        index,
        attempt: attempts,
        outcome: result.outcome,
        reason: result.reason,
        reward:
          result.outcome === 'scored' || result.outcome === 'model_failure'
            ? (result.reward?.score ?? 0)
            : null,
        tokens: result.agent?.usage.totalTokens ?? 0,
        turns: result.agent?.turnsUsed ?? 0,
        willRetry: retryable,
        ...(result.error !== undefined ? { error: result.error } : {}),
      });
      if (!retryable) return { result, attempts, rolloutId };
      const retryAfter = ServerError.isInstance(result.error) ? (result.error.retryAfterMs ?? 0) : 0;
      // A stop ends the wait; the next attempt then ends as aborted.
      await sleep(Math.min(retryAfter, options.maxRetryDelayMs ?? 5_000), stopSignal).catch(ignoreAborted);
    }
  };

  const settled = await Promise.all(
    Array.from({ length: options.groupSize }, (_, index) => runRollout(index)),
  );

  const judgeScores = options.groupJudge
    ? await applyGroupJudge({
        judge: options.groupJudge,
        weight: groupJudgeWeight,
        results: settled.map(({ result }) => result),
        subject: (agent) =>
          options.groupJudgeSubject
            ? options.groupJudgeSubject(item, rolloutView(agent))
            : {
                taskId: item.id,
                task: item.prompt,
                messages: agent.messages,
                finalResponse: agent.finalResponse,
                ...(typeof item.reference === 'string' ? { reference: item.reference } : {}),
              },
        retries: retryBudget,
        logger,
        ...(signal ? { signal } : {}),
      })
    : new Map<number, number>();

  const record = buildGroupRecord({
    groupId,
    envId: env.id,
    item,
    modelId: server.model,
    prompt,
    settled,
    judgeScores,
    enabledToolsets,
    estimator,
    allEqualScores: options.allEqualScores ?? 'drop',
    stopping: Boolean(signal?.aborted || options.drainSignal?.aborted),
    createdAt: new Date(now()).toISOString(),
    wallTimeSeconds: (performance.now() - started) / 1000,
  });
  emit({ type: 'group_finished', groupId, record });
  return record;
}

/**
 * A refusal of the input itself (a bad argument or setting, e.g. a tokenizer that renders text
 * only, given an image part), directly or as the cause of the error: the same attempt again
 * would be refused the same way, so it is not retried.
 */
function refusedInput(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (InvalidArgumentError.isInstance(current) || ConfigError.isInstance(current)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
