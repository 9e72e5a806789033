// Env contract: where tasks come from, which tools a rollout gets, and how it is rewarded.

import type { AgentResult } from './agent-result.js';
import type { BudgetV1 } from './budget.js';
import type { ChatMessage } from './chat.js';
import type { Logger } from './logger.js';
import type { SandboxSpec, SandboxV1 } from './sandbox.js';
import type { ServerV1 } from './server.js';
import type { ToolCallDecision, ToolCallRequest, ToolV1 } from './tool.js';

export interface EnvItem {
  /** Stable task id (used for sandboxes, caching and reports). */
  id: string;
  /** The task statement shown to the model. */
  prompt: string;
  [key: string]: unknown;
}

export interface RewardContext {
  /** The rollout's own sandbox: the reward runs where the agent acted. */
  sandbox: SandboxV1;
  /** The tools the rollout had, bound to its sandbox, for rewards that want to call them. */
  callTool(name: string, args: Record<string, unknown>): Promise<string>;
  rolloutId: string;
  signal: AbortSignal;
  logger: Logger;
}

export interface RewardResult {
  /** The composed reward. */
  score: number;
  /** Named components and zero-weight metrics (logged, not rewarded). */
  components?: Record<string, number>;
  /** Free-form details kept on the trajectory (judge rationales, diffs, test output). */
  details?: Record<string, unknown>;
  /**
   * Whether the rollout solved the task, in the env's own terms (tests passed, answer matched).
   * Kept as `success` on the trajectory; pass@k, `correct` and `solved` count it. Without it,
   * success is `reward >= run.success_threshold` (default 1).
   */
  success?: boolean;
}

/** What the reward function sees of the finished rollout. */
export interface RolloutView {
  messages: ChatMessage[];
  finalResponse: string | null;
  finishedNaturally: boolean;
  turnsUsed: number;
  toolErrorCount: number;
}

/**
 * What an env that runs its rollouts itself (`doRollout`: an existing agent program, say) is
 * given: the rollout's own server, sandbox and id, the prompt `buildMessages` made and the budget.
 */
export interface RolloutRunContext {
  server: ServerV1;
  sandbox: SandboxV1;
  rolloutId: string;
  messages: ChatMessage[];
  budget: Partial<BudgetV1>;
  /** Stops the rollout (the run stopping); the rollout ends as `aborted`. */
  signal: AbortSignal;
  logger: Logger;
  now: () => number;
  /**
   * The tools offered to this rollout: the env's tools after the run's toolset selection (what
   * the agent loop would offer), for an env that serves them to its program (e.g. over MCP).
   */
  tools?: readonly ToolV1[];
  /** The run's action policy, to check each of those tool calls as the agent loop does. */
  beforeToolCall?: (call: ToolCallRequest) => ToolCallDecision | Promise<ToolCallDecision>;
}

export interface EnvV1<TItem extends EnvItem = EnvItem> {
  readonly specificationVersion: 'v1';
  readonly id: string;
  setup?(options: { signal?: AbortSignal; logger: Logger }): Promise<void>;
  /** Next task, or null when the env has no more. */
  nextItem(): Promise<TItem | null>;
  buildMessages(item: TItem): ChatMessage[];
  /** Tools offered to this item's group. */
  tools(item: TItem): ToolV1[];
  /** Sandbox spec for this item's rollouts. */
  sandboxSpec?(item: TItem): SandboxSpec;
  budget?(item: TItem): Partial<BudgetV1>;
  /**
   * Runs one rollout in place of the kernel's agent loop and returns what the loop would
   * (`stopReason` decides the outcome as it does for the loop: `wall_clock` is a timeout,
   * `server_error` an infrastructure failure, `aborted` a stop; `finishedNaturally` false is a
   * model failure with reward 0). The reward then runs as usual, in the same sandbox. A throw is
   * an infrastructure failure (retried within the budget).
   */
  doRollout?(item: TItem, context: RolloutRunContext): Promise<AgentResult>;
  computeReward(item: TItem, rollout: RolloutView, context: RewardContext): Promise<RewardResult>;
  /** Items for evaluation runs. */
  evalItems?(): Promise<TItem[]>;
  close?(): Promise<void>;
}
