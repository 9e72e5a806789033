// Rollouts/s of a small env whose one tool is served natively or through MCP. The env (count the
// words of a text) has one stateless tool, `count_words`; the same function is a plain shears
// tool (native) and the only tool of bench/count-words-server.mjs, an SDK McpServer reached over
// stdio started per rollout inside its local sandbox (stdio), over stdio from a pool of 4
// processes on this machine (stdio-pool), over streamable HTTP with one session per rollout
// (http) and with one shared session (http-pool), the HTTP server in its own process. The model
// is one scripted OpenAI-compatible server (in this process) whose policy calls count_words on
// the task's text, then answers the number; the reward checks it. Each mode runs ROLLOUTS
// rollouts (groups of 8, CONCURRENCY at once); modes are interleaved over ROUNDS rounds.
// Prints one JSON line per run with the load average and the CPU count.
//   pnpm -F @shears/tools-mcp bench:rollouts   (BENCH_ROLLOUTS, BENCH_CONCURRENCY, BENCH_ROUNDS)
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  createConcurrencyLimiter,
  defineTool,
  type EnvItem,
  type EnvV1,
  runGroup,
  silentLogger,
  type ToolV1,
} from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { z } from 'zod';
import { closeMcpTools, createMcpTools } from '../src/index.js';

const ROLLOUTS = Number(process.env.BENCH_ROLLOUTS ?? 64);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const GROUP_SIZE = 8;
const MODES = (process.env.BENCH_MODES ?? 'native,stdio,stdio-pool,http,http-pool').split(',');
const SERVER = fileURLToPath(new URL('./count-words-server.mjs', import.meta.url));

const countWords = (text: string) => text.split(/\s+/).filter(Boolean).length;
const WORDS = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima'.split(' ');
interface WordsItem extends EnvItem {
  text: string;
}
const items: WordsItem[] = Array.from({ length: 32 }, (_, index) => ({
  id: `w${index}`,
  prompt: 'count',
  text: Array.from({ length: 20 + index * 3 }, (_, word) => WORDS[(index + word) % WORDS.length]).join(' '),
}));

const native = defineTool({
  name: 'count_words',
  description: 'Count the words of a text',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => String(countWords(text)),
});

function env(tools: ToolV1[]): EnvV1<WordsItem> {
  let next = 0;
  return {
    specificationVersion: 'v1',
    id: 'count-words-mcp',
    nextItem: async () => items[next++ % items.length]!,
    buildMessages: (item) => [{ role: 'user', content: `Count the words of: ${item.text}` }],
    tools: () => tools,
    budget: () => ({ maxTurns: 3 }),
    computeReward: async (item, rollout) => {
      const correct = rollout.finalResponse === String(countWords(item.text));
      return { score: correct ? 1 : 0 };
    },
  };
}

async function startHttpServer(): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, [SERVER, 'http'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the HTTP MCP server exited (${code})`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

async function toolsFor(mode: string, url: string): Promise<ToolV1[]> {
  const stdio = { transport: 'stdio' as const, command: process.execPath, args: [SERVER], prefix: '' };
  switch (mode) {
    case 'native':
      return [native];
    case 'stdio':
      return createMcpTools({ servers: { words: stdio } });
    case 'stdio-pool':
      return createMcpTools({ servers: { words: { ...stdio, pool: { size: 4 } } } });
    case 'http':
      return createMcpTools({ servers: { words: { transport: 'http', url, prefix: '' } } });
    case 'http-pool':
      return createMcpTools({ servers: { words: { transport: 'http', url, prefix: '', pool: true } } });
    default:
      throw new Error(`unknown mode ${mode} (native, stdio, stdio-pool, http, http-pool)`);
  }
}

const model = await createScriptedServer({
  record: false,
  policy: (request) => {
    const tool = request.messages.find((message) => message.role === 'tool');
    if (tool) return { content: String(tool.content) };
    const text = String(request.messages[0]?.content).replace('Count the words of: ', '');
    return { toolCalls: [{ name: 'count_words', arguments: { text } }] };
  },
});
const http = await startHttpServer();
const provider = createLocalSandboxProvider();
let failedRuns = 0;
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of MODES) {
      const tools = await toolsFor(mode, http.url);
      const limiter = createConcurrencyLimiter(CONCURRENCY);
      const server = createScriptedServerClient({ baseUrl: model.url, model: 'bench' });
      const rolloutEnv = env(tools);
      let scored = 0;
      let failed = 0;
      let firstFailure: string | undefined;
      const load = loadavg()[0];
      const started = performance.now();
      await Promise.all(
        Array.from({ length: Math.ceil(ROLLOUTS / GROUP_SIZE) }, async () => {
          const item = (await rolloutEnv.nextItem())!;
          await runGroup({
            env: rolloutEnv,
            item,
            server,
            sandboxes: provider,
            groupSize: GROUP_SIZE,
            limiter,
            retryBudget: 0,
            allEqualScores: 'keep',
            logger: silentLogger,
            onEvent(event) {
              if (event.type !== 'rollout_finished') return;
              if (event.outcome === 'scored' && event.reward === 1) scored++;
              else {
                failed++;
                firstFailure ??= `${event.outcome}: ${event.reason ?? ''}`;
              }
            },
          });
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      await closeMcpTools(tools);
      if (scored === 0) failedRuns++;
      console.log(
        JSON.stringify({
          bench: 'mcp-rollouts',
          round,
          mode,
          rollouts: scored + failed,
          scored,
          failed,
          concurrency: CONCURRENCY,
          seconds: Number(seconds.toFixed(3)),
          rollouts_per_s: Number(((scored + failed) / seconds).toFixed(2)),
          ...(firstFailure ? { first_failure: firstFailure.slice(0, 300) } : {}),
          load_1m_before: Number(load!.toFixed(2)),
          load_1m_after: Number(loadavg()[0]!.toFixed(2)),
          cpus: cpus().length,
        }),
      );
    }
  }
} finally {
  http.stop();
  await model.close();
  await provider.close();
}
// A run where nothing succeeded is a failed bench.
if (failedRuns > 0) process.exitCode = 1;
