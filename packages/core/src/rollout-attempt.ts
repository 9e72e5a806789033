// One attempt at one rollout of a group: acquire its own sandbox → agent loop (or the env's own
// `doRollout`) → the env's reward in that same sandbox → dispose, also on error and abort. Every
// way it can end is a typed outcome; the group runner decides what is retried and counted.
import { type RunAgentOptions, runAgent } from './agent-loop.js';
import type { AgentResult } from './contracts/agent-result.js';
import type { BudgetV1 } from './contracts/budget.js';
import type { ChatMessage } from './contracts/chat.js';
import type { EnvItem, EnvV1, RewardContext, RewardResult, RolloutView } from './contracts/env.js';
import type { Logger } from './contracts/logger.js';
import type { ToolCallParserV1 } from './contracts/parser.js';
import type { SandboxProviderV1, SandboxSpec, SandboxV1 } from './contracts/sandbox.js';
import type { ServerV1 } from './contracts/server.js';
import type { ToolCallDecision, ToolCallRequest, ToolContext, ToolV1 } from './contracts/tool.js';
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
import { linkSignals } from './linked-signal.js';
import type { RolloutOutcome } from './schemas/trajectory.js';

export interface AttemptResult {
  outcome: RolloutOutcome;
  reason: string | null;
  agent: AgentResult | undefined;
  reward: RewardResult | undefined;
  error: unknown;
  wallTimeSeconds: number;
  /** Milliseconds spent outside the agent loop (see Trajectory.timings). */
  timings?: AttemptTimings;
}

/** Where an attempt's time went outside the agent loop (filled as the attempt goes). */
export interface AttemptTimings {
  sandboxAcquireMs: number;
  rewardMs: number;
  groupJudgeMs?: number;
  sandboxReleaseMs: number;
}

/** What every attempt of one group shares: resolved once by the group runner. */
export interface RolloutAttemptScope<TItem extends EnvItem> {
  env: EnvV1<TItem>;
  item: TItem;
  server: ServerV1;
  sandboxes: SandboxProviderV1;
  sandboxSpec: SandboxSpec | undefined;
  prompt: ChatMessage[];
  /** The tools offered to the agent (after toolset selection). */
  offeredTools: ToolV1[];
  /** All of the env's tools: what the reward's `callTool` may call. */
  allTools: readonly ToolV1[];
  budget: Partial<BudgetV1>;
  parser?: ToolCallParserV1 | undefined;
  fallbackParser?: ToolCallParserV1 | undefined;
  temperature?: number | undefined;
  maxTokens?: number | undefined;
  extraBody?: Record<string, unknown> | undefined;
  beforeToolCall?:
    | ((call: ToolCallRequest & { rolloutId: string }) => ToolCallDecision | Promise<ToolCallDecision>)
    | undefined;
  rewardTimeoutMs?: number | undefined;
  rewardUnfinished?: boolean | undefined;
  /** Stops everything, rewards included. */
  signal?: AbortSignal | undefined;
  /** Stops everything but rewards (the signal, or the drain signal). */
  stopSignal?: AbortSignal | undefined;
  logger: Logger;
  now: () => number;
}

/** What the reward function and a custom group-judge subject see of a finished rollout. */
export function rolloutView(agent: AgentResult): RolloutView {
  return {
    messages: agent.messages,
    finalResponse: agent.finalResponse,
    finishedNaturally: agent.finishedNaturally,
    turnsUsed: agent.turnsUsed,
    toolErrorCount: agent.toolErrors.length,
  };
}

type Finish = (
  outcome: RolloutOutcome,
  reason: string | null,
  extra?: Partial<AttemptResult>,
) => AttemptResult;

export async function runRolloutAttempt<TItem extends EnvItem>(
  scope: RolloutAttemptScope<TItem>,
  rolloutId: string,
): Promise<AttemptResult> {
  const { signal, stopSignal } = scope;
  const attemptStarted = performance.now();
  // Shared by every `finish`, so the release time set in the `finally` below still reaches the result.
  const timings: AttemptTimings = { sandboxAcquireMs: 0, rewardMs: 0, sandboxReleaseMs: 0 };
  const finish: Finish = (outcome, reason, extra = {}) => ({
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
    sandbox = await scope.sandboxes.acquire(scope.sandboxSpec, stopSignal ? { signal: stopSignal } : {});
    timings.sandboxAcquireMs = performance.now() - acquireStarted;
  } catch (error) {
    timings.sandboxAcquireMs = performance.now() - acquireStarted;
    if (stopSignal?.aborted || AbortedError.isInstance(error))
      return finish('aborted', 'aborted while acquiring a sandbox', { error });
    return finish('infra_failure', `sandbox: ${describeError(error)}`, { error });
  }
  // Clean-up tools registered for this rollout (ToolContext.onRolloutEnd), run before the dispose.
  const cleanups: Array<() => Promise<void> | void> = [];
  const onRolloutEnd = (cleanup: () => Promise<void> | void) => {
    cleanups.push(cleanup);
  };
  try {
    return await rolloutInSandbox(scope, rolloutId, sandbox, finish, timings, onRolloutEnd);
  } finally {
    const releaseStarted = performance.now();
    await runRolloutCleanups(cleanups, scope.logger);
    try {
      await sandbox.dispose();
    } catch (error) {
      scope.logger.warn('sandbox dispose failed', { sandboxId: sandbox.id, error: describeError(error) });
    }
    timings.sandboxReleaseMs = performance.now() - releaseStarted;
  }
}

/** Longest a rollout's clean-up may hold its release. */
const CLEANUP_TIMEOUT_MS = 5_000;

async function runRolloutCleanups(
  cleanups: Array<() => Promise<void> | void>,
  logger: Logger,
): Promise<void> {
  if (cleanups.length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      logger.warn('rollout clean-up still running; disposing the sandbox anyway', {
        timeoutMs: CLEANUP_TIMEOUT_MS,
      });
      resolve();
    }, CLEANUP_TIMEOUT_MS);
  });
  const all = Promise.all(
    cleanups.map(async (cleanup) => {
      try {
        await cleanup();
      } catch (error) {
        logger.warn('rollout clean-up failed', { error: describeError(error) });
      }
    }),
  );
  await Promise.race([all, timeout]);
  clearTimeout(timer);
}

async function rolloutInSandbox<TItem extends EnvItem>(
  scope: RolloutAttemptScope<TItem>,
  rolloutId: string,
  sandbox: SandboxV1,
  finish: Finish,
  timings: AttemptTimings,
  onRolloutEnd: (cleanup: () => Promise<void> | void) => void,
): Promise<AttemptResult> {
  const { env, item, server, stopSignal, budget, logger, now } = scope;
  const state = new Map<string, unknown>();
  const beforeToolCall = scope.beforeToolCall;
  const agentOptions: RunAgentOptions = {
    server,
    messages: scope.prompt,
    tools: scope.offeredTools,
    sandbox,
    taskId: item.id,
    rolloutId,
    budget,
    state,
    onRolloutEnd,
    logger,
    ...(scope.parser ? { parser: scope.parser } : {}),
    ...(scope.fallbackParser ? { fallbackParser: scope.fallbackParser } : {}),
    ...(scope.temperature !== undefined ? { temperature: scope.temperature } : {}),
    ...(scope.maxTokens !== undefined ? { maxTokens: scope.maxTokens } : {}),
    ...(scope.extraBody ? { extraBody: scope.extraBody } : {}),
    ...(beforeToolCall
      ? { beforeToolCall: (call: ToolCallRequest) => beforeToolCall({ ...call, rolloutId }) }
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
          messages: scope.prompt,
          budget,
          signal: stopSignal ?? new AbortController().signal,
          logger,
          now,
          tools: scope.offeredTools,
          ...(agentOptions.beforeToolCall ? { beforeToolCall: agentOptions.beforeToolCall } : {}),
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
  if (!agent.finishedNaturally && !scope.rewardUnfinished) {
    return finish('model_failure', `no final answer (${agent.stopReason})`, {
      agent,
      reward: { score: 0 },
    });
  }
  return rewardRollout(scope, { rolloutId, sandbox, state, agent, onRolloutEnd }, finish, timings);
}

/** The env's reward for a finished rollout, in its sandbox, under the reward time limit. */
async function rewardRollout<TItem extends EnvItem>(
  scope: RolloutAttemptScope<TItem>,
  rollout: {
    rolloutId: string;
    sandbox: SandboxV1;
    state: Map<string, unknown>;
    agent: AgentResult;
    onRolloutEnd: (cleanup: () => Promise<void> | void) => void;
  },
  finish: Finish,
  timings: AttemptTimings,
): Promise<AttemptResult> {
  const { env, item, signal, logger } = scope;
  const { rolloutId, sandbox, state, agent, onRolloutEnd } = rollout;
  const rewardTools = new Map(scope.allTools.map((tool) => [tool.name, tool]));
  // Ended when the reward is done, so work it left behind stops; also on `signal` and the time limit.
  const rewardLink = linkSignals([signal], {
    timeoutMs: scope.rewardTimeoutMs,
    timeoutReason: () => new Error(`reward exceeded ${scope.rewardTimeoutMs} ms`),
  });
  const rewardSignal = rewardLink.signal;
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
        onRolloutEnd,
      };
      const output = await tool.execute(parsed.data, toolContext);
      return typeof output === 'string' ? output : output.content;
    },
  };
  let reward: RewardResult;
  const rewardStarted = performance.now();
  try {
    // Race the reward against its signal so a reward that ignores the signal cannot hold the group.
    const computing = env.computeReward(item, rolloutView(agent), context);
    computing.catch(() => {});
    const stopped = new Promise<'stopped'>((resolve) => {
      if (rewardSignal.aborted) resolve('stopped');
      rewardSignal.addEventListener('abort', () => resolve('stopped'), { once: true });
    });
    const settledReward = await Promise.race([computing, stopped]);
    if (settledReward === 'stopped') throw new AbortedError({ cause: rewardSignal.reason });
    reward = settledReward;
  } catch (error) {
    if (rewardLink.timedOut && !signal?.aborted) {
      return finish('timeout', `reward exceeded ${scope.rewardTimeoutMs} ms`, { agent, error });
    }
    if (signal?.aborted || AbortedError.isInstance(error))
      return finish('aborted', 'aborted during reward', { agent, error });
    if (JudgeError.isInstance(error))
      return finish('judge_failure', `judge: ${error.message}`, { agent, error });
    if (SandboxError.isInstance(error) || ServerError.isInstance(error) || TimeoutError.isInstance(error)) {
      return finish('infra_failure', `reward: ${describeError(error)}`, { agent, error });
    }
    // Anything else the env's reward throws is a bug in the env: retrying cannot help.
    return finish('env_error', `env "${env.id}" reward threw ${describeError(error)}`, {
      agent,
      error: new EnvError({ envId: env.id, message: describeError(error), cause: error }),
    });
  } finally {
    timings.rewardMs = performance.now() - rewardStarted;
    rewardLink.abort();
    rewardLink.dispose();
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
}
