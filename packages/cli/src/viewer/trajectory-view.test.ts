// The trajectory view as a user comparing rollouts meets it, in a real Chromium at 1400 and 900 px:
// a group of 16 compared turn by turn, a score chip bringing its rollout into view, signed
// advantages, unwrapped diffs, test output shown as text, filters that never leave a
// non-matching group open, sorting, and `shears evaluate`'s pass@k with intervals.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chromiumAvailable, launchChromium } from '../test-support/chromium.js';
import { runShears } from '../test-support/run-cli.js';
import { buildViewerHtml } from './build-viewer.js';
import { createSyntheticGroups } from './synthetic-groups.js';

vi.setConfig({ testTimeout: 120_000 });

const hasChromium = chromiumAvailable();
const screenshotDir = join(import.meta.dirname, '..', '..', 'test-output');

describe.skipIf(!hasChromium)('trajectory view in Chromium', () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    browser = await launchChromium();
    dir = mkdtempSync(join(tmpdir(), 'shears-trajectory-view-'));
    mkdirSync(screenshotDir, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function open(name: string, html: string, width: number): Promise<{ page: Page; errors: string[] }> {
    const file = join(dir, name);
    writeFileSync(file, html);
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]');
    return { page, errors };
  }

  for (const width of [1400, 900])
    it(`compares a group of 16 at ${width} px: aligned turns, chips that bring a rollout into view, signed advantages`, async () => {
      const groups = createSyntheticGroups(30, { groupSize: 16, withTokens: false });
      const { page, errors } = await open(`compare-${width}.html`, buildViewerHtml(groups), width);
      // A group whose rewards differ, so advantages have both signs.
      const index = groups.findIndex((group) => (group.stats.std ?? 0) > 0.1);
      const group = groups[index]!;
      await page.fill('[data-testid=search]', `${group.groupId}`);
      const row = page.locator(`[data-testid=group-row][data-group="${group.groupId}"]`);
      await row.click();

      // The list is narrow; the row's chips never run into its mean label.
      const list = (await page.locator('[data-testid=list]').boundingBox())!;
      expect(list.width).toBeLessThanOrEqual(width >= 1400 ? 340 : 260);
      const mean = (await row.locator('[data-testid=row-mean]').boundingBox())!;
      for (const chip of await row.locator('[data-testid=row-chip]').all()) {
        const box = await chip.boundingBox();
        if (!box) continue;
        expect(box.y >= mean.y + mean.height || box.x + box.width <= mean.x).toBe(true);
      }
      expect(mean.x + mean.width).toBeLessThanOrEqual(list.x + list.width);

      // All 16 rollouts side by side in the aligned grid, without scrolling sideways at 1400 px.
      const aligned = page.locator('[data-testid=aligned]');
      expect(await aligned.locator('[data-testid=aligned-chip]').count()).toBe(16);
      expect(await aligned.locator('[data-testid=aligned-cell]').count()).toBe(16 * 2);
      if (width >= 1400) {
        const fits = await aligned.evaluate((node) => node.scrollWidth <= node.clientWidth + 1);
        expect(fits).toBe(true);
      }
      // Turn 1 of each rollout is its tool call, one line.
      expect(await aligned.locator('[data-testid=aligned-cell]').first().textContent()).toContain(
        'terminal grep',
      );

      // Advantages carry their sign.
      const advantages = await page.locator('[data-testid=advantage]').allTextContents();
      expect(advantages.some((text) => /^adv \+\d\.\d\d$/.test(text))).toBe(true);
      expect(advantages.some((text) => /^adv -\d\.\d\d$/.test(text))).toBe(true);
      const firstAdvantage = group.advantages[0];
      if (typeof firstAdvantage === 'number' && Math.abs(firstAdvantage) >= 0.005)
        expect(advantages[0]).toBe(
          `adv ${firstAdvantage > 0 ? '+' : '-'}${Math.abs(firstAdvantage).toFixed(2)}`,
        );

      // Clicking the last chip of the row brings rollout 15's card into view and marks it.
      const card = page.locator('[data-testid=rollout][data-rollout="15"]');
      await row.locator('[data-testid=row-chip]').nth(15).click();
      await expect.poll(() => card.evaluate((node) => node.classList.contains('focused'))).toBe(true);
      const detail = (await page.locator('[data-testid=detail]').boundingBox())!;
      const cardBox = (await card.boundingBox())!;
      expect(cardBox.y).toBeGreaterThanOrEqual(detail.y - 1);
      expect(cardBox.y).toBeLessThan(detail.y + detail.height);
      await page.screenshot({ path: join(screenshotDir, `compare-${width}.png`) });
      expect(errors).toEqual([]);
      await page.close();
    });

  it('shows diffs unwrapped and test output as text, not a JSON string of \\n', async () => {
    const groups = createSyntheticGroups(1, { withTokens: false });
    const rollout = groups[0]!.rollouts[0]!;
    const testOutput =
      '============ test session starts ============\ntests/test_a.py::test_one PASSED\ntests/test_a.py::test_two FAILED';
    rollout.rewardDetails = {
      diff: `--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-${'a'.repeat(300)}\n+${'b'.repeat(300)}\n`,
      testOutput,
      passed: 1,
    };
    const { page, errors } = await open('details.html', buildViewerHtml(groups), 1400);
    await page.locator('[data-testid=group-row]').first().click();
    const card = page.locator('[data-testid=rollout]').first();
    const diff = card.locator('pre.diff');
    expect(await diff.evaluate((node) => (globalThis as any).getComputedStyle(node).whiteSpace)).toBe('pre');
    // One line per diff line: the long line scrolls inside the block instead of wrapping.
    const lineHeight = await diff.locator('.add').evaluate((node) => node.getClientRects().length);
    expect(lineHeight).toBe(1);
    await card.locator('[data-testid=reward-details] summary').click();
    const text = card.locator('[data-testid=detail-text]');
    expect(await text.locator('.muted').textContent()).toBe('testOutput');
    expect(await text.locator('pre').textContent()).toBe(testOutput);
    const raw = await card.locator('[data-testid=reward-details]').textContent();
    expect(raw).not.toContain('\\n');
    expect(raw).toContain('"passed": 1');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('never keeps a group open that the filters exclude, and sorts by mean reward', async () => {
    const groups = createSyntheticGroups(40, { withTokens: false });
    const { page, errors } = await open('filters.html', buildViewerHtml(groups), 1400);
    await page.locator('[data-testid=group-row][data-group="group-0"]').click();
    expect(await page.textContent('[data-testid=group-summary]')).toContain('group group-0 ');
    // group-0 has no timeout rollout: after filtering on timeouts, the pane shows a group that has one.
    expect(groups[0]!.rollouts.some((rollout) => rollout.outcome === 'timeout')).toBe(false);
    await page.selectOption('[data-testid=outcome]', 'timeout');
    const summary = (await page.textContent('[data-testid=group-summary]')) ?? '';
    const shownId = /group (group-\d+) /.exec(summary)?.[1];
    const shown = groups.find((group) => group.groupId === shownId);
    expect(shown?.rollouts.some((rollout) => rollout.outcome === 'timeout')).toBe(true);
    // A filter nothing matches empties the pane and says so.
    await page.fill('[data-testid=search]', 'no-such-task');
    expect(await page.textContent('[data-testid=no-match]')).toBe('No group matches the filters.');
    await page.fill('[data-testid=search]', '');
    await page.selectOption('[data-testid=outcome]', 'all');

    await page.selectOption('[data-testid=sort]', 'mean-desc');
    const means = (await page.locator('[data-testid=row-mean]').allTextContents())
      .map((text) => Number(text.replace('mean ', '')))
      .filter((value) => !Number.isNaN(value));
    expect(means.length).toBeGreaterThan(5);
    expect(means).toEqual([...means].sort((a, b) => b - a));
    const best = Math.max(...groups.map((group) => group.stats.mean ?? -1));
    expect(means[0]).toBeCloseTo(best, 2);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("shears evaluate's report shows pass@k and mean score with their intervals", async () => {
    const run = await runShears(
      ['evaluate', '--env', 'demo', '--k', '2', '--max-items', '4', '--evaluate.out', 'runs/eval.jsonl'],
      { cwd: dir },
    );
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(readFileSync(join(dir, 'runs/eval.summary.json'), 'utf8')) as {
      passAtK: Record<string, number>;
      meanScore: { mean: number; low: number; high: number };
    };
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(pathToFileURL(join(dir, 'runs/eval.html')).href);
    await page.waitForSelector('body[data-ready="true"]');
    const shown = await page.locator('[data-testid=pass-at-k]').allTextContents();
    expect(shown.map((text) => text.split(' ')[0])).toEqual(Object.keys(summary.passAtK));
    for (const [index, key] of Object.keys(summary.passAtK).entries()) {
      const match = /^(pass@\d+) (\d\.\d{3}) \[(\d\.\d{3}), (\d\.\d{3})\]$/.exec(shown[index]!);
      expect(match, shown[index]).not.toBeNull();
      expect(Number(match![2])).toBeCloseTo(summary.passAtK[key]!, 3);
      expect(Number(match![3])).toBeLessThanOrEqual(Number(match![2]));
      expect(Number(match![4])).toBeGreaterThanOrEqual(Number(match![2]));
    }
    expect(await page.textContent('[data-testid=mean-score]')).toBe(
      `mean score ${summary.meanScore.mean.toFixed(3)} [${summary.meanScore.low.toFixed(3)}, ${summary.meanScore.high.toFixed(3)}]`,
    );
    await page.close();
  });
});
