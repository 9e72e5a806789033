// The improvement loop of `shears serve` and `shears train` (config `loop`), shared by every worker
// of the process:
// - curriculum: tasks are drawn at the current difficulty level (the env's task metadata
//   `difficulty`); the level moves on the rolling mean of the last N counted scores;
// - replay: groups sent to the trainer whose best score passes a threshold are kept in a SQLite
//   file, and replayed beside fresh groups so that replays are `share` of all groups sent;
// - evaluation: every N trainer steps (from the trajectory API's status), held-out tasks are run
//   with k samples against the current policy (the same server), as `shears evaluate` does, and
//   pass@k and the mean score with bootstrap intervals go to the metrics stream;
// - safety: the collapse monitor reads those evaluations; below tolerance × baseline it shifts the
//   data mix toward the capability data (another env), and back once the score recovers.
import { ConfigError, type EnvItem, type EnvV1, type ScoredData, type ScoredGroupRecord } from '@shears/core';
import {
  type CollapseMonitor,
  type Curriculum,
  createCollapseMonitor,
  createCurriculum,
  createDataMix,
  type DataMix,
  openReplayStore,
  type ReplayStore,
} from '@shears/grpo';
import { kValues, summarizeEvaluation } from '../evaluation-summary.js';
import type { GroupLoop, RunMetrics, TrainerStatus } from '../metrics/run-metrics.js';
import type { RunPlan } from '../plan/run-plan.js';
import type { Runtime } from '../runtime/runtime.js';
import { bootstrapMean, mean } from '../stats.js';

export interface DrawnItem {
  item: EnvItem;
  /** Which runtime runs it: the worker's own (train) or the loop's capability runtime. */
  source: 'train' | 'capability';
  level?: number | string;
}

/** What the replay store keeps of a sent group: the wire group (without env id) and its record. */
interface ReplayPayload {
  data: ScoredData;
  record: ScoredGroupRecord;
}

export interface Replay {
  data: ScoredData;
  /** A copy of the replayed group's record, with a fresh group id and `loop.replayOf`. */
  record: ScoredGroupRecord;
  loop: GroupLoop;
}

export interface LoopController {
  /** The next item: capability data while the safety monitor shifted the mix, else the training env at the curriculum level. */
  next(trainEnv: EnvV1): Promise<DrawnItem | null>;
  /** Runs a capability item's group (its env, tools and reward). */
  runCapability(item: EnvItem, groupSize: number): Promise<ScoredGroupRecord>;
  /** The loop fields of a finished fresh group's record and metrics row. */
  loopOf(drawn: DrawnItem): GroupLoop | undefined;
  /** Records a finished fresh group (curriculum scores). */
  finished(record: ScoredGroupRecord, drawn: DrawnItem): void;
  /** A fresh group was sent: keeps it for replay when it scores high, returns the replays now due. */
  sent(record: ScoredGroupRecord, data: ScoredData): Replay[];
  /** A trajectory-API status poll: starts an evaluation when a multiple of every_steps was passed. */
  status(status: TrainerStatus): void;
  /** Waits for a running evaluation (stopped with the run), closes the replay file. */
  close(): Promise<void>;
}

function bestCountedScore(record: ScoredGroupRecord): number | null {
  const scores = record.rollouts
    .filter((rollout) => rollout.outcome === 'scored' || rollout.outcome === 'model_failure')
    .map((rollout) => rollout.reward)
    .filter((reward): reward is number => typeof reward === 'number' && Number.isFinite(reward));
  return scores.length ? Math.max(...scores) : null;
}

function countedScores(record: ScoredGroupRecord): number[] {
  return record.rollouts
    .filter((rollout) => rollout.outcome === 'scored' || rollout.outcome === 'model_failure')
    .map((rollout) => rollout.reward)
    .filter((reward): reward is number => typeof reward === 'number' && Number.isFinite(reward));
}

export async function createLoopController(
  plan: RunPlan,
  options: {
    /** The side runs' runtimes (run-parts.ts starts them with the run's; the run closes them). */
    sides: { evaluation: Runtime | undefined; capability: Runtime | undefined };
    metrics: RunMetrics;
    note: (text: string) => void;
  },
): Promise<LoopController | undefined> {
  const { loop } = plan;
  if (!loop) return undefined;
  const { metrics, note } = options;
  let step: number | null = null;
  const closers: Array<() => Promise<void> | void> = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer();
  };
  try {
    // Replay: the store, and how many fresh and replayed groups were sent.
    let store: ReplayStore<ReplayPayload> | undefined;
    if (loop.replay) {
      const path = loop.replayPath!;
      store = await openReplayStore<ReplayPayload>({
        path,
        capacity: loop.replay.capacity,
        threshold: loop.replay.threshold,
      });
      closers.push(() => store?.close());
      note(
        `replay: ${store.size} group${store.size === 1 ? '' : 's'} kept in ${path}; replays are ${Math.round(loop.replay.share * 100)} % of the groups sent`,
      );
    }
    let freshSent = 0;
    let replaysSent = 0;
    let replayCount = 0;

    // Safety: the capability runtime and the data mix the collapse monitor shifts.
    let capability: Runtime | undefined;
    let mix: DataMix | undefined;
    let monitor: CollapseMonitor | undefined;
    const drawn = { train: 0, capability: 0 };
    if (loop.safety) {
      capability = options.sides.capability!;
      mix = createDataMix({ train: 1, capability: 0 });
    }

    // Evaluation: its runtime and the items it runs every time.
    let evaluation: { runtime: Runtime; env: string; items: EnvItem[] } | undefined;
    if (loop.evaluation) {
      const target = loop.evaluationRun!.env;
      const runtime = options.sides.evaluation!;
      let items: EnvItem[] = [];
      if (runtime.env.evalItems) items = await runtime.env.evalItems();
      else if (loop.evaluation.max_items)
        for (let index = 0; index < loop.evaluation.max_items; index++) {
          const item = await runtime.env.nextItem();
          if (!item) break;
          items.push(item);
        }
      else
        throw new ConfigError({
          message: `loop.evaluation.max_items: env "${target.name}" has no evaluation set, so say how many held-out items to draw (e.g. loop: { evaluation: { max_items: 20 } })`,
          issues: [{ path: 'loop.evaluation.max_items', message: 'required for this env', value: undefined }],
        });
      if (loop.evaluation.max_items) items = items.slice(0, loop.evaluation.max_items);
      if (items.length === 0)
        throw new ConfigError({
          message: `loop.evaluation: env "${target.name}" gave no held-out task`,
          issues: [{ path: 'loop.evaluation.env', message: 'no tasks', value: target.name }],
        });
      evaluation = { runtime, env: target.name, items };
    }

    // Curriculum: levels resolved on the first draw (they may come from the training env's tasks).
    let curriculum: Curriculum<number | string> | undefined;
    let curriculumReady: Promise<void> | undefined;
    const levelEvent =
      (event: 'curriculum_advanced' | 'curriculum_fell_back') =>
      (moved: { from: number; to: number; mean: number }) => {
        const levels = curriculumLevels;
        const from = levels[moved.from]!;
        const to = levels[moved.to]!;
        note(
          `curriculum: ${event === 'curriculum_advanced' ? 'advanced' : 'fell back'} from level ${from} to ${to} (rolling mean ${moved.mean.toFixed(3)} of the last ${loop.curriculum!.window} scores)`,
        );
        metrics.event({ kind: 'shears.metrics.loop', event, step, from, to, mean: moved.mean });
      };
    let curriculumLevels: (number | string)[] = [];
    const setUpCurriculum = async (trainEnv: EnvV1) => {
      const settings = loop.curriculum!;
      let levels = settings.levels;
      if (!levels) {
        const items = trainEnv.evalItems ? await trainEnv.evalItems() : [];
        const found = [
          ...new Set(
            items
              .map((item) => item.difficulty)
              .filter(
                (value): value is number | string => typeof value === 'number' || typeof value === 'string',
              ),
          ),
        ];
        if (found.length === 0)
          throw new ConfigError({
            message: `loop.curriculum: env "${plan.env.name}" lists no task with a difficulty, so there are no levels; give the tasks a difficulty (the tasks env: "difficulty" in the task file) or list loop.curriculum.levels`,
            issues: [
              { path: 'loop.curriculum.levels', message: 'no difficulty in the env', value: undefined },
            ],
          });
        levels = found.sort((a, b) =>
          typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b)),
        );
        if (settings.start_level >= levels.length)
          throw new ConfigError({
            message: `loop.curriculum.start_level ${settings.start_level}: the env's tasks have ${levels.length} levels (${levels.join(', ')}), numbered from 0`,
            issues: [
              { path: 'loop.curriculum.start_level', message: 'no such level', value: settings.start_level },
            ],
          });
      }
      curriculumLevels = [...levels];
      curriculum = createCurriculum({
        levels: curriculumLevels,
        window: settings.window,
        threshold: settings.advance_above,
        ...(settings.fall_back_below !== undefined ? { fallBackBelow: settings.fall_back_below } : {}),
        startLevel: settings.start_level,
        onAdvance: levelEvent('curriculum_advanced'),
        onFallBack: levelEvent('curriculum_fell_back'),
      });
      note(`curriculum: levels ${curriculumLevels.join(' → ')}; starting at ${curriculum.current}`);
    };

    /** Draws from the training env until an item of the current level comes (bounded). */
    const drawTrain = async (trainEnv: EnvV1): Promise<DrawnItem | null> => {
      if (!loop.curriculum) {
        const item = await trainEnv.nextItem();
        return item ? { item, source: 'train' } : null;
      }
      curriculumReady ??= setUpCurriculum(trainEnv);
      await curriculumReady;
      const limit = 10_000;
      for (let draws = 0; draws < limit; draws++) {
        const item = await trainEnv.nextItem();
        if (!item) return null;
        const level = curriculum!.current;
        if (item.difficulty === undefined)
          throw new ConfigError({
            message: `loop.curriculum: task "${item.id}" of env "${plan.env.name}" has no difficulty, so it has no level; give every task a difficulty or remove loop.curriculum`,
            issues: [{ path: 'loop.curriculum', message: 'a task without difficulty', value: item.id }],
          });
        if (String(item.difficulty) === String(level)) return { item, source: 'train', level };
      }
      throw new ConfigError({
        message: `loop.curriculum: env "${plan.env.name}" gave no task of level ${curriculum!.current} in ${limit} draws; check loop.curriculum.levels against the tasks' difficulty values`,
        issues: [
          { path: 'loop.curriculum.levels', message: 'level without tasks', value: curriculum!.current },
        ],
      });
    };

    // Evaluation runs in the background, one at a time; the safety monitor reads its result.
    let running: Promise<void> | undefined;
    let lastEvaluated = 0;
    const runEvaluation = async (atStep: number) => {
      const settings = loop.evaluation!;
      const { runtime, env, items } = evaluation!;
      const started = Date.now();
      note(`evaluation at trainer step ${atStep}: ${items.length} held-out tasks × ${settings.k} samples`);
      const records: ScoredGroupRecord[] = [];
      let cursor = 0;
      const window = Math.max(1, Math.ceil(plan.control.concurrency / settings.k));
      const worker = async () => {
        while (cursor < items.length && !runtime.control.stopping) {
          const item = items[cursor++]!;
          records.push(await runtime.runGroup(item, settings.k));
        }
      };
      const settled = await Promise.allSettled(
        Array.from({ length: Math.min(window, items.length) }, worker),
      );
      const failed = settled.find((entry) => entry.status === 'rejected');
      if (failed && !runtime.control.stopping) throw failed.reason;
      const { bootstrapSamples, confidence } = plan.evaluation;
      const summary = summarizeEvaluation(records, {
        k: settings.k,
        samples: bootstrapSamples,
        confidence,
        env,
        model: runtime.server.model,
        success: plan.control.success,
      });
      const missing = summary.missing.length + (items.length - records.length);
      const finite = (value: number) => (Number.isFinite(value) ? value : null);
      const passAt1 = summary.tasks
        .map((task) => task.passAtK['pass@1']!)
        .filter((value) => !Number.isNaN(value));
      const passInterval = passAt1.length
        ? bootstrapMean(passAt1, { samples: bootstrapSamples, confidence })
        : undefined;
      const passAtK = Object.fromEntries(
        kValues(settings.k)
          .map((k) => [`pass@${k}`, summary.passAtK[`pass@${k}`]!] as const)
          .filter(([, value]) => Number.isFinite(value)),
      );
      metrics.event({
        kind: 'shears.metrics.eval',
        step: atStep,
        env,
        k: settings.k,
        tasks: items.length,
        passAtK,
        meanScore: {
          mean: finite(summary.meanScore.mean),
          low: finite(summary.meanScore.low),
          high: finite(summary.meanScore.high),
          confidence,
        },
        passAt1Interval: passInterval
          ? { mean: passInterval.mean, low: passInterval.low, high: passInterval.high }
          : null,
        complete: missing === 0,
        missing,
        seconds: (Date.now() - started) / 1000,
      });
      const score = loop.safety?.metric === 'pass@1' ? mean(passAt1) : summary.meanScore.mean;
      note(
        `evaluation at trainer step ${atStep}: mean score ${summary.meanScore.mean.toFixed(3)} (${Math.round(confidence * 100)} % CI ${summary.meanScore.low.toFixed(3)}–${summary.meanScore.high.toFixed(3)}), pass@1 ${mean(passAt1).toFixed(3)}${missing ? `; INCOMPLETE: ${missing} task(s) without a complete result` : ''}`,
      );
      // An incomplete evaluation says nothing reliable about a regression: the monitor skips it.
      if (loop.safety && missing === 0 && Number.isFinite(score)) checkSafety(score);
    };
    // The latest score the monitor checked, and whether the mix was shifted before that check.
    let checkedScore = 0;
    let wasRegressed = false;
    let baseline = 0;
    const checkSafety = (score: number) => {
      const safety = loop.safety!;
      checkedScore = score;
      if (!monitor) {
        baseline = safety.baseline ?? score;
        note(
          `safety: baseline ${safety.metric} ${baseline.toFixed(3)}${safety.baseline === undefined ? ' (the first evaluation)' : ''}; tolerance ${safety.tolerance}`,
        );
        monitor = createCollapseMonitor({
          baselines: { [safety.metric]: baseline },
          tolerance: safety.tolerance,
          mix,
          capabilitySource: 'capability',
          capabilityShare: safety.capability_share,
          onEvent: (event) => {
            const regressed = event.type === 'collapse_detected';
            // The first detection shifts the mix; later ones while regressed change nothing and are not repeated.
            if (regressed && wasRegressed) return;
            drawn.train = 0;
            drawn.capability = 0;
            note(
              regressed
                ? `safety: ${safety.metric} ${checkedScore.toFixed(3)} is below ${safety.tolerance} × baseline ${baseline.toFixed(3)}; the data mix shifts toward the capability data (${JSON.stringify(event.weights)})`
                : `safety: ${safety.metric} ${checkedScore.toFixed(3)} recovered (baseline ${baseline.toFixed(3)}); the data mix is restored (${JSON.stringify(event.weights)})`,
            );
            metrics.event({
              kind: 'shears.metrics.loop',
              event: regressed ? 'safety_regressed' : 'safety_recovered',
              step,
              score: checkedScore,
              baseline,
              tolerance: safety.tolerance,
              weights: event.weights,
            });
          },
        });
      }
      wasRegressed = monitor.regressed;
      monitor.check({ [safety.metric]: score });
    };

    const controller: LoopController = {
      async next(trainEnv) {
        if (mix && capability) {
          // Smooth weighted round robin over the two sources: each draw goes to the source
          // furthest behind its share (deterministic, so a short run still shows the mix).
          const weights = mix.weights();
          const total = (weights.train ?? 0) + (weights.capability ?? 0);
          const count = drawn.train + drawn.capability + 1;
          const deficit = (source: 'train' | 'capability') =>
            ((weights[source] ?? 0) / (total || 1)) * count - drawn[source];
          if ((weights.capability ?? 0) > 0 && deficit('capability') > deficit('train')) {
            drawn.capability++;
            const item = await capability.env.nextItem();
            if (item) return { item, source: 'capability' };
          } else drawn.train++;
        }
        return drawTrain(trainEnv);
      },
      runCapability(item, groupSize) {
        return capability!.runGroup(item, groupSize);
      },
      loopOf(item) {
        return { source: item.source, ...(item.level !== undefined ? { curriculumLevel: item.level } : {}) };
      },
      finished(record, item) {
        if (!curriculum || item.source !== 'train' || record.partial) return;
        for (const score of countedScores(record)) curriculum.record(score);
      },
      sent(record, data) {
        if (!store || !loop.replay) return [];
        freshSent++;
        const best = bestCountedScore(record);
        if (best !== null)
          store.add({
            groupId: record.groupId,
            taskId: record.taskId,
            score: best,
            payload: { data: { ...data, env_id: null }, record },
          });
        const share = loop.replay.share;
        const due = Math.floor((freshSent * share) / (1 - share) + 1e-9) - replaysSent;
        if (due <= 0 || store.size === 0) return [];
        const entries = store.sample(due);
        replaysSent += entries.length;
        return entries.map((entry) => {
          replayCount++;
          const replayOf = entry.payload.record.groupId;
          const loopFields: GroupLoop = {
            replayOf,
            ...(entry.payload.record.loop?.source ? { source: entry.payload.record.loop.source } : {}),
          };
          return {
            data: entry.payload.data,
            record: {
              ...entry.payload.record,
              groupId: `${replayOf}-replay-${replayCount}`,
              createdAt: new Date().toISOString(),
              loop: { ...entry.payload.record.loop, replayOf },
            },
            loop: loopFields,
          };
        });
      },
      status(status) {
        step = Math.max(step ?? status.current_step, status.current_step);
        const every = loop.evaluation?.every_steps;
        if (!every || running) return;
        if (Math.floor(status.current_step / every) <= Math.floor(lastEvaluated / every)) return;
        lastEvaluated = status.current_step;
        const atStep = status.current_step;
        running = runEvaluation(atStep)
          .catch((error: unknown) => {
            note(
              `evaluation at trainer step ${atStep} failed: ${(error as Error)?.message ?? String(error)}`,
            );
          })
          .finally(() => {
            running = undefined;
          });
      },
      async close() {
        await running;
        await close();
      },
    };
    return controller;
  } catch (error) {
    await close();
    throw error;
  }
}
