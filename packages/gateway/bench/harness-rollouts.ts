// Benchmark of the harness env: N concurrent rollouts (default 64) of the light harness (a node
// program on the openai SDK, test/light-harness.mjs) started as commands in local sandboxes,
// each solving the bundled task in two model requests against the gateway in front of the
// phase-2 scripted /generate server (real Qwen3 tokenizer). Prints one JSON line: rollouts/s,
// wall time, peak resident memory of the harness processes (per rollout), the bench process's
// own peak RSS growth (gateway, sessions, records; per rollout), outcomes, and the harness
// processes left once the group is done (must be 0).
// Run: pnpm -F @shears/gateway bench:harness   (BENCH_ROLLOUTS=64)
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createConcurrencyLimiter, runGroup } from '@shears/core';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { createHarnessEnv } from '../src/harness-env.js';
import { managedBackend, toolCallText } from '../test/backends.js';

const ROLLOUTS = Number(process.env.BENCH_ROLLOUTS ?? 64);
const LIGHT_HARNESS = fileURLToPath(new URL('../test/light-harness.mjs', import.meta.url));
const FIX = "sed -i 's/wrold/world/' greet.sh";

/** Resident memory (KiB) of the light-harness processes running now, and how many there are. */
function harnessProcesses(): { count: number; rssKib: number } {
  const lines = execFileSync('ps', ['-eo', 'rss=,args='], { encoding: 'utf8' }).split('\n');
  let count = 0;
  let rssKib = 0;
  for (const line of lines) {
    if (!line.includes(LIGHT_HARNESS) || line.includes('ps -eo')) continue;
    count += 1;
    rssKib += Number(line.trim().split(/\s+/)[0] ?? 0);
  }
  return { count, rssKib };
}

const backend = await managedBackend({
  policy: (request) => {
    if (!request.promptText.includes('<tool_response>'))
      return `<think>\nFix the typo.\n</think>\n\n${toolCallText('shell', { command: FIX })}`;
    return '<think>\nFixed.\n</think>\n\nDone.';
  },
});
const env = createHarnessEnv({ command: `node ${LIGHT_HARNESS}`, mainTool: 'shell', timeoutMs: 300_000 });
const sandboxes = createLocalSandboxProvider();
const rssBefore = process.memoryUsage().rss;
let peakHarness = { count: 0, rssKib: 0 };
let peakSelfRss = rssBefore;
const sampler = setInterval(() => {
  const now = harnessProcesses();
  if (now.rssKib > peakHarness.rssKib) peakHarness = now;
  peakSelfRss = Math.max(peakSelfRss, process.memoryUsage().rss);
}, 250);

const started = performance.now();
const record = await runGroup({
  env,
  item: (await env.nextItem())!,
  server: backend.server,
  sandboxes,
  groupSize: ROLLOUTS,
  limiter: createConcurrencyLimiter(ROLLOUTS),
  allEqualScores: 'keep',
  retryBudget: 0,
});
const wallSeconds = (performance.now() - started) / 1000;
clearInterval(sampler);
await env.close?.();
await sandboxes.close();
await backend.close();
await new Promise((resolve) => setTimeout(resolve, 500));
const left = harnessProcesses();

const outcomes: Record<string, number> = {};
for (const rollout of record.rollouts) outcomes[rollout.outcome] = (outcomes[rollout.outcome] ?? 0) + 1;
console.log(
  JSON.stringify({
    bench: 'harness_rollouts',
    rollouts: ROLLOUTS,
    wallSeconds: Number(wallSeconds.toFixed(2)),
    rolloutsPerSecond: Number((ROLLOUTS / wallSeconds).toFixed(2)),
    outcomes,
    solved: record.rollouts.filter((rollout) => rollout.reward === 1).length,
    modelRequests: backend.generate.generated.length,
    peakHarnessProcesses: peakHarness.count,
    peakHarnessRssMiB: Number((peakHarness.rssKib / 1024).toFixed(1)),
    harnessRssPerRolloutMiB: Number((peakHarness.rssKib / 1024 / Math.max(1, peakHarness.count)).toFixed(1)),
    benchProcessRssGrowthMiB: Number(((peakSelfRss - rssBefore) / 1024 / 1024).toFixed(1)),
    benchProcessRssPerRolloutMiB: Number(((peakSelfRss - rssBefore) / 1024 / 1024 / ROLLOUTS).toFixed(2)),
    harnessProcessesLeft: left.count,
    loadavg: loadavg().map((value) => Number(value.toFixed(2))),
  }),
);
