// Which commands the improvement loop (`loop`) and per-step credit (`run.advantage` as an object)
// apply to, and the checks on their settings that need no env: run before anything starts, so a
// setting that cannot apply is refused rather than silently unused.
import { resolve } from 'node:path';
import { ConfigError } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';

type AdvantageSetting = ShearsConfig['run']['advantage'];
export type PerStepAdvantage = Exclude<AdvantageSetting, string>;

/** Per-step credit settings, when run.advantage asks for them. */
function perStepAdvantage(config: ShearsConfig): PerStepAdvantage | undefined {
  return typeof config.run.advantage === 'string' ? undefined : config.run.advantage;
}

/** `process` and `evaluate` send nothing to a trainer: the loop and per-step credit are refused there. */
function refuseLoop(config: ShearsConfig, command: 'process' | 'evaluate'): void {
  const loop = config.loop ?? {};
  const set = (Object.keys(loop) as Array<keyof typeof loop>).filter((key) => loop[key] !== undefined);
  if (set.length > 0)
    throw new ConfigError({
      message: `loop.${set[0]}: the improvement loop (replay, curriculum, evaluation during training, safety) runs in \`shears serve\` and \`shears train\`, which feed a trainer; \`shears ${command}\` would ignore it. Remove loop from this command's config`,
      issues: set.map((key) => ({
        path: `loop.${key}`,
        message: `not read by ${command}`,
        value: loop[key],
      })),
    });
  if (perStepAdvantage(config))
    throw new ConfigError({
      message: `run.advantage: per-step credit (gamma, process rewards) is sent to a trainer as per-token advantages by \`shears serve\` and \`shears train\`; \`shears ${command}\` writes one advantage per rollout and would ignore it. Use run.advantage: ${perStepAdvantage(config)!.estimator} here`,
      issues: [
        {
          path: 'run.advantage',
          message: `per-step credit is not read by ${command}`,
          value: config.run.advantage,
        },
      ],
    });
}

/** The loop's settings that contradict each other or the trainer, for `serve` and `train`. */
function checkLoopConfig(config: ShearsConfig): void {
  const loop = config.loop;
  if (loop?.safety && !loop.evaluation)
    throw new ConfigError({
      message:
        'loop.safety: the safety monitor reads the evaluations during training, so it needs loop.evaluation (e.g. loop: { evaluation: { every_steps: 10, env: { name: tasks, settings: { file: held-out.jsonl } } } })',
      issues: [{ path: 'loop.evaluation', message: 'required by loop.safety', value: undefined }],
    });
  const curriculum = loop?.curriculum;
  if (curriculum?.fall_back_below !== undefined && !(curriculum.fall_back_below < curriculum.advance_above))
    throw new ConfigError({
      message: `loop.curriculum.fall_back_below (${curriculum.fall_back_below}) must be below loop.curriculum.advance_above (${curriculum.advance_above}), or one rolling mean would move the level both ways`,
      issues: [
        {
          path: 'loop.curriculum.fall_back_below',
          message: 'not below advance_above',
          value: curriculum.fall_back_below,
        },
      ],
    });
  if (curriculum?.levels && curriculum.start_level >= curriculum.levels.length)
    throw new ConfigError({
      message: `loop.curriculum.start_level ${curriculum.start_level}: there are ${curriculum.levels.length} levels (${curriculum.levels.join(', ')}), numbered from 0`,
      issues: [
        { path: 'loop.curriculum.start_level', message: 'no such level', value: curriculum.start_level },
      ],
    });
  if (curriculum?.levels && new Set(curriculum.levels.map(String)).size !== curriculum.levels.length)
    throw new ConfigError({
      message: `loop.curriculum.levels: a difficulty is listed twice (${curriculum.levels.join(', ')})`,
      issues: [{ path: 'loop.curriculum.levels', message: 'duplicate level', value: curriculum.levels }],
    });
  if (perStepAdvantage(config) && config.train.reference?.advantages === 'scores')
    throw new ConfigError({
      message:
        "run.advantage: per-step credit is sent as per-token advantages, but train.reference.advantages is 'scores' (the trainer normalises scores per group and ignores them); set train.reference.advantages: served, or use a plain run.advantage",
      issues: [{ path: 'train.reference.advantages', message: 'ignores per-step credit', value: 'scores' }],
    });
}

/** The `loop` section, checked, with the replay file made absolute; undefined when nothing is set. */
export interface LoopPlan extends NonNullable<ShearsConfig['loop']> {
  /** The SQLite file of kept groups (loop.replay.path, else `<out>.replay.sqlite`). */
  replayPath: string | undefined;
}

export function resolveLoop(
  config: ShearsConfig,
  options: { command: 'process' | 'evaluate' | 'serve' | 'train'; cwd: string },
): LoopPlan | undefined {
  if (options.command === 'process' || options.command === 'evaluate') {
    refuseLoop(config, options.command);
    return undefined;
  }
  checkLoopConfig(config);
  const loop = config.loop;
  if (!loop || Object.values(loop).every((value) => value === undefined)) return undefined;
  return {
    ...loop,
    replayPath: loop.replay
      ? loop.replay.path
        ? resolve(options.cwd, loop.replay.path)
        : `${resolve(options.cwd, config.run.out).replace(/\.jsonl?$/i, '')}.replay.sqlite`
      : undefined,
  };
}
