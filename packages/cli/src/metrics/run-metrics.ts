// The run metrics stream: every command that runs groups hands each finished group to a
// RunMetrics, which writes one `group` row at once and folds the group into the open time window
// and the open trainer step; a window row is written every `run.metrics_window_seconds` (and a
// last, `final` one at the end), a step row whenever the trajectory API reports a new trainer step.
// The work per group is a pass over its rollouts' steps: small beside running the group.
import type { RolloutOutcome, ScoredGroupRecord } from '@shears/core';
import type { SuccessRule } from '../stats.js';
import type {
  EvalMetrics,
  GroupMetrics,
  LatencySplit,
  LoopEventMetrics,
  MetricsRow,
  StepMetrics,
  SummaryStats,
  TrainerStepMetrics,
  WindowMetrics,
} from './metrics-schema.js';

type MetricsCommand = GroupMetrics['command'];

export function summaryStats(values: readonly number[]): SummaryStats {
  if (values.length === 0) return { count: 0, mean: null, std: null, min: null, max: null };
  let sum = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) {
    sum += value;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  const mean = sum / values.length;
  let squares = 0;
  for (const value of values) squares += (value - mean) ** 2;
  return { count: values.length, mean, std: Math.sqrt(squares / values.length), min, max };
}

interface ToolTally {
  calls: number;
  errors: number;
  latencyMs: number;
}

interface JudgeTally {
  verdicts: number;
  failures: Record<string, number>;
  judgeFailureRollouts: number;
  panels: number;
  disagreementStdSum: number;
  flagged: number;
}

/** The raw sums of one group, kept so windows and steps aggregate exactly (not means of means). */
interface GroupTally {
  taskId: string;
  rewards: number[];
  passed: number;
  counted: number;
  outcomes: Partial<Record<RolloutOutcome, number>>;
  zeroSignal: boolean;
  dropped: boolean;
  partial: boolean;
  advantages: number[];
  turns: number[];
  tools: Map<string, ToolTally>;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  latency: LatencySplit;
  judges: JudgeTally;
  lagSteps: number | undefined;
}

function emptyLatency(): LatencySplit {
  return {
    model: 0,
    tools: 0,
    sandboxAcquire: 0,
    reward: 0,
    judges: 0,
    sandboxRelease: 0,
    missingTimings: 0,
  };
}

function emptyJudges(): JudgeTally {
  return { verdicts: 0, failures: {}, judgeFailureRollouts: 0, panels: 0, disagreementStdSum: 0, flagged: 0 };
}

const COUNTED = new Set<RolloutOutcome>(['scored', 'model_failure']);

export function tallyGroup(record: ScoredGroupRecord, success: SuccessRule): GroupTally {
  const tally: GroupTally = {
    taskId: record.taskId,
    rewards: [],
    passed: 0,
    counted: 0,
    outcomes: {},
    zeroSignal: true,
    dropped: Boolean(record.dropped),
    partial: Boolean(record.partial),
    advantages: [],
    turns: [],
    tools: new Map(),
    promptTokens: 0,
    completionTokens: 0,
    costUsd: 0,
    latency: emptyLatency(),
    judges: emptyJudges(),
    lagSteps: undefined,
  };
  for (const rollout of record.rollouts) {
    tally.outcomes[rollout.outcome] = (tally.outcomes[rollout.outcome] ?? 0) + 1;
    if (COUNTED.has(rollout.outcome) && rollout.reward !== null) {
      tally.counted++;
      tally.rewards.push(rollout.reward);
      if (success.test(rollout)) tally.passed++;
    }
    if (typeof rollout.advantage === 'number') tally.advantages.push(rollout.advantage);
    tally.turns.push(rollout.turnsUsed);
    if (rollout.outcome === 'judge_failure') tally.judges.judgeFailureRollouts++;
    tally.promptTokens += rollout.usage.promptTokens;
    tally.completionTokens += rollout.usage.completionTokens;
    tally.costUsd += rollout.usage.costUsd ?? 0;
    for (const step of rollout.steps) {
      tally.latency.model += step.chatMs;
      tally.latency.tools += step.toolMs;
      for (const call of step.toolCalls) {
        let tool = tally.tools.get(call.name);
        if (!tool) {
          tool = { calls: 0, errors: 0, latencyMs: 0 };
          tally.tools.set(call.name, tool);
        }
        tool.calls++;
        if (call.error) tool.errors++;
        tool.latencyMs += call.latencyMs;
      }
    }
    if (rollout.timings) {
      tally.latency.sandboxAcquire += rollout.timings.sandboxAcquireMs;
      tally.latency.reward += rollout.timings.rewardMs;
      tally.latency.sandboxRelease += rollout.timings.sandboxReleaseMs;
      tally.latency.judges += rollout.timings.groupJudgeMs ?? 0;
    } else tally.latency.missingTimings++;
    const details = rollout.rewardDetails;
    if (details) {
      if (typeof details.judgeMs === 'number') tally.latency.judges += details.judgeMs;
      if (Array.isArray(details.verdicts))
        for (const verdict of details.verdicts as Array<Record<string, unknown>>) {
          if (!verdict || typeof verdict !== 'object') continue;
          tally.judges.verdicts++;
          if (verdict.status === 'failed') {
            const kind = typeof verdict.kind === 'string' ? verdict.kind : 'other';
            tally.judges.failures[kind] = (tally.judges.failures[kind] ?? 0) + 1;
          }
          const spread = verdict.disagreement as { std?: unknown; flagged?: unknown } | undefined;
          if (spread && typeof spread.std === 'number') {
            tally.judges.panels++;
            tally.judges.disagreementStdSum += spread.std;
            if (spread.flagged === true) tally.judges.flagged++;
          }
        }
    }
  }
  tally.zeroSignal = tally.rewards.every((reward) => reward === tally.rewards[0]);
  return tally;
}

function toolsRecord(tools: Map<string, ToolTally>): GroupMetrics['tools'] {
  const out: GroupMetrics['tools'] = {};
  for (const [name, tool] of [...tools].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    out[name] = {
      calls: tool.calls,
      errors: tool.errors,
      errorRate: tool.calls ? tool.errors / tool.calls : null,
      meanLatencyMs: tool.calls ? tool.latencyMs / tool.calls : null,
    };
  return out;
}

function judgesRecord(judges: JudgeTally): GroupMetrics['judges'] {
  return {
    verdicts: judges.verdicts,
    failures: judges.failures,
    judgeFailureRollouts: judges.judgeFailureRollouts,
    panels: judges.panels,
    meanDisagreementStd: judges.panels ? judges.disagreementStdSum / judges.panels : null,
    flagged: judges.flagged,
  };
}

/** The loop fields of a group row (without the key when the group has none). */
export type GroupLoop = NonNullable<GroupMetrics['loop']>;

/** Sums of many groups, for a window or a trainer step. */
class Aggregate {
  groups: GroupTally[] = [];
  /** Set once any group of the run carried loop fields: the aggregate rows then carry `loop`. */
  loopSeen = false;
  replayGroups = 0;
  capabilityGroups = 0;
  add(tally: GroupTally, loop?: GroupLoop) {
    if (loop) this.loopSeen = true;
    // A replayed group's rollouts ran (and were counted) when it was first sent.
    if (loop?.replayOf !== undefined) {
      this.replayGroups++;
      return;
    }
    if (loop?.source === 'capability') this.capabilityGroups++;
    this.groups.push(tally);
  }
  reset() {
    this.groups = [];
    this.replayGroups = 0;
    this.capabilityGroups = 0;
  }
  loopFields(level: number | string | undefined) {
    if (!this.loopSeen) return {};
    const sent = this.groups.filter((group) => !group.dropped).length + this.replayGroups;
    return {
      loop: {
        replayGroups: this.replayGroups,
        replayShare: sent ? this.replayGroups / sent : null,
        capabilityGroups: this.capabilityGroups,
        curriculumLevel: level ?? null,
      },
    };
  }
  fields(seconds: number) {
    const rewards: number[] = [];
    const advantages: number[] = [];
    const turns: number[] = [];
    const outcomes: Partial<Record<RolloutOutcome, number>> = {};
    const tools = new Map<string, ToolTally>();
    const latency = emptyLatency();
    const judges = emptyJudges();
    const perTask = new Map<string, { groups: number; rewards: number[]; passed: number; counted: number }>();
    let passed = 0;
    let counted = 0;
    let rollouts = 0;
    let zeroSignal = 0;
    let dropped = 0;
    let partial = 0;
    let prompt = 0;
    let completion = 0;
    let cost = 0;
    let maxLag: number | null = null;
    for (const group of this.groups) {
      for (const reward of group.rewards) rewards.push(reward);
      for (const advantage of group.advantages) advantages.push(advantage);
      for (const turn of group.turns) turns.push(turn);
      for (const [outcome, count] of Object.entries(group.outcomes) as Array<[RolloutOutcome, number]>) {
        outcomes[outcome] = (outcomes[outcome] ?? 0) + count;
        rollouts += count;
      }
      for (const [name, tool] of group.tools) {
        const sum = tools.get(name) ?? { calls: 0, errors: 0, latencyMs: 0 };
        sum.calls += tool.calls;
        sum.errors += tool.errors;
        sum.latencyMs += tool.latencyMs;
        tools.set(name, sum);
      }
      for (const key of Object.keys(latency) as Array<keyof LatencySplit>) latency[key] += group.latency[key];
      judges.verdicts += group.judges.verdicts;
      judges.judgeFailureRollouts += group.judges.judgeFailureRollouts;
      judges.panels += group.judges.panels;
      judges.disagreementStdSum += group.judges.disagreementStdSum;
      judges.flagged += group.judges.flagged;
      for (const [kind, count] of Object.entries(group.judges.failures))
        judges.failures[kind] = (judges.failures[kind] ?? 0) + count;
      const task = perTask.get(group.taskId) ?? { groups: 0, rewards: [], passed: 0, counted: 0 };
      task.groups++;
      task.rewards.push(...group.rewards);
      task.passed += group.passed;
      task.counted += group.counted;
      perTask.set(group.taskId, task);
      passed += group.passed;
      counted += group.counted;
      if (group.zeroSignal) zeroSignal++;
      if (group.dropped) dropped++;
      if (group.partial) partial++;
      prompt += group.promptTokens;
      completion += group.completionTokens;
      cost += group.costUsd;
      if (group.lagSteps !== undefined) maxLag = Math.max(maxLag ?? 0, group.lagSteps);
    }
    const toolCalls = [...tools.values()].reduce((sum, tool) => sum + tool.calls, 0);
    const toolErrors = [...tools.values()].reduce((sum, tool) => sum + tool.errors, 0);
    const count = this.groups.length;
    return {
      fields: {
        groups: count,
        groupsPerSecond: seconds > 0 ? count / seconds : null,
        rollouts,
        reward: summaryStats(rewards),
        perTask: Object.fromEntries(
          [...perTask]
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([id, task]) => [
              id,
              {
                groups: task.groups,
                reward: summaryStats(task.rewards),
                passRate: task.counted ? task.passed / task.counted : null,
              },
            ]),
        ),
        passRate: counted ? passed / counted : null,
        outcomes,
        zeroSignalShare: count ? zeroSignal / count : null,
        droppedGroups: dropped,
        partialGroups: partial,
        advantage: summaryStats(advantages),
        turns: summaryStats(turns),
        toolCalls,
        toolErrorRate: toolCalls ? toolErrors / toolCalls : null,
        tools: toolsRecord(tools),
        tokens: {
          prompt,
          completion,
          completionPerSecond: seconds > 0 ? completion / seconds : null,
          costUsd: cost,
        },
        latencyMs: latency,
        judges: judgesRecord(judges),
      },
      maxLag,
    };
  }
}

export interface TrainerStatus {
  current_step: number;
  queue_size: number;
}

export interface RunMetrics {
  /**
   * Records a finished group. `trainerAtStart` is the trajectory API's status polled before the
   * group started (serve, train); `worker` names the `train` worker.
   */
  group(
    record: ScoredGroupRecord,
    options?: { worker?: string; trainerAtStart?: TrainerStatus; loop?: GroupLoop },
  ): void;
  /** Records a trajectory-API status poll; a new trainer step writes a step row. */
  trainerStatus(status: TrainerStatus): void;
  /** Writes an evaluation, loop event or trainer step row (the common fields are added). */
  event(row: LoopRowInput): void;
  /** Writes the last window (and step, when groups finished since the last one); stops the timer. */
  close(): void;
}

interface RunMetricsOptions {
  /** Where each row goes (the metrics JSONL, W&B). */
  writer: { write(row: unknown): void };
  command: MetricsCommand;
  success: SuccessRule;
  /** Seconds per window row (default 10). */
  windowSeconds?: number;
  /** Clock in ms (tests). Windows are written by a timer on the real clock, and when a group arrives past the window's end. */
  now?: () => number;
}

/** A stream that records nothing: `run.metrics: false`. */
export const NO_METRICS: RunMetrics = { group() {}, trainerStatus() {}, event() {}, close() {} };

type Common = 'version' | 'at' | 'elapsedSeconds' | 'command';
/** An eval or loop row without the fields every row has. */
export type LoopRowInput =
  | Omit<EvalMetrics, Common>
  | Omit<LoopEventMetrics, Common>
  | Omit<TrainerStepMetrics, Common>;

export function createRunMetrics(options: RunMetricsOptions): RunMetrics {
  const now = options.now ?? Date.now;
  const windowMs = Math.max(0.001, options.windowSeconds ?? 10) * 1000;
  const started = now();
  const window = new Aggregate();
  const sinceStep = new Aggregate();
  let windowStart = started;
  let stepStart = started;
  let step: number | undefined;
  let queueSize = 0;
  let level: number | string | undefined;
  let closed = false;
  const write = (row: MetricsRow) => options.writer.write(row);
  const common = (at: number) => ({
    version: 1 as const,
    at: new Date(at).toISOString(),
    elapsedSeconds: (at - started) / 1000,
    command: options.command,
  });
  const trainer = (maxLag: number | null) =>
    step === undefined ? {} : { trainer: { step, queueSize, maxLagSteps: maxLag } };

  const flushWindow = (end: number, final: boolean) => {
    if (window.groups.length === 0 && !final) {
      windowStart = end;
      return;
    }
    const seconds = (end - windowStart) / 1000;
    const { fields, maxLag } = window.fields(seconds);
    const row: WindowMetrics = {
      kind: 'shears.metrics.window',
      ...common(end),
      start: new Date(windowStart).toISOString(),
      end: new Date(end).toISOString(),
      seconds,
      final,
      ...fields,
      ...trainer(maxLag),
      ...window.loopFields(level),
    };
    write(row);
    window.reset();
    windowStart = end;
  };
  const rollWindows = (at: number) => {
    // Whole windows only: a window row covers [start, start + window) exactly, except the final one.
    while (at - windowStart >= windowMs) flushWindow(windowStart + windowMs, false);
  };
  const flushStep = (at: number, previous: number | null, current: number) => {
    const seconds = (at - stepStart) / 1000;
    const { fields, maxLag } = sinceStep.fields(seconds);
    const row: StepMetrics = {
      kind: 'shears.metrics.step',
      ...common(at),
      step: current,
      previousStep: previous,
      seconds,
      ...fields,
      ...trainer(maxLag),
      ...sinceStep.loopFields(level),
    };
    write(row);
    sinceStep.reset();
    stepStart = at;
  };
  const timer = setInterval(() => {
    if (!closed) rollWindows(now());
  }, windowMs);
  timer.unref?.();

  return {
    group(record, groupOptions = {}) {
      if (closed) return;
      const at = now();
      rollWindows(at);
      const tally = tallyGroup(record, options.success);
      const start = groupOptions.trainerAtStart;
      let trainerRow: GroupMetrics['trainer'];
      if (start) {
        const stepAtEnd = Math.max(step ?? start.current_step, start.current_step);
        tally.lagSteps = stepAtEnd - start.current_step;
        trainerRow = {
          stepAtStart: start.current_step,
          stepAtEnd,
          lagSteps: tally.lagSteps,
          queueSize: start.queue_size,
        };
      }
      const row: GroupMetrics = {
        kind: 'shears.metrics.group',
        ...common(at),
        ...(groupOptions.worker ? { worker: groupOptions.worker } : {}),
        groupId: record.groupId,
        envId: record.envId,
        taskId: record.taskId,
        rollouts: record.rollouts.length,
        reward: summaryStats(tally.rewards),
        passRate: tally.counted ? tally.passed / tally.counted : null,
        outcomes: tally.outcomes,
        zeroSignal: tally.zeroSignal,
        dropped: record.dropped?.kind ?? (record.dropped ? 'dropped' : null),
        partial: tally.partial,
        advantage: summaryStats(tally.advantages),
        turns: summaryStats(tally.turns),
        toolCalls: [...tally.tools.values()].reduce((sum, tool) => sum + tool.calls, 0),
        toolErrors: [...tally.tools.values()].reduce((sum, tool) => sum + tool.errors, 0),
        tools: toolsRecord(tally.tools),
        tokens: {
          prompt: tally.promptTokens,
          completion: tally.completionTokens,
          completionPerSecond:
            record.wallTimeSeconds > 0 ? tally.completionTokens / record.wallTimeSeconds : null,
          costUsd: tally.costUsd,
        },
        latencyMs: tally.latency,
        judges: judgesRecord(tally.judges),
        wallTimeSeconds: record.wallTimeSeconds,
        ...(trainerRow ? { trainer: trainerRow } : {}),
        ...(groupOptions.loop ? { loop: groupOptions.loop } : {}),
      };
      write(row);
      if (groupOptions.loop?.curriculumLevel !== undefined) level = groupOptions.loop.curriculumLevel;
      window.add(tally, groupOptions.loop);
      sinceStep.add(tally, groupOptions.loop);
    },
    event(input) {
      if (closed) return;
      const at = now();
      if (input.kind === 'shears.metrics.loop' && input.to !== undefined) level = input.to;
      write({ ...common(at), ...input } as MetricsRow);
    },
    trainerStatus(status) {
      if (closed) return;
      const at = now();
      queueSize = status.queue_size;
      if (step === undefined) {
        // The first status seen starts the step count; groups before it belong to the first step row.
        step = status.current_step;
        return;
      }
      if (status.current_step > step) {
        const previous = step;
        step = status.current_step;
        rollWindows(at);
        flushStep(at, previous, status.current_step);
      }
    },
    close() {
      if (closed) return;
      const at = now();
      rollWindows(at);
      flushWindow(at, true);
      closed = true;
      clearInterval(timer);
    },
  };
}

/** Both streams at once: the JSONL stream and the Prometheus endpoint see every group and status. */
export function teeMetrics(...all: readonly RunMetrics[]): RunMetrics {
  return {
    group: (record, options) => {
      for (const metrics of all) metrics.group(record, options);
    },
    trainerStatus: (status) => {
      for (const metrics of all) metrics.trainerStatus(status);
    },
    event: (row) => {
      for (const metrics of all) metrics.event(row);
    },
    close: () => {
      for (const metrics of all) metrics.close();
    },
  };
}
