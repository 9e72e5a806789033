// Benchmarks for the shears command, one JSON line each:
// - process-demo: wall time of `shears process --env demo` (in-process, scripted policy, local sandboxes)
// - viewer-build: time and size of the static viewer for 10,000 trajectories
// - viewer-load: time until the viewer is interactive in Chromium, and time to apply a filter
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CHROMIUM_PATH, launchChromium } from '../src/test-support/chromium.js';
import { runShears } from '../src/test-support/run-cli.js';
import { buildViewerHtml } from '../src/viewer/build-viewer.js';
import { createSyntheticGroups } from '../src/viewer/synthetic-groups.js';

const dir = mkdtempSync(join(tmpdir(), 'shears-bench-'));
const emit = (record: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(record)}\n`);

try {
  for (const groups of [4, 16]) {
    const started = performance.now();
    const run = await runShears(
      [
        'process',
        '--env',
        'demo',
        '--groups',
        String(groups),
        '--out',
        `runs/bench-${groups}.jsonl`,
        '--concurrency',
        '8',
      ],
      { cwd: dir },
    );
    const seconds = (performance.now() - started) / 1000;
    emit({
      bench: 'process-demo',
      groups,
      rollouts: groups * 4,
      exitCode: run.code,
      seconds: Number(seconds.toFixed(3)),
      rolloutsPerSecond: Number(((groups * 4) / seconds).toFixed(2)),
    });
  }

  const groups = createSyntheticGroups(2500, { withTokens: false });
  const buildStarted = performance.now();
  const html = buildViewerHtml(groups);
  const buildSeconds = (performance.now() - buildStarted) / 1000;
  const file = join(dir, 'viewer.html');
  writeFileSync(file, html);
  emit({
    bench: 'viewer-build',
    trajectories: 10_000,
    seconds: Number(buildSeconds.toFixed(3)),
    bytes: Buffer.byteLength(html),
  });

  if (existsSync(CHROMIUM_PATH)) {
    const browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const loadStarted = performance.now();
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 120_000 });
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    // A string, so the bench needs no DOM typings.
    const filterMs = (await page.evaluate(`(() => {
      const input = document.getElementById('min-score');
      const started = performance.now();
      input.value = '0.5';
      input.dispatchEvent(new Event('input'));
      return performance.now() - started;
    })()`)) as number;
    emit({
      bench: 'viewer-load',
      trajectories: 10_000,
      readySeconds: Number(loadSeconds.toFixed(3)),
      filterMs: Number(filterMs.toFixed(1)),
    });
    await browser.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
