import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatTrainSummary } from './reference-trainer.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function summaryLine(summary: Record<string, unknown>): string {
  dir = mkdtempSync(join(tmpdir(), 'shears-train-summary-'));
  writeFileSync(
    join(dir, 'train-summary.json'),
    JSON.stringify({ output: dir, metrics: join(dir, 'metrics.jsonl'), checkpoints: [], ...summary }),
  );
  return formatTrainSummary(dir, dir)[0]!;
}

describe("train's reward line", () => {
  it('says what it averages: batch mean scores over the first and last window of steps the trainer used', () => {
    const line = summaryLine({ steps: 50, reward_start: 0.18, reward_end: 0.3, reward_window: 10 });
    expect(line).toBe(
      'train: 50 steps; reward 0.180 at the start → 0.300 at the end: the mean score of the sequences in a trainer batch, averaged over the first 10 and the last 10 steps (groups dropped as all-equal are not in any batch)',
    );
  });

  it("uses the trainer's rule for a summary without reward_window, and says 'step' for a window of one", () => {
    expect(summaryLine({ steps: 20, reward_start: 0, reward_end: 1 })).toContain(
      'averaged over the first 5 and the last 5 steps',
    );
    expect(summaryLine({ steps: 2, reward_start: 0, reward_end: 1 })).toContain(
      'averaged over the first and the last step',
    );
  });
});
