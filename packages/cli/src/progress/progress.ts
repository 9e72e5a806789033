// Progress for long runs: live bars for groups and rollouts (in flight, done, failed by kind,
// mean reward, tokens/s) on a terminal, one plain line per group otherwise, and a summary
// table at the end.
import type { ScoredGroupRecord } from '@shears/core';
import { type SuccessRule, successRule } from '../stats.js';

export type ProgressMode = 'bars' | 'lines' | 'none';

export interface ProgressSnapshot {
  groupsDone: number;
  groupsTotal: number | undefined;
  rolloutsInFlight: number;
  rolloutsDone: number;
  failedByKind: Record<string, number>;
  meanReward: number | null;
  tokens: number;
  tokensPerSecond: number;
  elapsedSeconds: number;
}

export interface ProgressReporter {
  rolloutStarted(): void;
  /** A rollout attempt ended; failures are counted by kind, retries included. */
  rolloutFinished(outcome?: string, willRetry?: boolean): void;
  addTokens(count: number): void;
  /**
   * A group is done; `status` replaces the line's label (`serve` prints a group only once the
   * API acknowledged it: `sent`, or `not sent (reason)`).
   */
  groupFinished(record: ScoredGroupRecord, options?: { status?: string }): void;
  /** A free-form line (pauses, retries) that does not break the bars. */
  note(text: string): void;
  snapshot(): ProgressSnapshot;
  /** Stop redrawing; leaves the final bars on screen. */
  stop(): void;
}

interface ProgressOptions {
  mode: ProgressMode;
  write: (text: string) => void;
  totalGroups?: number;
  label?: string;
  now?: () => number;
  /** Redraw interval for bars. */
  intervalMs?: number;
}

/**
 * Progress says so when this many groups in a row were dropped as all-equal, and again at every
 * multiple of `every` while the streak lasts.
 */
const ALL_EQUAL_STREAK = { first: 3, every: 10 };

function bar(fraction: number, width: number): string {
  const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

export function formatNumber(value: number | null | undefined, digits = 2): string {
  return value === null || value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits);
}

export function createProgress(options: ProgressOptions): ProgressReporter {
  const now = options.now ?? Date.now;
  const started = now();
  let groupsDone = 0;
  let inFlight = 0;
  let rolloutsDone = 0;
  let tokens = 0;
  let rewardSum = 0;
  let rewardCount = 0;
  const failed: Record<string, number> = {};
  let drawnLines = 0;
  let timer: NodeJS.Timeout | undefined;
  // Groups in a row dropped because every counted score was equal (no signal to learn from).
  let allEqualStreak = 0;

  const snapshot = (): ProgressSnapshot => {
    const elapsedSeconds = Math.max(1e-3, (now() - started) / 1000);
    return {
      groupsDone,
      groupsTotal: options.totalGroups,
      rolloutsInFlight: inFlight,
      rolloutsDone,
      failedByKind: { ...failed },
      meanReward: rewardCount ? rewardSum / rewardCount : null,
      tokens,
      tokensPerSecond: tokens / elapsedSeconds,
      elapsedSeconds,
    };
  };

  const render = (): string[] => {
    const state = snapshot();
    const total = state.groupsTotal;
    const failures = Object.entries(state.failedByKind)
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', ');
    return [
      `groups   ${total ? bar(state.groupsDone / total, 24) : ''} ${state.groupsDone}${total ? `/${total}` : ''}  mean reward ${formatNumber(state.meanReward)}`,
      `rollouts in flight ${state.rolloutsInFlight}  done ${state.rolloutsDone}  failed ${failures || '0'}  ${Math.round(state.tokensPerSecond)} tok/s  ${state.elapsedSeconds.toFixed(1)}s`,
    ];
  };

  const draw = () => {
    const lines = render();
    const up = drawnLines > 0 ? `\x1b[${drawnLines}A` : '';
    options.write(`${up}${lines.map((line) => `\x1b[2K${line}`).join('\n')}\n`);
    drawnLines = lines.length;
  };

  const clearBars = () => {
    if (drawnLines > 0) {
      options.write(`\x1b[${drawnLines}A\x1b[0J`);
      drawnLines = 0;
    }
  };

  if (options.mode === 'bars') {
    timer = setInterval(draw, options.intervalMs ?? 120);
    timer.unref();
  }

  const emitLine = (text: string) => {
    if (options.mode === 'none') return;
    if (options.mode === 'bars') {
      clearBars();
      options.write(`${text}\n`);
      draw();
    } else options.write(`${text}\n`);
  };

  return {
    rolloutStarted() {
      inFlight++;
    },
    rolloutFinished(outcome, willRetry) {
      inFlight = Math.max(0, inFlight - 1);
      if (outcome && outcome !== 'scored') failed[outcome] = (failed[outcome] ?? 0) + 1;
      if (outcome && !willRetry) rolloutsDone++;
    },
    addTokens(count) {
      tokens += count;
    },
    groupFinished(record, lineOptions) {
      groupsDone++;
      for (const rollout of record.rollouts) {
        if (rollout.reward !== null && rollout.reward !== undefined) {
          rewardSum += rollout.reward;
          rewardCount++;
        }
      }
      const scores = record.scores.map((score) => (score === null ? '×' : score.toFixed(2))).join(' ');
      const advantages = record.advantages
        .map((advantage) =>
          advantage === null ? '×' : `${advantage >= 0 ? '+' : ''}${advantage.toFixed(2)}`,
        )
        .join(' ');
      const total = options.totalGroups ? `/${options.totalGroups}` : '';
      const status = lineOptions?.status ? `  ${lineOptions.status}` : '';
      emitLine(
        `${options.label ?? 'group'} ${groupsDone}${total} ${record.taskId.padEnd(12)} scores ${scores}  adv ${advantages}  mean ${formatNumber(record.stats.mean)}${record.dropped ? `  (dropped: ${record.dropped.reason})` : ''}  ${record.wallTimeSeconds.toFixed(1)}s${status}`,
      );
      allEqualStreak =
        record.dropped && droppedLabel(record.dropped) === 'all scores equal' ? allEqualStreak + 1 : 0;
      if (
        allEqualStreak === ALL_EQUAL_STREAK.first ||
        (allEqualStreak > ALL_EQUAL_STREAK.first && allEqualStreak % ALL_EQUAL_STREAK.every === 0)
      )
        emitLine(
          `${allEqualStreak} groups in a row dropped: all scores equal (every rollout of a group got the same score, so no advantage to learn from; the tasks may be too easy or too hard for this model, or the reward may not vary)`,
        );
    },
    note(text) {
      emitLine(text);
    },
    snapshot,
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      if (options.mode === 'bars') draw();
    },
  };
}

/** Text table with right-aligned numeric columns. */
export function formatTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ');
  return [line(header), widths.map((width) => '─'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}

/** Words for why a group was dropped, by its `dropped.kind` (its reason text otherwise). */
export function droppedLabel(dropped: NonNullable<ScoredGroupRecord['dropped']>): string {
  switch (dropped.kind) {
    case 'all_equal':
      return 'all scores equal';
    case 'no_valid_score':
      return 'no valid score';
    case 'partial':
      return 'partial: stopped mid-group';
    default:
      // Records written before kinds existed: the reason without its numbers.
      if (/counted scores are equal/.test(dropped.reason)) return 'all scores equal';
      return dropped.reason;
  }
}

/** `3 dropped (2 all scores equal, 1 no valid score)`. */
export function formatDropped(groups: readonly ScoredGroupRecord[]): string {
  const byReason = new Map<string, number>();
  for (const group of groups)
    if (group.dropped) {
      const label = droppedLabel(group.dropped);
      byReason.set(label, (byReason.get(label) ?? 0) + 1);
    }
  const total = [...byReason.values()].reduce((sum, count) => sum + count, 0);
  if (total === 0) return '0 dropped';
  return `${total} dropped (${[...byReason.entries()].map(([label, count]) => `${count} ${label}`).join(', ')})`;
}

/**
 * What a run's closing summary tallies over its groups, kept as counts so that a long run
 * (`serve`, `train`) does not hold every group: rollouts by outcome, dropped groups by reason,
 * tool calls and their errors (by tool and error), replies cut at the token limit.
 */
export interface GroupTally {
  groups: number;
  rollouts: number;
  /** Rollouts by outcome (`scored`, and each kind of failure). */
  outcomes: Record<string, number>;
  /** Dropped groups by reason in words (droppedLabel). */
  dropped: Record<string, number>;
  toolCalls: number;
  /** Tool errors by `tool: first line of the error`. */
  toolErrors: Record<string, number>;
  lengthCut: number;
}

export function emptyTally(): GroupTally {
  return { groups: 0, rollouts: 0, outcomes: {}, dropped: {}, toolCalls: 0, toolErrors: {}, lengthCut: 0 };
}

const bump = (counts: Record<string, number>, key: string, by = 1) => {
  counts[key] = (counts[key] ?? 0) + by;
};

/** Adds one group to a tally (returns the tally). */
export function tallyGroup(tally: GroupTally, group: ScoredGroupRecord): GroupTally {
  tally.groups++;
  if (group.dropped) bump(tally.dropped, droppedLabel(group.dropped));
  for (const rollout of group.rollouts) {
    tally.rollouts++;
    bump(tally.outcomes, rollout.outcome);
    tally.toolCalls += rollout.steps.reduce((sum, step) => sum + step.toolCalls.length, 0);
    for (const error of rollout.toolErrors) {
      const text = (error.error || error.toolResult).split('\n')[0]!.slice(0, 120);
      bump(tally.toolErrors, `${error.toolName}: ${text}`);
    }
    if (/\(max_tokens\)/.test(rollout.outcomeReason ?? '')) tally.lengthCut++;
  }
  return tally;
}

/** Adds `from` into `into` (`train`'s workers; returns `into`). */
export function mergeTallies(into: GroupTally, from: GroupTally): GroupTally {
  into.groups += from.groups;
  into.rollouts += from.rollouts;
  into.toolCalls += from.toolCalls;
  into.lengthCut += from.lengthCut;
  for (const [key, count] of Object.entries(from.outcomes)) bump(into.outcomes, key, count);
  for (const [key, count] of Object.entries(from.dropped)) bump(into.dropped, key, count);
  for (const [key, count] of Object.entries(from.toolErrors)) bump(into.toolErrors, key, count);
  return into;
}

const tallyOf = (groups: readonly ScoredGroupRecord[]) =>
  groups.reduce((tally, group) => tallyGroup(tally, group), emptyTally());

function toolErrorText(tally: GroupTally): string | undefined {
  const counts = Object.entries(tally.toolErrors);
  const total = counts.reduce((sum, [, count]) => sum + count, 0);
  if (total === 0) return undefined;
  const top = counts
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([key, count]) => `${count} × ${key}`);
  const denominator = Math.max(tally.toolCalls, total);
  return `tool errors: ${total} of ${denominator} tool calls${total === denominator ? ' (every call failed)' : ''}; ${top.join('; ')}${counts.length > 3 ? '; …' : ''}`;
}

function lengthCutText(tally: GroupTally): string | undefined {
  if (tally.lengthCut === 0) return undefined;
  return `length-cut: ${tally.lengthCut} of ${tally.rollouts} rollouts ended on a reply cut at the token limit (server.max_tokens), with no final answer`;
}

/**
 * Tool calls that returned an error, of all calls, by tool and error (the three most common): a
 * run whose tool fails every call (a schema the code does not take, a missing binary) says so.
 */
export function toolErrorLine(groups: readonly ScoredGroupRecord[]): string | undefined {
  return toolErrorText(tallyOf(groups));
}

/** Rollouts whose last reply was cut at the token limit (no final answer: max_tokens). */
export function lengthCutLine(groups: readonly ScoredGroupRecord[]): string | undefined {
  return lengthCutText(tallyOf(groups));
}

/**
 * The closing summary's tallies of `serve` and `train`: rollouts and failed rollouts by cause,
 * dropped groups by reason, tool errors, length-cut replies.
 */
export function tallyLines(tally: GroupTally): string[] {
  const failed = Object.entries(tally.outcomes)
    .filter(([outcome]) => outcome !== 'scored')
    .sort((a, b) => b[1] - a[1]);
  const failedTotal = failed.reduce((sum, [, count]) => sum + count, 0);
  const dropped = Object.entries(tally.dropped).sort((a, b) => b[1] - a[1]);
  const droppedTotal = dropped.reduce((sum, [, count]) => sum + count, 0);
  return [
    `${tally.groups} groups finished, ${droppedTotal} dropped${droppedTotal ? ` (${dropped.map(([label, count]) => `${count} ${label}`).join(', ')})` : ''}; ${tally.rollouts} rollouts, ${tally.outcomes.scored ?? 0} scored, ${failedTotal} failed${failedTotal ? ` (${failed.map(([outcome, count]) => `${count} ${outcome}`).join(', ')})` : ''}`,
    ...[toolErrorText(tally), lengthCutText(tally)].filter((line): line is string => !!line),
  ];
}

/** The end-of-run table: one row per task, then totals and failures by kind. */
export function summarizeGroups(
  groups: readonly ScoredGroupRecord[],
  snapshot: ProgressSnapshot,
  options: { success?: SuccessRule } = {},
): string {
  const success = options.success ?? successRule(undefined);
  const byTask = new Map<
    string,
    { groups: number; rollouts: number; rewards: number[]; solved: number; failed: number }
  >();
  const outcomes: Record<string, number> = {};
  for (const group of groups) {
    const entry = byTask.get(group.taskId) ?? { groups: 0, rollouts: 0, rewards: [], solved: 0, failed: 0 };
    entry.groups++;
    for (const rollout of group.rollouts) {
      entry.rollouts++;
      outcomes[rollout.outcome] = (outcomes[rollout.outcome] ?? 0) + 1;
      if (rollout.reward !== null && rollout.reward !== undefined) entry.rewards.push(rollout.reward);
      if (success.test(rollout)) entry.solved++;
      if (rollout.outcome !== 'scored') entry.failed++;
    }
    byTask.set(group.taskId, entry);
  }
  const rows = [...byTask.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([task, entry]) => [
      task,
      String(entry.groups),
      String(entry.rollouts),
      formatNumber(
        entry.rewards.length
          ? entry.rewards.reduce((sum, value) => sum + value, 0) / entry.rewards.length
          : null,
      ),
      `${Math.round((100 * entry.solved) / Math.max(1, entry.rollouts))}%`,
      String(entry.failed),
    ]);
  const all = groups
    .flatMap((group) => group.rollouts.map((rollout) => rollout.reward))
    .filter((value): value is number => value !== null && value !== undefined);
  const table = formatTable(['task', 'groups', 'rollouts', 'mean', 'solved', 'failed'], rows);
  const outcomeText = Object.entries(outcomes)
    .sort()
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');
  const extras = [toolErrorLine(groups), lengthCutLine(groups)].filter((line): line is string => !!line);
  return [
    table,
    '',
    `${groups.length} groups, ${all.length} scored rollouts, mean reward ${formatNumber(all.length ? all.reduce((sum, value) => sum + value, 0) / all.length : null)}, ${formatDropped(groups)}`,
    `outcomes: ${outcomeText || 'none'}`,
    ...extras,
    `solved: ${success.description}`,
    `${snapshot.tokens} tokens, ${Math.round(snapshot.tokensPerSecond)} tok/s, ${snapshot.elapsedSeconds.toFixed(1)}s`,
  ].join('\n');
}
