// The trainer's own numbers on the run dashboard, in a real Chromium (issue 33 §5): the reference
// trainer's metrics.jsonl (the lines trainers/shears_trainer/train.py writes) is followed as it
// grows by the follower `shears train` runs, its rows go through the real metrics writer into the
// run's stream, and the dashboard plots loss, KL, entropy and reward against the trainer step with
// labelled axes and whole-step ticks.
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { metricsRowSchema } from '../metrics/metrics-schema.js';
import { createRunMetrics } from '../metrics/run-metrics.js';
import { followTrainerMetrics } from '../metrics/trainer-metrics.js';
import { successRule } from '../stats.js';
import { chromiumAvailable, launchChromium } from '../test-support/chromium.js';
import { runShears } from '../test-support/run-cli.js';
import { createSyntheticGroups } from './synthetic-groups.js';

vi.setConfig({ testTimeout: 240_000 });

/** Step `step` of 12 as train.py writes it (every key it writes; step 5 had no signal and was skipped). */
function trainerLine(step: number): string {
  const skipped = step === 5;
  return JSON.stringify({
    step,
    loss: skipped ? 0 : Number((0.5 / step).toFixed(6)),
    policy: skipped ? 0 : 0.4 / step,
    kl: skipped ? 0 : Number((0.0001 * step).toFixed(6)),
    clip_fraction: 0.02,
    entropy: skipped ? 0 : Number((2.5 - 0.1 * step).toFixed(6)),
    ratio: 1,
    grad_norm: 0.7,
    reward_mean: Number((step / 12).toFixed(6)),
    sequences: 8,
    tokens: 512,
    trained_tokens: 256,
    tokens_per_s: 900.5,
    step_s: 0.5,
    wait_s: 0.1,
    advantages: 'served',
    on_policy_fallback: false,
    skipped,
    policy_version: step,
    lag_mean: 0,
    lag_max: 0,
    time_s: step * 0.6,
  });
}

describe.skipIf(!chromiumAvailable())("the trainer's loss, KL, entropy and reward on the dashboard", () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    browser = await launchChromium();
    dir = mkdtempSync(join(tmpdir(), 'shears-trainer-charts-'));
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('follows the growing metrics.jsonl into the stream and plots each against the trainer step, axes labelled', async () => {
    const lines: string[] = [];
    let now = 0;
    const stream = createRunMetrics({
      writer: { write: (row) => lines.push(JSON.stringify(row)) },
      command: 'train',
      success: successRule(undefined),
      windowSeconds: 5,
      now: () => now,
    });
    const groups = createSyntheticGroups(12, { withTokens: false });
    const file = join(dir, 'metrics.jsonl');
    const problems: string[] = [];
    let seen = 0;
    const follower = followTrainerMetrics({
      path: file,
      onRow: (row) => {
        seen++;
        stream.event(row);
      },
      onProblem: (message) => problems.push(message),
      intervalMs: 10,
    });
    // The trainer writes as it goes: a step line after each step, the last one arriving in two
    // writes (the follower reads a line only once it is whole).
    for (const [index, group] of groups.entries()) {
      now = index * 1000 + 500;
      stream.group(group);
      const step = index + 1;
      if (step < 12) appendFileSync(file, `${trainerLine(step)}\n`);
      else {
        const last = trainerLine(step);
        appendFileSync(file, last.slice(0, 40));
        await expect.poll(() => seen, { timeout: 30_000 }).toBe(11);
        appendFileSync(file, `${last.slice(40)}\n`);
      }
      if (step % 4 === 0) await expect.poll(() => seen, { timeout: 30_000 }).toBe(step);
    }
    await follower.stop();
    now += 1000;
    stream.close();
    expect(problems).toEqual([]);
    const trainerRows = lines
      .map((line) => metricsRowSchema.parse(JSON.parse(line)))
      .filter((row) => row.kind === 'shears.metrics.trainer');
    expect(trainerRows.map((row) => row.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(trainerRows[1]).toMatchObject({ loss: 0.25, kl: 0.0002, entropy: 2.3, rewardMean: 0.166667 });
    expect(trainerRows[4]!.skipped).toBe(true);

    writeFileSync(join(dir, 'trained.jsonl'), `${groups.map((group) => JSON.stringify(group)).join('\n')}\n`);
    writeFileSync(join(dir, 'trained.metrics.jsonl'), `${lines.join('\n')}\n`);
    const run = await runShears(['view', 'trained.jsonl'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(pathToFileURL(join(dir, 'trained.html')).href);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 120_000 });
    await page.click('[data-testid=tab-dashboard]');
    await page.waitForSelector('[data-dashboard-ready=true]');
    // The skipped step took no optimiser step: a gap in loss, KL and entropy, not a zero.
    const taken = (value: number | null, index: number) => (index === 4 ? null : value);
    const expected = {
      'trainer-loss': {
        y: 'loss (per token)',
        series: 'loss',
        values: trainerRows.map((row, i) => taken(row.loss, i)),
      },
      'trainer-kl': {
        y: 'KL (nats per token)',
        series: 'KL',
        values: trainerRows.map((row, i) => taken(row.kl, i)),
      },
      'trainer-entropy': {
        y: 'entropy (nats per token)',
        series: 'entropy',
        values: trainerRows.map((row, i) => taken(row.entropy, i)),
      },
      'trainer-reward': {
        y: 'mean reward (score)',
        series: 'reward mean',
        values: trainerRows.map((row) => row.rewardMean),
      },
    };
    for (const [id, want] of Object.entries(expected)) {
      const box = page.locator(`[data-testid=chart-${id}]`);
      expect(await box.locator('canvas').count(), id).toBe(1);
      expect(await box.textContent()).toContain('12 trainer steps (last: 12); 1 skipped (no signal');
      // What uPlot drew: the axes' labels and tick texts, the x values (steps) and the series.
      const drawn = await box.evaluate((element) => {
        const plot = (element as unknown as { uplot: any }).uplot;
        return {
          xLabel: plot.axes[0].label,
          yLabel: plot.axes[1].label,
          xTicks: plot.axes[0]._values as string[],
          yTicks: plot.axes[1]._values as string[],
          x: Array.from(plot.data[0] as number[]),
          y: Array.from(plot.data[1] as number[]),
          series: plot.series[1].label,
        };
      });
      expect(drawn.xLabel, id).toBe('trainer step');
      expect(drawn.yLabel, id).toBe(want.y);
      expect(drawn.series, id).toBe(want.series);
      expect(drawn.x).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
      expect(drawn.y).toEqual(want.values);
      // Whole steps on the x axis; every y tick a short, distinct number (a KL of 2e-4 is not "0.000").
      const xTicks = drawn.xTicks.filter(Boolean);
      expect(xTicks.length, id).toBeGreaterThan(2);
      for (const tick of xTicks) expect(tick, id).toMatch(/^\d+$/);
      const yTicks = drawn.yTicks.filter(Boolean);
      expect(yTicks.length, id).toBeGreaterThan(2);
      expect(new Set(yTicks).size, id).toBe(yTicks.length);
      for (const tick of yTicks) expect(tick.length, `${id}: ${tick}`).toBeLessThanOrEqual(7);
      // One form per axis: all in exponent form or none.
      expect(new Set(yTicks.filter((tick) => tick !== '0').map((tick) => tick.includes('e'))).size, id).toBe(
        1,
      );
    }
    // Hovering a point shows its step and value in the legend.
    const over = page.locator('[data-testid=chart-trainer-kl] .u-over');
    const box = (await over.boundingBox())!;
    await over.hover({ position: { x: box.width - 2, y: box.height / 2 } });
    await expect
      .poll(() => page.locator('[data-testid=chart-trainer-kl] .u-legend').textContent())
      .toMatch(/step\s*12.*KL\s*0\.001/);
    expect(errors).toEqual([]);
    await page.close();
  });
});
