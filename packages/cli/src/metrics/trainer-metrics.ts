// The reference trainer's own metrics (its metrics.jsonl: one line per optimiser step with the
// loss, the KL, the entropy and the batch's reward), carried into the run's metrics stream as they
// are written, so the dashboard and W&B plot them against the trainer step beside the workers'
// rows. The file is followed by polling its size (a trainer may run on a network folder where
// file watching misses writes); a line is read only once it is complete.
import { open } from 'node:fs/promises';
import { safeParseJson } from '@shears/core';
import type { LoopRowInput } from './run-metrics.js';

type TrainerRow = Extract<LoopRowInput, { kind: 'shears.metrics.trainer' }>;

const number = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;

/** One line of the trainer's metrics.jsonl as a `shears.metrics.trainer` row; undefined when it is no step line. */
function trainerMetricsRow(line: unknown): TrainerRow | undefined {
  if (typeof line !== 'object' || line === null) return undefined;
  const record = line as Record<string, unknown>;
  if (typeof record.step !== 'number' || !Number.isInteger(record.step)) return undefined;
  return {
    kind: 'shears.metrics.trainer',
    step: record.step,
    loss: number(record.loss),
    kl: number(record.kl),
    entropy: number(record.entropy),
    rewardMean: number(record.reward_mean),
    clipFraction: number(record.clip_fraction),
    gradNorm: number(record.grad_norm),
    skipped: record.skipped === true,
  };
}

interface TrainerMetricsFollower {
  /** Reads what is left (the trainer has exited) and stops. */
  stop(): Promise<void>;
}

/**
 * Follows `path` from its start (the trainer writes a new file: `train` refuses an output folder
 * with an old run in it), calling `onRow` for each step line; a line that is not JSON is told to
 * `onProblem` once, with its number, and skipped.
 */
export function followTrainerMetrics(options: {
  path: string;
  onRow: (row: TrainerRow) => void;
  onProblem: (message: string) => void;
  intervalMs?: number;
}): TrainerMetricsFollower {
  let offset = 0;
  let partial = '';
  let lineNumber = 0;
  let reading: Promise<void> = Promise.resolve();
  let warned = false;
  const decoder = new TextDecoder();

  async function readNew(): Promise<void> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(options.path, 'r');
    } catch {
      return; // not written yet
    }
    try {
      const { size } = await handle.stat();
      if (size <= offset) return;
      const buffer = Buffer.alloc(size - offset);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      offset += bytesRead;
      const text = partial + decoder.decode(buffer.subarray(0, bytesRead), { stream: true });
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        lineNumber++;
        if (line.trim() === '') continue;
        const parsed = safeParseJson(line, { source: `${options.path} line ${lineNumber}` });
        if (!parsed.success) {
          if (!warned) options.onProblem(`trainer metrics: ${parsed.error.message}; skipped`);
          warned = true;
          continue;
        }
        const row = trainerMetricsRow(parsed.value);
        if (row) options.onRow(row);
      }
    } finally {
      await handle.close();
    }
  }

  const tick = () => {
    reading = reading.then(readNew).catch((error: unknown) => {
      if (!warned)
        options.onProblem(`trainer metrics: cannot read ${options.path}: ${(error as Error).message}`);
      warned = true;
    });
  };
  const timer = setInterval(tick, options.intervalMs ?? 1000);
  timer.unref?.();
  return {
    async stop() {
      clearInterval(timer);
      tick();
      await reading;
    },
  };
}
