// The run dashboard and the rollout comparison in a real Chromium: charts drawn from the metrics
// stream of a real `shears process` run on the demo env, a click on a chart opening those
// trajectories, `shears view --watch` updating live, the loop's rows (curriculum, safety,
// evaluation) shown when present, and a 100,000-group run loading and filtering (timings printed,
// never asserted).
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { groupMetricsSchema, metricsRowSchema } from '../metrics/metrics-schema.js';
import { createRunMetrics } from '../metrics/run-metrics.js';
import { successRule } from '../stats.js';
import { chromiumAvailable, launchChromium } from '../test-support/chromium.js';
import { runShears } from '../test-support/run-cli.js';
import { buildViewerHtml } from './build-viewer.js';
import { createSyntheticGroupMetrics, createSyntheticGroups } from './synthetic-groups.js';

vi.setConfig({ testTimeout: 240_000 });

const hasChromium = chromiumAvailable();
const screenshotDir = join(import.meta.dirname, '..', '..', 'test-output');

async function open(browser: Browser, url: string, width = 1400): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 120_000 });
  return { page, errors };
}

describe.skipIf(!hasChromium)('run dashboard in Chromium', () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    browser = await launchChromium();
    dir = mkdtempSync(join(tmpdir(), 'shears-dashboard-'));
    mkdirSync(screenshotDir, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("draws a real run's metrics, and a click on a chart opens that group's trajectories", async () => {
    const run = await runShears(
      ['process', '--env', 'demo', '--groups', '8', '--out', 'runs/demo.jsonl', '--seed', '5'],
      { cwd: dir },
    );
    expect(run.code, run.stderr).toBe(0);
    const rows = readFileSync(join(dir, 'runs/demo.metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((row) => row.kind === 'shears.metrics.group')
      .map((row) => groupMetricsSchema.parse(row));
    expect(rows).toHaveLength(8);

    const { page, errors } = await open(browser, pathToFileURL(join(dir, 'runs/demo.html')).href);
    await page.click('[data-testid=tab-dashboard]');
    await page.waitForSelector('[data-dashboard-ready=true]');
    expect(await page.textContent('[data-testid=dashboard-summary]')).toMatch(/^8 groups over/);
    for (const chart of ['reward', 'pass-rate', 'outcomes', 'latency', 'tool-errors', 'judges'])
      expect(await page.locator(`[data-testid=chart-${chart}] canvas`).count(), chart).toBe(1);
    // The demo's terminal tool shows up as a series of the tool chart; the per-task table lists each task.
    expect(await page.locator('[data-testid=chart-tool-errors] .u-legend').textContent()).toContain(
      'terminal',
    );
    const tasks = new Set(rows.map((row) => row.taskId));
    expect(await page.locator('[data-testid=task-row]').count()).toBe(tasks.size);
    await page.screenshot({ path: join(screenshotDir, 'dashboard.png'), fullPage: true });

    // Click the reward chart at the latest group: the trajectory view shows exactly that group.
    // Groups that finished within two pixels of the latest share its place on the chart (on a
    // loaded machine groups finish in bursts), so any of them is the one clicked.
    const sorted = [...rows].sort((a, b) => a.elapsedSeconds - b.elapsedSeconds);
    const last = sorted[sorted.length - 1]!;
    const over = page.locator('[data-testid=chart-reward] .u-over');
    const box = (await over.boundingBox())!;
    const pixel = (last.elapsedSeconds - sorted[0]!.elapsedSeconds) / box.width;
    const atTheEnd = sorted
      .filter((row) => row.elapsedSeconds >= last.elapsedSeconds - 2 * pixel)
      .map((row) => row.groupId);
    await over.click({ position: { x: box.width - 1, y: box.height / 2 } });
    await expect.poll(() => page.locator('[data-testid=selection]').textContent()).toMatch(/group \S+/);
    const chosen = /group (\S+)/.exec(
      (await page.locator('[data-testid=selection]').textContent()) ?? '',
    )![1]!;
    expect(atTheEnd).toContain(chosen);
    expect(await page.textContent('[data-testid=count]')).toMatch(/^1 of 8 groups/);
    expect(await page.locator('[data-testid=group-row]').getAttribute('data-group')).toBe(chosen);
    expect(await page.textContent('[data-testid=group-summary]')).toContain(chosen);

    // A task row opens that task's groups; clearing the selection shows the whole run again.
    await page.click('[data-testid=clear-selection]');
    expect(await page.textContent('[data-testid=count]')).toMatch(/^8 of 8 groups/);
    await page.click('[data-testid=tab-dashboard]');
    const task = [...tasks][0]!;
    await page.locator(`[data-testid=task-row][data-task="${task}"]`).click();
    const ofTask = rows.filter((row) => row.taskId === task).length;
    expect(await page.textContent('[data-testid=count]')).toMatch(new RegExp(`^${ofTask} of 8 groups`));
    expect(errors).toEqual([]);
    await page.close();
  });

  it('a click on a time bin opens the groups finished in it', async () => {
    const groups = createSyntheticGroups(120, { withTokens: false });
    const metrics = createSyntheticGroupMetrics(groups, { secondsPerGroup: 1 });
    const file = join(dir, 'bins.html');
    writeFileSync(file, buildViewerHtml(groups, { metrics }));
    const { page, errors } = await open(browser, pathToFileURL(file).href);
    await page.click('[data-testid=tab-dashboard]');
    await page.waitForSelector('[data-dashboard-ready=true]');
    // 120 groups, 1 s apart, in 30 bins (about four groups a bin) of ~4 s: the first holds four.
    const over = page.locator('[data-testid=chart-latency] .u-over');
    await over.click({ position: { x: 1, y: 20 } });
    await expect.poll(() => page.textContent('[data-testid=count]')).toMatch(/^4 of 120 groups/);
    const shown = await page
      .locator('[data-testid=group-row]')
      .evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-group')));
    expect(shown.sort()).toEqual(['group-0', 'group-1', 'group-2', 'group-3']);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("shows the loop's rows when present: curriculum level, replay share, safety events, evaluation pass@k with intervals", async () => {
    // Shapes of the loop's rows (metrics-schema.ts on the loop branch): `loop` on group rows,
    // `shears.metrics.loop` events and `shears.metrics.eval` rows.
    const groups = createSyntheticGroups(40, { withTokens: false });
    const metrics: Record<string, unknown>[] = createSyntheticGroupMetrics(groups, {
      secondsPerGroup: 1,
    }).map((row, index) => ({
      ...row,
      loop: {
        source: 'train',
        curriculumLevel: index < 22 ? 'easy' : 'medium',
        ...(index % 4 === 3 ? { replayOf: `group-${index - 3}` } : {}),
      },
    }));
    const common = { version: 1, at: '2026-01-01T00:00:00.000Z', command: 'train' };
    metrics.push(
      {
        kind: 'shears.metrics.loop',
        ...common,
        elapsedSeconds: 22,
        event: 'curriculum_advanced',
        step: 8,
        from: 'easy',
        to: 'medium',
        mean: 0.82,
      },
      {
        kind: 'shears.metrics.loop',
        ...common,
        elapsedSeconds: 30,
        event: 'safety_regressed',
        step: 12,
        score: 0.61,
        baseline: 0.7,
        tolerance: 0.95,
        weights: { train: 0.5, capability: 0.5 },
      },
      {
        kind: 'shears.metrics.eval',
        ...common,
        elapsedSeconds: 20,
        step: 10,
        env: 'demo',
        k: 2,
        tasks: 8,
        passAtK: { 'pass@1': 0.4, 'pass@2': 0.5 },
        meanScore: { mean: 0.45, low: 0.3, high: 0.6, confidence: 0.95 },
        passAt1Interval: { mean: 0.4, low: 0.3, high: 0.5 },
        complete: true,
        missing: 0,
        seconds: 3,
      },
      {
        kind: 'shears.metrics.eval',
        ...common,
        elapsedSeconds: 40,
        step: 20,
        env: 'demo',
        k: 2,
        tasks: 8,
        passAtK: { 'pass@1': 0.55, 'pass@2': 0.7 },
        meanScore: { mean: 0.6, low: 0.45, high: 0.75, confidence: 0.95 },
        passAt1Interval: { mean: 0.55, low: 0.45, high: 0.65 },
        complete: false,
        missing: 1,
        seconds: 3,
      },
    );
    const file = join(dir, 'loop.html');
    writeFileSync(file, buildViewerHtml(groups, { metrics }));
    const { page, errors } = await open(browser, pathToFileURL(file).href);
    await page.click('[data-testid=tab-dashboard]');
    await page.waitForSelector('[data-dashboard-ready=true]');
    // The level, named by difficulty, on the level axis; the replayed share beside it.
    const curriculum = page.locator('[data-testid=chart-curriculum]');
    expect(await curriculum.locator('canvas').count()).toBe(1);
    expect(await curriculum.locator('.muted').textContent()).toBe(
      'levels in the order reached: easy → medium; now medium',
    );
    expect(await page.locator('[data-testid=chart-replay] .u-legend').textContent()).toContain(
      'replay share',
    );
    const legend = await page.locator('[data-testid=chart-evaluation] .u-legend').textContent();
    for (const label of ['pass@1', 'pass@1 low', 'pass@1 high', 'pass@2', 'mean score'])
      expect(legend).toContain(label);
    const events = await page.locator('[data-testid=event]').allTextContents();
    expect(events).toContain(
      '22 s loop: curriculum_advanced · level easy → medium · rolling mean 0.820 · step 8',
    );
    expect(events).toContain(
      '30 s loop: safety_regressed · score 0.610 (baseline 0.700, tolerance 0.95) · mix train 0.50, capability 0.50 · step 12',
    );
    expect(events).toContain(
      '40 s eval: pass@1 0.550 · pass@2 0.700 · mean score 0.600 · step 20 · INCOMPLETE',
    );
    // The safety event is marked as an alarm; the curriculum one is not.
    expect(await page.locator('[data-testid=event].safety').count()).toBe(1);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('without a metrics stream it says so and still shows the per-task table', async () => {
    const groups = createSyntheticGroups(10, { withTokens: false });
    const file = join(dir, 'plain.html');
    writeFileSync(file, buildViewerHtml(groups));
    const { page, errors } = await open(browser, pathToFileURL(file).href);
    await page.click('[data-testid=tab-dashboard]');
    expect(await page.textContent('[data-testid=no-metrics]')).toContain('metrics.jsonl');
    expect(await page.locator('[data-testid=task-row]').count()).toBe(10);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shears view --watch serves the page and it shows groups and metrics appended while it is open', async () => {
    const groups = createSyntheticGroups(6, { withTokens: false });
    const metrics = createSyntheticGroupMetrics(groups);
    const jsonl = join(dir, 'live.jsonl');
    const metricsPath = join(dir, 'live.metrics.jsonl');
    const lines = (values: readonly unknown[]) =>
      values.map((value) => `${JSON.stringify(value)}\n`).join('');
    writeFileSync(jsonl, lines(groups.slice(0, 3)));
    writeFileSync(metricsPath, lines(metrics.slice(0, 3)));
    const stop = new AbortController();
    let url = '';
    const running = runShears(['view', 'live.jsonl', '--watch'], {
      cwd: dir,
      drain: stop.signal,
      onStdout: (text) => {
        url = /http:\/\/127\.0\.0\.1:\d+\//.exec(text)?.[0] ?? url;
      },
    });
    try {
      await expect.poll(() => url, { timeout: 30_000 }).not.toBe('');
      const { page, errors } = await open(browser, url);
      expect(await page.textContent('[data-testid=count]')).toMatch(/^3 of 3 groups/);
      // The run goes on: two more groups and their rows, the last line still being written.
      appendFileSync(jsonl, `${lines(groups.slice(3, 5))}${JSON.stringify(groups[5]).slice(0, 40)}`);
      appendFileSync(metricsPath, lines(metrics.slice(3, 5)));
      await expect
        .poll(() => page.textContent('[data-testid=count]'), { timeout: 30_000 })
        .toMatch(/^5 of 5 groups/);
      await page.click('[data-testid=tab-dashboard]');
      await page.waitForSelector('[data-dashboard-ready=true]');
      expect(await page.textContent('[data-testid=dashboard-summary]')).toMatch(/^5 groups over/);
      // The cut-off line completes: it arrives whole, once.
      appendFileSync(jsonl, `${JSON.stringify(groups[5]).slice(40)}\n`);
      appendFileSync(metricsPath, lines(metrics.slice(5)));
      await expect.poll(() => page.getAttribute('body', 'data-live-groups'), { timeout: 30_000 }).toBe('6');
      await expect.poll(() => page.textContent('[data-testid=dashboard-summary]')).toMatch(/^6 groups over/);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      stop.abort();
    }
    const result = await running;
    expect(result.code, result.stderr).toBe(0);
  });

  it('shears view names metrics lines it cannot chart and still draws the rest', async () => {
    const groups = createSyntheticGroups(3, { withTokens: false });
    const metrics = createSyntheticGroupMetrics(groups);
    writeFileSync(join(dir, 'cut.jsonl'), groups.map((group) => `${JSON.stringify(group)}\n`).join(''));
    writeFileSync(
      join(dir, 'cut.metrics.jsonl'),
      `${JSON.stringify(metrics[0])}\n{"kind":"shears.metrics.gr\n${JSON.stringify(metrics[1])}\n["not a row"]\n${JSON.stringify(metrics[2])}\n`,
    );
    const run = await runShears(['view', 'cut.jsonl'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      'cut.metrics.jsonl: 2 line(s) are not metrics rows and are not charted (first: line 2)',
    );
    expect(run.stdout).toContain('3 groups → cut.html (dashboard: 3 metrics rows)');
    const { page, errors } = await open(browser, pathToFileURL(join(dir, 'cut.html')).href);
    await page.click('[data-testid=tab-dashboard]');
    expect(await page.textContent('[data-testid=dashboard-summary]')).toMatch(/^3 groups over/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("charts the real writer's window and step rows: throughput, cost, queue and lag, per trainer step; a click opens the groups a row covers", async () => {
    // The stream a `serve` run writes (createRunMetrics, the real writer) on a scripted clock: one
    // group a second, 5 s windows, a trainer step every 10 groups, the API queue varying.
    const groups = createSyntheticGroups(30, { withTokens: false });
    for (const group of groups)
      for (const rollout of group.rollouts) rollout.usage = { ...rollout.usage!, costUsd: 0.001 };
    const lines: string[] = [];
    let now = 0;
    const stream = createRunMetrics({
      writer: { write: (row) => lines.push(JSON.stringify(row)) },
      command: 'serve',
      success: successRule(undefined),
      windowSeconds: 5,
      now: () => now,
    });
    groups.forEach((group, index) => {
      now = index * 1000 + 500;
      const step = Math.floor(index / 10);
      stream.trainerStatus({ current_step: step, queue_size: index % 7 });
      stream.group(group, { trainerAtStart: { current_step: Math.max(0, step - 1), queue_size: index % 7 } });
    });
    now += 1000;
    stream.close();
    const rows = lines.map((line) => metricsRowSchema.parse(JSON.parse(line)));
    const windows = rows.filter((row) => row.kind === 'shears.metrics.window');
    const steps = rows.filter((row) => row.kind === 'shears.metrics.step');
    expect(windows.length).toBeGreaterThan(3);
    expect(steps.length).toBeGreaterThan(1);
    expect(windows.some((row) => row.trainer && row.trainer.queueSize > 0)).toBe(true);
    writeFileSync(join(dir, 'served.jsonl'), `${groups.map((group) => JSON.stringify(group)).join('\n')}\n`);
    writeFileSync(join(dir, 'served.metrics.jsonl'), `${lines.join('\n')}\n`);
    const run = await runShears(['view', 'served.jsonl'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);

    const { page, errors } = await open(browser, pathToFileURL(join(dir, 'served.html')).href);
    await page.click('[data-testid=tab-dashboard]');
    await page.waitForSelector('[data-dashboard-ready=true]');
    for (const chart of ['throughput', 'cost', 'trainer-api', 'steps'])
      expect(await page.locator(`[data-testid=chart-${chart}] canvas`).count(), chart).toBe(1);
    const totalCost = windows.reduce((sum, row) => sum + row.tokens.costUsd, 0);
    expect(totalCost).toBeGreaterThan(0);
    expect(await page.textContent('[data-testid=chart-cost]')).toContain(`total ${totalCost.toFixed(4)} USD`);
    expect(await page.textContent('[data-testid=chart-trainer-api]')).toContain(
      'groups queued for the trainer',
    );
    expect(await page.textContent('[data-testid=chart-steps]')).toContain(`now ${steps.at(-1)!.step}`);
    await page.screenshot({ path: join(screenshotDir, 'dashboard-windows.png'), fullPage: true });

    // The groups written after the previous row of the same kind: the ones the row aggregates.
    const coveredBy = (kind: string) => {
      const at = rows.findLastIndex((row) => row.kind === kind);
      const before = rows.slice(0, at).findLastIndex((row) => row.kind === kind);
      return rows
        .slice(before + 1, at)
        .filter((row) => row.kind === 'shears.metrics.group')
        .map((row) => (row as { groupId: string }).groupId);
    };
    const rightEdge = async (chart: string) => {
      const over = page.locator(`[data-testid=chart-${chart}] .u-over`);
      const box = (await over.boundingBox())!;
      await over.click({ position: { x: box.width - 1, y: box.height / 2 } });
    };
    // The last window: its groups, as many as the row counts.
    const lastWindow = coveredBy('shears.metrics.window');
    expect(lastWindow.length).toBe(windows.at(-1)!.groups);
    await rightEdge('trainer-api');
    await expect
      .poll(() => page.textContent('[data-testid=count]'))
      .toMatch(new RegExp(`^${lastWindow.length} of 30 groups`));
    const shown = await page
      .locator('[data-testid=group-row]')
      .evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-group')));
    expect(shown.sort()).toEqual([...lastWindow].sort());
    // The last trainer step: the groups finished since the step before.
    await page.click('[data-testid=clear-selection]');
    await page.click('[data-testid=tab-dashboard]');
    const lastStep = coveredBy('shears.metrics.step');
    expect(lastStep.length).toBe(steps.at(-1)!.groups);
    await rightEdge('steps');
    await expect
      .poll(() => page.locator('[data-testid=selection]').textContent())
      .toContain(`trainer step ${steps.at(-1)!.step}`);
    expect(await page.textContent('[data-testid=count]')).toMatch(
      new RegExp(`^${lastStep.length} of 30 groups`),
    );
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shears view --watch refuses --html, and --port without --watch', async () => {
    writeFileSync(join(dir, 'one.jsonl'), `${JSON.stringify(createSyntheticGroups(1)[0])}\n`);
    const both = await runShears(['view', 'one.jsonl', '--watch', '--html', 'x.html'], { cwd: dir });
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('--html does nothing with --watch');
    const port = await runShears(['view', 'one.jsonl', '--port', '9'], { cwd: dir });
    expect(port.code).not.toBe(0);
    expect(port.stderr).toContain('add --watch');
  });

  it('loads and filters a 100,000-group run without stalling: records are decoded only when a group is opened (timings printed, not asserted)', async () => {
    const count = 100_000;
    let started: number;
    // Lean groups (2 rollouts, one tool call each, no reward details), as before the page kept
    // records unparsed, so the figures compare with earlier runs.
    const groups = createSyntheticGroups(count, { groupSize: 2, withTokens: false });
    for (const group of groups)
      for (const rollout of group.rollouts) {
        rollout.messages = rollout.messages.slice(2, 4);
        rollout.rewardDetails = undefined;
      }
    const metrics = createSyntheticGroupMetrics(groups);
    const file = join(dir, 'huge.html');
    started = performance.now();
    const html = buildViewerHtml(groups, { metrics });
    const buildMs = performance.now() - started;
    writeFileSync(file, html);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    // Every main-thread task over 50 ms (Chromium's long tasks), from the page's first script on.
    await page.addInitScript(() => {
      const tasks: number[] = [];
      (globalThis as any).__longTasks = tasks;
      // 'longtask' is Chromium's entry type (not in the DOM typings of this Node project).
      const init: any = { type: 'longtask', buffered: true };
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) tasks.push(entry.duration);
      }).observe(init);
    });
    const longTasks = async () => {
      const tasks = (await page.evaluate(() => (globalThis as any).__longTasks.splice(0))) as number[];
      tasks.sort((a, b) => a - b);
      const p50 = tasks.length ? tasks[Math.floor(tasks.length / 2)]! : 0;
      return `${tasks.length} long tasks (p50 ${p50.toFixed(0)} ms, max ${(tasks.at(-1) ?? 0).toFixed(0)} ms, total ${tasks.reduce((sum, value) => sum + value, 0).toFixed(0)} ms)`;
    };
    started = performance.now();
    await page.goto(pathToFileURL(file).href, { timeout: 180_000 });
    await page.waitForSelector('body[data-ready="true"]', { timeout: 180_000 });
    const loadMs = performance.now() - started;
    const loadTasks = await longTasks();
    expect(await page.textContent('[data-testid=count]')).toMatch(/^100000 of 100000 groups/);
    // Only the visible rows are in the DOM, and of the records only the block of the first group
    // (the detail pane shows it) was decoded: the list comes from the index.
    expect(await page.locator('[data-testid=group-row]').count()).toBeLessThan(80);
    expect(await page.getAttribute('body', 'data-record-blocks-read')).toBe('1');
    started = performance.now();
    await page.fill('[data-testid=search]', 'task-7');
    await expect
      .poll(() => page.textContent('[data-testid=count]'), { timeout: 60_000 })
      .toMatch(/^2000 of 100000 groups/);
    const filterMs = performance.now() - started;
    // The page answers between filters: a frame is drawn after the filter (no long stall left behind).
    await page.evaluate(() => new Promise((resolve) => (globalThis as any).requestAnimationFrame(resolve)));
    const filterTasks = await longTasks();
    // A group deep in the run opens exactly: its own record (one more block decoded), not a summary.
    const deep = groups[73_456]!;
    await page.fill('[data-testid=search]', deep.groupId);
    await expect
      .poll(() => page.textContent('[data-testid=count]'), { timeout: 60_000 })
      .toMatch(/^1 of 100000 groups/);
    started = performance.now();
    await page.locator('[data-testid=group-row]').first().click();
    await expect
      .poll(() => page.getAttribute('[data-testid=detail]', 'data-group'), { timeout: 60_000 })
      .toBe(deep.groupId);
    const openMs = performance.now() - started;
    // Its tool call's command names the group's own file (the index holds no messages).
    const command = JSON.parse(
      String(deep.rollouts[1]!.messages[0]!.tool_calls![0]!.function.arguments),
    ).command;
    expect(command).toBe('grep -n needle file-73456.txt');
    expect(await page.textContent('[data-testid=detail]')).toContain(command);
    expect(await page.getAttribute('body', 'data-record-blocks-read')).toBe('2');
    await page.fill('[data-testid=search]', '');
    await longTasks();
    started = performance.now();
    await page.click('[data-testid=tab-dashboard]');
    await page.waitForSelector('[data-dashboard-ready=true]', { timeout: 120_000 });
    const dashboardMs = performance.now() - started;
    const dashboardTasks = await longTasks();
    expect(await page.textContent('[data-testid=dashboard-summary]')).toMatch(/^100000 groups over/);
    // A click on the first time bin (a 60th of the run's time) filters the 100,000 groups down to it.
    const first = metrics[0]!.elapsedSeconds;
    const span = metrics.at(-1)!.elapsedSeconds - first;
    const inFirstBin = metrics.filter((row) => row.elapsedSeconds < first + span / 60).length;
    started = performance.now();
    await page.locator('[data-testid=chart-outcomes] .u-over').click({ position: { x: 1, y: 20 } });
    await expect
      .poll(() => page.textContent('[data-testid=count]'), { timeout: 60_000 })
      .toMatch(new RegExp(`^${inFirstBin} of 100000 groups`));
    const clickMs = performance.now() - started;
    console.log(
      `dashboard 100,000 groups: html ${(html.length / 1e6).toFixed(1)} MB built in ${buildMs.toFixed(0)} ms; load ${loadMs.toFixed(0)} ms, ${loadTasks}; filter ${filterMs.toFixed(0)} ms, ${filterTasks}; open a group ${openMs.toFixed(0)} ms; dashboard ${dashboardMs.toFixed(0)} ms, ${dashboardTasks}; bin click ${clickMs.toFixed(0)} ms`,
    );
    expect(errors).toEqual([]);
    await page.close();
  });
});
