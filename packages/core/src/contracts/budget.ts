// Budget contract: limits on one rollout. Result-size defaults follow hermes-agent's
// tools/budget_config.py (100,000 / 200,000 / 1,500 characters, read_file pinned to Infinity).

export interface BudgetV1 {
  /** Default per-tool result threshold in characters before the result is persisted. */
  defaultResultSize: number;
  /** Total characters of tool results allowed in one turn. */
  turnBudget: number;
  /** Preview characters kept in the message when a result is persisted. */
  previewSize: number;
  /** Per-tool thresholds that override the tool's own. */
  toolOverrides: Record<string, number>;
  /** Maximum agent turns (model calls). */
  maxTurns: number;
  /** Stop when the rollout has used this many tokens (prompt + completion, summed over turns). */
  maxTokens?: number;
  /** Stop when the rollout has cost this much (USD, from server usage). */
  maxCostUsd?: number;
  /** Wall-clock limit for the whole rollout. */
  wallClockMs?: number;
  /** Default timeout for one tool call. */
  toolTimeoutMs?: number;
}

const DEFAULT_RESULT_SIZE_CHARS = 100_000;
const DEFAULT_TURN_BUDGET_CHARS = 200_000;
const DEFAULT_PREVIEW_SIZE_CHARS = 1_500;
/** Tools whose threshold can never be lowered (prevents persist -> read -> persist loops). */
export const PINNED_THRESHOLDS: Readonly<Record<string, number>> = { read_file: Number.POSITIVE_INFINITY };

export const DEFAULT_BUDGET: BudgetV1 = Object.freeze({
  defaultResultSize: DEFAULT_RESULT_SIZE_CHARS,
  turnBudget: DEFAULT_TURN_BUDGET_CHARS,
  previewSize: DEFAULT_PREVIEW_SIZE_CHARS,
  toolOverrides: {},
  maxTurns: 30,
}) as BudgetV1;

export function createBudget(overrides: Partial<BudgetV1> = {}): BudgetV1 {
  return { ...DEFAULT_BUDGET, toolOverrides: {}, ...overrides };
}
