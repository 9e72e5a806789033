// bench/judges: judge calls per second a 3-judge panel sustains against the scripted server at
// a given concurrency, and the cache hit rate of a re-judging run. Prints JSON lines.
// Usage: tsx bench/judges.ts [--items 600] [--concurrency 32] [--latency-ms 0]
import { loadavg } from 'node:os';
import type { JudgeSubject } from '@shears/core';
import {
  createScriptedServer,
  createScriptedServerClient,
  type ScriptedChatRequest,
} from '@shears/core/test';
import { createJudgePanel, createMemoryJudgeCache, createRubricJudge, DEFAULT_RUBRIC } from '../src/index.js';
import { signed } from '../src/test-support/scripted-judge.js';

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

const items = option('items', 600);
const concurrency = option('concurrency', 32);
const latencyMs = option('latency-ms', 0);

// The verdict echoes the call's nonce, as a judge model told to does (without it every verdict fails).
const verdict = (request: ScriptedChatRequest, score: number) =>
  signed(request, {
    dimensions: Object.fromEntries(
      DEFAULT_RUBRIC.dimensions.map((entry) => [entry.name, Math.round(score * 10)]),
    ),
    composite: score,
    rationale: 'ok',
  });

const server = await createScriptedServer({
  latencyMs,
  policy: (request) => ({
    content: verdict(request, ((request.messages.length * 7 + String(request.model).length) % 10) / 10),
    usage: { prompt_tokens: 900, completion_tokens: 60 },
  }),
});
const cache = createMemoryJudgeCache();
const judges = ['judge-a', 'judge-b', 'judge-c'].map((model) =>
  createRubricJudge({ id: model, server: createScriptedServerClient({ baseUrl: server.url, model }), cache }),
);
const panel = createJudgePanel({ judges, aggregation: 'trimmed_mean' });

const subjects: JudgeSubject[] = Array.from({ length: items }, (_, index) => ({
  taskId: `task-${index}`,
  task: `Fix bug number ${index} in the repository`,
  messages: [
    { role: 'user', content: `Fix bug number ${index} in the repository` },
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        {
          id: `c${index}`,
          type: 'function',
          function: { name: 'terminal', arguments: '{"command":"pytest -q"}' },
        },
      ],
    },
    {
      role: 'tool',
      tool_call_id: `c${index}`,
      content: `{"output": "${'.'.repeat(200)} 3 passed", "exit_code": 0, "error": null}`,
    },
    { role: 'assistant', content: `Fixed bug ${index}.` },
  ],
  finalResponse: `Fixed bug ${index}.`,
}));

async function run(label: string) {
  const before = { ...cache.stats };
  const requestsBefore = server.chatRequests.length;
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < subjects.length) {
        const subject = subjects[next++]!;
        const result = await panel.judge(subject);
        if (result.status !== 'scored') failed++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const judgeCalls = subjects.length * judges.length;
  const hits = cache.stats.hits - before.hits;
  const misses = cache.stats.misses - before.misses;
  console.log(
    JSON.stringify({
      bench: 'judges',
      run: label,
      loadAverage: loadavg().map((value) => Number(value.toFixed(2))),
      items: subjects.length,
      panelSize: judges.length,
      concurrency,
      latencyMs,
      judgeCallsPerSecond: Math.round(judgeCalls / seconds),
      panelVerdictsPerSecond: Math.round(subjects.length / seconds),
      httpRequests: server.chatRequests.length - requestsBefore,
      cacheHitRate: hits / Math.max(1, hits + misses),
      failed,
      seconds: Number(seconds.toFixed(3)),
    }),
  );
  return failed;
}

let failures = 0;
failures += await run('first');
failures += await run('rejudge');
await server.close();
// A bench whose verdicts fail measures nothing: say so and exit non-zero.
if (failures > 0) {
  console.error(
    `bench/judges: ${failures} panel verdicts failed; the figures above are not judge throughput`,
  );
  process.exitCode = 1;
}
