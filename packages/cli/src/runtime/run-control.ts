// How a run stops and how it ends: the drain after the first Ctrl-C (bounded by
// `run.drain_timeout_ms`, after which everything stops), the circuit breaker that stops a run
// when the same failure repeats with no rollout scored in between, each distinct failure reason
// printed once (with its stack for an env's own bug) and counted, and the exit code.
import { setMaxListeners } from 'node:events';
import { EnvError, type GroupEvent } from '@shears/core';

/** Exit codes of the running commands (`process`, `evaluate`, `serve`, `train`). */
export const EXIT_CODES = {
  /** The run finished and at least one rollout got a reward. */
  ok: 0,
  /** An error stopped the command (its message says which). */
  error: 1,
  /** Bad command line or config: nothing ran. */
  usage: 2,
  /** The run finished but no rollout got a reward (every one failed). */
  nothingScored: 3,
  /** The circuit breaker stopped the run: the same failure kept repeating. */
  circuitBreaker: 4,
  /** Stopped by Ctrl-C / SIGTERM; what finished is written, partial groups are marked partial. */
  interrupted: 130,
} as const;

/** Outcomes that count as the same failure repeating (infrastructure, judges, the env's own bugs). */
const BREAKER_OUTCOMES = new Set(['infra_failure', 'judge_failure', 'env_error']);
const FAILURES = new Set(['infra_failure', 'judge_failure', 'env_error', 'timeout']);

export interface FailureCount {
  outcome: string;
  reason: string;
  /** Attempts that ended with this failure, retried ones included. */
  count: number;
  /** Of those, attempts that were retried. */
  retried: number;
}

export type StoppedBy =
  | { kind: 'interrupt' }
  | { kind: 'circuit_breaker'; outcome: string; reason: string; count: number };

export interface RunControl {
  /** Stops everything at once: the second Ctrl-C, or the end of the drain's time bound. */
  readonly signal: AbortSignal;
  /** Stops gently: the first Ctrl-C, or the circuit breaker. No new groups or rollouts start. */
  readonly drain: AbortSignal;
  readonly stopping: boolean;
  readonly stoppedBy: StoppedBy | undefined;
  /** Feed every group event here. */
  observe(event: GroupEvent): void;
  failures(): FailureCount[];
  close(): void;
}

interface RunControlOptions {
  signal: AbortSignal;
  drain: AbortSignal;
  drainTimeoutMs: number;
  /** Trip after this many failures with the same reason and no reward in between; 0: never. */
  maxRepeatedFailures: number;
  note: (text: string) => void;
}

/**
 * A failure reason without what differs between attempts of the same failure (group and
 * rollout ids, durations, long hex ids), so that a repeated failure is recognised as one.
 */
export function normalizeReason(reason: string): string {
  return reason
    .replace(/group-[0-9a-f]{8}(-r\d+(-a\d+)?)?/g, 'group-…')
    .replace(/\b[0-9a-f]{12,}\b/g, '…')
    .replace(/\b\d+(\.\d+)?\s?(ms|s)\b/g, 'N $2')
    .slice(0, 400);
}

export function createRunControl(options: RunControlOptions): RunControl {
  const hard = new AbortController();
  const gentle = new AbortController();
  const signal = AbortSignal.any([options.signal, hard.signal]);
  const drain = AbortSignal.any([options.drain, options.signal, gentle.signal]);
  // Every rollout listens on these; hundreds of listeners are expected.
  setMaxListeners(0, signal, drain);
  let stoppedBy: StoppedBy | undefined;
  let bound: NodeJS.Timeout | undefined;
  const counts = new Map<string, FailureCount>();
  const sinceReward = new Map<string, number>();

  const onDrain = () => {
    stoppedBy ??= { kind: 'interrupt' };
    if (signal.aborted) return;
    options.note(
      `stopping: no new rollouts; rollouts that finished their turns get up to ${formatSeconds(options.drainTimeoutMs)} for their rewards (run.drain_timeout_ms)`,
    );
    bound = setTimeout(() => {
      options.note('stopping: drain time is up; stopping the rewards still running');
      hard.abort(new Error('drain time is up'));
    }, options.drainTimeoutMs);
  };
  if (drain.aborted) onDrain();
  else drain.addEventListener('abort', onDrain, { once: true });

  const observe = (event: GroupEvent) => {
    if (event.type !== 'rollout_finished') return;
    if (event.outcome === 'scored' || event.outcome === 'model_failure') {
      sinceReward.clear();
      return;
    }
    if (!FAILURES.has(event.outcome) || !event.reason) return;
    const reason = normalizeReason(event.reason);
    const key = `${event.outcome}\u0000${reason}`;
    const entry = counts.get(key) ?? { outcome: event.outcome, reason, count: 0, retried: 0 };
    entry.count++;
    if (event.willRetry) entry.retried++;
    counts.set(key, entry);
    // Each distinct failure once, then its count at 10, 100, 1000, ...
    if (entry.count === 1) {
      const stack =
        event.outcome === 'env_error' && EnvError.isInstance(event.error)
          ? `\n${indent(stackOf(event.error.cause) ?? '')}`
          : '';
      options.note(
        `failed: ${event.outcome}${event.willRetry ? ' (retrying)' : ''}: ${event.reason}${event.outcome === 'env_error' ? ' (a bug in the env: not retried)' : ''}${stack}`,
      );
    } else if (Number.isInteger(Math.log10(entry.count)))
      options.note(`failed ×${entry.count}: ${event.outcome}: ${reason}`);
    if (!BREAKER_OUTCOMES.has(event.outcome) || options.maxRepeatedFailures <= 0) return;
    const repeated = (sinceReward.get(key) ?? 0) + 1;
    sinceReward.set(key, repeated);
    if (repeated >= options.maxRepeatedFailures && stoppedBy?.kind !== 'circuit_breaker' && !drain.aborted) {
      stoppedBy = { kind: 'circuit_breaker', outcome: event.outcome, reason, count: repeated };
      options.note(
        `stopping early: the same failure repeated ${repeated} times with no rollout scored in between (run.max_repeated_failures ${options.maxRepeatedFailures}): ${event.outcome}: ${reason}`,
      );
      gentle.abort(new Error('circuit breaker'));
    }
  };

  return {
    signal,
    drain,
    get stopping() {
      return drain.aborted || signal.aborted;
    },
    get stoppedBy() {
      return stoppedBy ?? (options.signal.aborted ? { kind: 'interrupt' } : undefined);
    },
    observe,
    failures: () => [...counts.values()].sort((a, b) => b.count - a.count),
    close() {
      if (bound) clearTimeout(bound);
      drain.removeEventListener('abort', onDrain);
    },
  };
}

function formatSeconds(ms: number): string {
  return ms < 10_000 ? `${Number((ms / 1000).toFixed(1))}s` : `${Math.round(ms / 1000)}s`;
}

function stackOf(error: unknown): string | undefined {
  return error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

/** The failures of a run, one line each with its count, for the summary. */
export function formatFailures(failures: readonly FailureCount[]): string {
  if (failures.length === 0) return '';
  return [
    'failures (attempts, retries included):',
    ...failures.map(
      (failure) =>
        `  ${String(failure.count).padStart(5)} × ${failure.outcome}${failure.retried ? ` (${failure.retried} retried)` : ''}: ${failure.reason}`,
    ),
  ].join('\n');
}

/** How a run ends: the circuit breaker, an interrupt, nothing scored, or success. */
export function exitCodeFor(options: { stoppedBy: StoppedBy | undefined; scoredRollouts: number }): number {
  if (options.stoppedBy?.kind === 'circuit_breaker') return EXIT_CODES.circuitBreaker;
  if (options.stoppedBy?.kind === 'interrupt') return EXIT_CODES.interrupted;
  if (options.scoredRollouts === 0) return EXIT_CODES.nothingScored;
  return EXIT_CODES.ok;
}

/** The closing line for a run that did not end normally, or undefined. */
export function endingNote(options: {
  stoppedBy: StoppedBy | undefined;
  scoredRollouts: number;
  /** Rollouts run at all, when known (0: the env gave no task). */
  rollouts?: number;
}): string | undefined {
  const { stoppedBy } = options;
  if (stoppedBy?.kind === 'circuit_breaker')
    return `stopped early (exit ${EXIT_CODES.circuitBreaker}): ${stoppedBy.outcome} repeated ${stoppedBy.count} times: ${stoppedBy.reason}`;
  if (stoppedBy?.kind === 'interrupt')
    return `interrupted (exit ${EXIT_CODES.interrupted}): the output is incomplete`;
  if (options.rollouts === 0) return `nothing ran (exit ${EXIT_CODES.nothingScored}): the env gave no task`;
  if (options.scoredRollouts === 0)
    return `no rollout got a reward (exit ${EXIT_CODES.nothingScored}): every one failed; see the failures above`;
  return undefined;
}
