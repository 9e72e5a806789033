// The group runner: G rollouts of one item, concurrently under a global limiter. Every rollout
// owns a sandbox (acquire → agent → reward in the same sandbox → dispose, also on error and
// abort) and ends with a typed outcome. Infrastructure and judge failures are kept out of the
// group statistics and retried within a budget; model failures count with reward 0; an env whose
// own reward throws is an `env_error` (a bug, not retried). An optional group judge scores the
// finished rollouts together. The result is a ScoredGroupRecord with group-normalised
// advantages, or a partial record without advantages when the run was stopped mid-group.
import { randomUUID } from 'node:crypto';
import { type AdvantageEstimator, grpoEstimator } from './advantages.js';
import {
  type AgentResult,
  type RunAgentOptions,
  runAgent,
  type ToolCallDecision,
  type ToolCallRequest,
} from './agent-loop.js';
import { type ConcurrencyLimiter, createConcurrencyLimiter } from './concurrency-limiter.js';
import type { BudgetV1 } from './contracts/budget.js';
import type { EnvItem, EnvV1, RewardContext, RewardResult, RolloutView } from './contracts/env.js';
import type { GroupJudgeV1, JudgeSubject, Verdict } from './contracts/judge.js';
import type { Logger } from './contracts/logger.js';
import { silentLogger } from './contracts/logger.js';
import type { ToolCallParserV1 } from './contracts/parser.js';
import type { SandboxProviderV1, SandboxV1 } from './contracts/sandbox.js';
import type { ServerV1 } from './contracts/server.js';
import type { ToolContext, ToolV1 } from './contracts/tool.js';
import {
  AbortedError,
  describeError,
  EnvError,
  InvalidArgumentError,
  JudgeError,
  NoSuchEntryError,
  SandboxError,
  ServerError,
  TimeoutError,
} from './errors.js';
import type { GroupStats, ScoredGroupRecord } from './schemas/group-record.js';
import type { RolloutOutcome, Trajectory } from './schemas/trajectory.js';
import { verdictRecord } from './schemas/verdict-record.js';
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

interface AttemptResult {
  outcome: RolloutOutcome;
  reason: string | null;
  agent: AgentResult | undefined;
  reward: RewardResult | undefined;
  error: unknown;
  wallTimeSeconds: number;
  /** Milliseconds spent outside the agent loop (see Trajectory.timings). */
  timings?: { sandboxAcquireMs: number; rewardMs: number; groupJudgeMs?: number; sandboxReleaseMs: number };
}

/** What the reward function and a custom group-judge subject see of a finished rollout. */
function rolloutView(agent: AgentResult): RolloutView {
  return {
    messages: agent.messages,
    finalResponse: agent.finalResponse,
    finishedNaturally: agent.finishedNaturally,
    turnsUsed: agent.turnsUsed,
    toolErrorCount: agent.toolErrors.length,
  };
}

function statsOf(scores: readonly number[], excluded: number): GroupStats {
  if (scores.length === 0) return { counted: 0, excluded, mean: null, std: null, min: null, max: null };
  const mean = scores.reduce((sum, score) => sum + score, 0) / scores.length;
  const std = Math.sqrt(scores.reduce((sum, score) => sum + (score - mean) ** 2, 0) / scores.length);
  return { counted: scores.length, excluded, mean, std, min: Math.min(...scores), max: Math.max(...scores) };
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

  const attempt = async (rolloutId: string): Promise<AttemptResult> => {
    const attemptStarted = performance.now();
    // Filled as the attempt goes; the object is shared by `finish`, so the release time set in
    // the `finally` below still reaches the result.
    const timings = { sandboxAcquireMs: 0, rewardMs: 0, sandboxReleaseMs: 0 };
    const finish = (
      outcome: RolloutOutcome,
      reason: string | null,
      extra: Partial<AttemptResult> = {},
    ): AttemptResult => ({
      outcome,
      reason,
      agent: undefined,
      reward: undefined,
      error: undefined,
      ...extra,
      timings,
      wallTimeSeconds: (performance.now() - attemptStarted) / 1000,
    });
    if (signal?.aborted) return finish('aborted', 'aborted before start');
    if (stopSignal?.aborted) return finish('aborted', 'not started: the run is stopping');
    let sandbox: SandboxV1;
    const acquireStarted = performance.now();
    try {
      sandbox = await options.sandboxes.acquire(sandboxSpec, stopSignal ? { signal: stopSignal } : {});
      timings.sandboxAcquireMs = performance.now() - acquireStarted;
    } catch (error) {
      timings.sandboxAcquireMs = performance.now() - acquireStarted;
      if (stopSignal?.aborted || AbortedError.isInstance(error))
        return finish('aborted', 'aborted while acquiring a sandbox', { error });
      return finish('infra_failure', `sandbox: ${describeError(error)}`, { error });
    }
    try {
      const state = new Map<string, unknown>();
      const agentOptions: RunAgentOptions = {
        server,
        messages: prompt,
        tools: offeredTools,
        sandbox,
        taskId: item.id,
        rolloutId,
        budget,
        state,
        logger,
        ...(options.parser ? { parser: options.parser } : {}),
        ...(options.fallbackParser ? { fallbackParser: options.fallbackParser } : {}),
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
        ...(options.extraBody ? { extraBody: options.extraBody } : {}),
        ...(options.beforeToolCall
          ? { beforeToolCall: (call: ToolCallRequest) => options.beforeToolCall!({ ...call, rolloutId }) }
          : {}),
        ...(stopSignal ? { signal: stopSignal } : {}),
        now,
      };
      let agent: AgentResult;
      try {
        agent = env.doRollout
          ? await env.doRollout(item, {
              server,
              sandbox,
              rolloutId,
              messages: prompt,
              budget,
              signal: stopSignal ?? new AbortController().signal,
              logger,
              now,
            })
          : await runAgent(agentOptions);
      } catch (error) {
        // runAgent reports failures in its result; a throw here is a sandbox or framework fault.
        if (stopSignal?.aborted) return finish('aborted', 'aborted', { error });
        return finish('infra_failure', `agent: ${describeError(error)}`, { error });
      }
      switch (agent.stopReason) {
        case 'aborted':
          return finish('aborted', 'aborted', { agent, error: agent.error });
        case 'wall_clock':
          return finish('timeout', `wall-clock limit of ${budget.wallClockMs} ms`, { agent });
        case 'server_error': {
          const error = agent.error;
          const detail = ServerError.isInstance(error) ? error.message : describeError(error);
          return finish('infra_failure', `server: ${detail}`, { agent, error });
        }
        default:
          break;
      }
      if (!agent.finishedNaturally && !options.rewardUnfinished) {
        return finish('model_failure', `no final answer (${agent.stopReason})`, {
          agent,
          reward: { score: 0 },
        });
      }
      const rewardTools = new Map(allTools.map((tool) => [tool.name, tool]));
      const rewardController = new AbortController();
      const rewardSignal = signal
        ? AbortSignal.any([signal, rewardController.signal])
        : rewardController.signal;
      const context: RewardContext = {
        sandbox,
        rolloutId,
        signal: rewardSignal,
        logger,
        async callTool(name, args) {
          const tool = rewardTools.get(name);
          if (!tool)
            throw new NoSuchEntryError({ kind: 'tool', id: name, available: [...rewardTools.keys()].sort() });
          const parsed = tool.inputSchema.safeParse(args);
          if (!parsed.success) {
            throw new InvalidArgumentError({
              argument: name,
              value: args,
              message: `Invalid arguments for tool '${name}': ${parsed.error.message}`,
            });
          }
          const toolContext: ToolContext = {
            sandbox,
            taskId: item.id,
            rolloutId,
            signal: rewardSignal,
            logger,
            state,
          };
          const output = await tool.execute(parsed.data, toolContext);
          return typeof output === 'string' ? output : output.content;
        },
      };
      const view = rolloutView(agent);
      let reward: RewardResult;
      let rewardTimedOut = false;
      const rewardTimer =
        options.rewardTimeoutMs !== undefined
          ? setTimeout(() => {
              rewardTimedOut = true;
              rewardController.abort(new Error(`reward exceeded ${options.rewardTimeoutMs} ms`));
            }, options.rewardTimeoutMs)
          : undefined;
      const rewardStarted = performance.now();
      try {
        // Race the reward against its signal so a reward that ignores the signal cannot hold the group.
        const computing = env.computeReward(item, view, context);
        computing.catch(() => {});
        const stopped = new Promise<'stopped'>((resolve) => {
          if (rewardSignal.aborted) resolve('stopped');
          rewardSignal.addEventListener('abort', () => resolve('stopped'), { once: true });
        });
        const settledReward = await Promise.race([computing, stopped]);
        if (settledReward === 'stopped') throw new AbortedError({ cause: rewardSignal.reason });
        reward = settledReward;
      } catch (error) {
        if (rewardTimedOut && !signal?.aborted) {
          return finish('timeout', `reward exceeded ${options.rewardTimeoutMs} ms`, { agent, error });
        }
        if (signal?.aborted || AbortedError.isInstance(error))
          return finish('aborted', 'aborted during reward', { agent, error });
        if (JudgeError.isInstance(error))
          return finish('judge_failure', `judge: ${error.message}`, { agent, error });
        if (
          SandboxError.isInstance(error) ||
          ServerError.isInstance(error) ||
          TimeoutError.isInstance(error)
        ) {
          return finish('infra_failure', `reward: ${describeError(error)}`, { agent, error });
        }
        // Anything else the env's reward throws is a bug in the env: retrying cannot help.
        return finish('env_error', `env "${env.id}" reward threw ${describeError(error)}`, {
          agent,
          error: new EnvError({ envId: env.id, message: describeError(error), cause: error }),
        });
      } finally {
        timings.rewardMs = performance.now() - rewardStarted;
        if (rewardTimer) clearTimeout(rewardTimer);
        rewardController.abort();
      }
      if (typeof reward?.score !== 'number' || !Number.isFinite(reward.score)) {
        const message = `env "${env.id}" reward returned ${
          reward === null || typeof reward !== 'object'
            ? `${String(reward)} instead of { score }`
            : typeof reward.score === 'number'
              ? `a non-finite score (${reward.score})`
              : `a score that is not a number (${typeof reward.score} ${JSON.stringify(reward.score) ?? String(reward.score)})`
        }`;
        return finish('env_error', message, {
          agent,
          error: new EnvError({ envId: env.id, message }),
        });
      }
      return agent.finishedNaturally
        ? finish('scored', null, { agent, reward })
        : finish('model_failure', `no final answer (${agent.stopReason})`, { agent, reward });
    } finally {
      const releaseStarted = performance.now();
      try {
        await sandbox.dispose();
      } catch (error) {
        logger.warn('sandbox dispose failed', { sandboxId: sandbox.id, error: describeError(error) });
      }
      timings.sandboxReleaseMs = performance.now() - releaseStarted;
    }
  };

  const runRollout = async (
    index: number,
  ): Promise<{ result: AttemptResult; attempts: number; rolloutId: string }> => {
    let attempts = 0;
    for (;;) {
      attempts++;
      const rolloutId = `${groupId}-r${index}${attempts > 1 ? `-a${attempts}` : ''}`;
      let result: AttemptResult;
      try {
        result = await limiter.run(
          () => {
            emit({ type: 'rollout_started', groupId, rolloutId, index, attempt: attempts });
            return attempt(rolloutId);
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

  const taskDescription = item.prompt;
  const trajectories: Trajectory[] = settled.map(({ result, attempts, rolloutId }, index) => {
    const agent = result.agent;
    const counted = result.outcome === 'scored' || result.outcome === 'model_failure';
    const reward = counted ? (result.reward?.score ?? 0) : null;
    const usage = agent?.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
    return {
      rolloutId,
      taskId: item.id,
      taskDescription,
      modelId: server.model,
      outcome: result.outcome,
      outcomeReason: result.reason,
      attempts,
      // ChatMessage and the schema's message type differ only in index signatures on content parts.
      messages: (agent?.messages ?? prompt) as Trajectory['messages'],
      steps: agent?.steps ?? [],
      finalResponse: agent?.finalResponse ?? null,
      finishedNaturally: agent?.finishedNaturally ?? false,
      turnsUsed: agent?.turnsUsed ?? 0,
      reward,
      ...(counted && result.reward?.components ? { rewardComponents: result.reward.components } : {}),
      ...(counted && result.reward?.details ? { rewardDetails: result.reward.details } : {}),
      ...(counted && typeof result.reward?.success === 'boolean' ? { success: result.reward.success } : {}),
      advantage: null,
      ...(judgeScores.has(index) ? { judgeScore: judgeScores.get(index)! } : {}),
      toolErrors: agent?.toolErrors ?? [],
      policyRefusals: agent?.policyRefusals ?? 0,
      usage,
      tokenCount: usage.totalTokens,
      wallTimeSeconds: result.wallTimeSeconds,
      ...(result.timings ? { timings: result.timings } : {}),
      ...(agent?.tokenRecord ? { tokens: agent.tokenRecord } : {}),
      ...(enabledToolsets ? { toolsets: enabledToolsets } : {}),
    };
  });

  const scores = trajectories.map((trajectory) => trajectory.reward);
  const countedScores = scores.filter((score): score is number => score !== null);
  const stats = statsOf(countedScores, scores.length - countedScores.length);
  // A group cut short by a stop has no advantages: they would be relative to the survivors only.
  const stopped = trajectories.filter((trajectory) => trajectory.outcome === 'aborted').length;
  const partial =
    stopped > 0
      ? {
          reason: `${stopped} of ${options.groupSize} rollouts were stopped before they finished (${signal?.aborted || options.drainSignal?.aborted ? 'the run was stopping' : 'aborted'})`,
          stopped,
        }
      : null;
  const computed = partial ? [] : estimator.compute(countedScores);
  let cursor = 0;
  const advantages = scores.map((score) => (score === null || partial ? null : (computed[cursor++] ?? 0)));
  trajectories.forEach((trajectory, index) => {
    trajectory.advantage = advantages[index] ?? null;
  });

  let dropped: NonNullable<ScoredGroupRecord['dropped']> | null = null;
  if (partial) dropped = { kind: 'partial', reason: `partial group: ${partial.reason}` };
  else if (countedScores.length === 0)
    dropped = { kind: 'no_valid_score', reason: 'no rollout produced a valid score' };
  else if (
    (options.allEqualScores ?? 'drop') === 'drop' &&
    countedScores.every((score) => score === countedScores[0])
  ) {
    dropped = {
      kind: 'all_equal',
      reason: `all ${countedScores.length} counted scores are equal (${countedScores[0]})`,
    };
  }

  const record: ScoredGroupRecord = {
    kind: 'shears.group',
    version: 1,
    groupId,
    envId: env.id,
    taskId: item.id,
    item,
    createdAt: new Date(now()).toISOString(),
    rollouts: trajectories,
    scores,
    advantages,
    advantageMethod: estimator.name,
    stats,
    dropped,
    ...(partial ? { partial } : {}),
    ...(enabledToolsets ? { toolsets: enabledToolsets } : {}),
    wallTimeSeconds: (performance.now() - started) / 1000,
  };
  emit({ type: 'group_finished', groupId, record });
  return record;
}

/**
 * Runs the group judge over the `scored` rollouts (in place): a scored verdict combines into the
 * reward and joins `details.verdicts`; a failed one turns the rollout into a judge failure.
 * Returns the group score per rollout index.
 */
async function applyGroupJudge(options: {
  judge: GroupJudgeV1;
  weight: number;
  results: AttemptResult[];
  subject: (agent: AgentResult) => JudgeSubject;
  retries: number;
  logger: Logger;
  signal?: AbortSignal;
}): Promise<Map<number, number>> {
  const { judge, weight, results, signal } = options;
  const judged = results.flatMap((result, index) =>
    result.outcome === 'scored' && result.agent ? [{ index, result, agent: result.agent }] : [],
  );
  const scores = new Map<number, number>();
  if (judged.length === 0) return scores;
  const subjects = judged.map(({ agent }) => options.subject(agent));
  const failure = (kind: string, reason: string): Verdict => ({
    status: 'failed',
    kind,
    reason,
    judgeId: judge.id,
  });
  const started = performance.now();
  let verdicts: Verdict[] = [];
  for (let call = 0; call <= options.retries; call++) {
    try {
      const returned = await judge.judgeGroup(subjects, signal ? { signal } : {});
      verdicts =
        Array.isArray(returned) && returned.length === subjects.length
          ? returned.map((verdict) =>
              verdict.status === 'scored' &&
              !(Number.isFinite(verdict.score) && verdict.score >= 0 && verdict.score <= 1)
                ? failure('out_of_range', `score ${verdict.score} is outside [0, 1]`)
                : verdict,
            )
          : subjects.map(() =>
              failure(
                'other',
                `returned ${Array.isArray(returned) ? returned.length : 'no list of'} verdicts for ${subjects.length} rollouts`,
              ),
            );
    } catch (error) {
      // A group judge that throws breaks its contract; its rollouts still only fail as judge failures.
      verdicts = subjects.map(() => failure('other', `judgeGroup threw: ${describeError(error)}`));
    }
    if (signal?.aborted || verdicts.every((verdict) => verdict.status === 'scored')) break;
    if (call < options.retries)
      options.logger.warn('group judge failed; judging the group again', {
        judgeId: judge.id,
        failed: verdicts.filter((verdict) => verdict.status === 'failed').length,
      });
  }
  const seconds = (performance.now() - started) / 1000;
  judged.forEach(({ index, result }, position) => {
    const verdict = verdicts[position]!;
    result.wallTimeSeconds += seconds;
    if (result.timings) result.timings.groupJudgeMs = seconds * 1000;
    if (verdict.status === 'failed') {
      result.outcome = signal?.aborted ? 'aborted' : 'judge_failure';
      result.reason = signal?.aborted
        ? 'aborted during group judging'
        : `group judge "${verdict.judgeId ?? judge.id}" failed (${verdict.kind}): ${verdict.reason}`;
      return;
    }
    const envScore = result.reward?.score ?? 0;
    const previous = result.reward?.details?.verdicts;
    result.reward = {
      score: (1 - weight) * envScore + weight * verdict.score,
      components: { ...result.reward?.components, before_group_judge: envScore, group_judge: verdict.score },
      details: {
        ...result.reward?.details,
        verdicts: [...(Array.isArray(previous) ? previous : []), verdictRecord(verdict, judge.id)],
      },
    };
    scores.set(index, verdict.score);
  });
  return scores;
}
