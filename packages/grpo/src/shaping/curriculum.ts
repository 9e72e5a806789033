// Task curriculum (the seed's TaskCurriculum): difficulty levels that advance when the mean of
// the last `window` scores (default 100) passes `threshold` (default 0.75) and, when
// `fallBackBelow` is set, fall back a level when it drops strictly below that.
import { InvalidArgumentError } from '@shears/core';

export interface CurriculumSettings<TLevel = string> {
  /** Levels from easiest to hardest (names, task lists, anything). */
  levels: readonly TLevel[];
  /** Scores averaged to decide. Default 100. */
  window?: number;
  /** Advance when the window's mean is strictly above this. Default 0.75. */
  threshold?: number;
  /** Fall back a level when the window's mean is strictly below this. Default: never. */
  fallBackBelow?: number;
  startLevel?: number;
  onAdvance?: (event: { from: number; to: number; mean: number }) => void;
  onFallBack?: (event: { from: number; to: number; mean: number }) => void;
}

export interface Curriculum<TLevel = string> {
  readonly level: number;
  readonly current: TLevel;
  readonly finished: boolean;
  /** Records a score; returns true when this score made the curriculum move (advance or fall back). */
  record(score: number): boolean;
  /** Mean of the scores in the window, or null when the window is not full yet. */
  windowMean(): number | null;
}

export function createCurriculum<TLevel = string>(settings: CurriculumSettings<TLevel>): Curriculum<TLevel> {
  if (settings.levels.length === 0)
    throw new InvalidArgumentError({
      argument: 'levels',
      value: [],
      message: 'curriculum needs at least one level',
    });
  const window = settings.window ?? 100;
  const threshold = settings.threshold ?? 0.75;
  if (!Number.isInteger(window) || window < 1)
    throw new InvalidArgumentError({
      argument: 'window',
      value: window,
      message: `curriculum window must be a positive integer, got ${window}`,
    });
  const fallBackBelow = settings.fallBackBelow;
  if (fallBackBelow !== undefined && !(fallBackBelow < threshold))
    throw new InvalidArgumentError({
      argument: 'fallBackBelow',
      value: fallBackBelow,
      message: `curriculum fallBackBelow (${fallBackBelow}) must be below the advance threshold (${threshold}), or the level would move both ways on one mean`,
    });
  let level = settings.startLevel ?? 0;
  if (!Number.isInteger(level) || level < 0 || level >= settings.levels.length) {
    throw new InvalidArgumentError({
      argument: 'startLevel',
      value: level,
      message: `curriculum startLevel must be within 0..${settings.levels.length - 1}, got ${level}`,
    });
  }
  let recent: number[] = [];
  const mean = () => (recent.length < window ? null : recent.reduce((sum, score) => sum + score, 0) / window);
  return {
    get level() {
      return level;
    },
    get current() {
      return settings.levels[level] as TLevel;
    },
    get finished() {
      return level === settings.levels.length - 1;
    },
    windowMean: mean,
    record(score) {
      recent.push(score);
      if (recent.length > window) recent = recent.slice(-window);
      const average = mean();
      if (average === null) return false;
      if (fallBackBelow !== undefined && average < fallBackBelow && level > 0) {
        const from = level--;
        recent = [];
        settings.onFallBack?.({ from, to: level, mean: average });
        return true;
      }
      if (!(average > threshold) || level >= settings.levels.length - 1) return false;
      const from = level++;
      // A new level starts with a fresh window: old scores say nothing about the harder tasks.
      recent = [];
      settings.onAdvance?.({ from, to: level, mean: average });
      return true;
    },
  };
}
