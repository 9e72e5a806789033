// Bench: the agent loop's own overhead and memory. (1) Turns per second against the scripted
// server at zero latency with a trivial tool — pure framework overhead, with the raw HTTP chat
// rate alongside for reference. (2) Memory per rollout with 256 rollouts in flight at once
// through the group runner, each parked inside a tool call. Prints one JSON line per figure.
// Run: pnpm -F @shears/core bench   (add --expose-gc through NODE_OPTIONS for steadier memory)
import { loadavg } from 'node:os';
import { z } from 'zod';
import { runAgent } from '../src/agent-loop.js';
import { createConcurrencyLimiter } from '../src/concurrency-limiter.js';
import type { EnvV1 } from '../src/contracts/env.js';
import type { ChatClient, ChatResponse } from '../src/contracts/server.js';
import { defineTool } from '../src/contracts/tool.js';
import { runGroup } from '../src/group-runner.js';
import { createScriptedServer, type ScriptedMessageReply } from '../src/test/scripted-server.js';
import { createScriptedServerClient } from '../src/test/scripted-server-client.js';
import { createTempSandboxProvider } from '../src/test/temp-sandbox-provider.js';

const TURNS_PER_ROLLOUT = Number(process.env.BENCH_TURNS ?? 10);
const ROLLOUTS = Number(process.env.BENCH_ROLLOUTS ?? 100);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 256);

const gc = (globalThis as { gc?: () => void }).gc;
const collect = async () => {
  for (let index = 0; index < 3; index++) {
    gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
};
const print = (record: Record<string, unknown>) => console.log(JSON.stringify(record));

const trivial = defineTool({
  name: 'noop',
  description: 'Returns ok',
  inputSchema: z.object({ n: z.number().int() }),
  execute: async () => 'ok',
});

/** Calls `noop` until the rollout has had TURNS_PER_ROLLOUT turns, then answers. */
const policy = (request: {
  messages: Array<{ role: string }>;
}): ScriptedMessageReply & { usage: { prompt_tokens: number; completion_tokens: number } } => {
  const assistantTurns = request.messages.filter((message) => message.role === 'assistant').length;
  return assistantTurns + 1 >= TURNS_PER_ROLLOUT
    ? { content: 'done', usage: { prompt_tokens: 50, completion_tokens: 1 } }
    : {
        toolCalls: [{ name: 'noop', arguments: { n: assistantTurns } }],
        usage: { prompt_tokens: 50, completion_tokens: 8 },
      };
};

async function turnsPerSecond() {
  const server = await createScriptedServer({ policy, record: false });
  const client = createScriptedServerClient({ baseUrl: server.url, model: 'bench' });
  const provider = createTempSandboxProvider();
  const sandbox = await provider.acquire();
  const prompt = [{ role: 'user', content: 'loop' }];
  try {
    // Warm-up (JIT, sockets).
    for (let index = 0; index < 5; index++)
      await runAgent({ server: client, messages: prompt, tools: [trivial], sandbox });

    // Raw HTTP chat rate with the same message sizes, for reference.
    const rawStarted = performance.now();
    let rawCalls = 0;
    for (let rollout = 0; rollout < ROLLOUTS; rollout++) {
      const messages: Array<Record<string, unknown>> = [...prompt];
      for (let turn = 0; turn < TURNS_PER_ROLLOUT; turn++) {
        const response = await client.chat({ messages: messages as never, n: 1 });
        rawCalls++;
        const message = response.choices[0]?.message;
        if (!message?.tool_calls) break;
        messages.push(message, { role: 'tool', tool_call_id: message.tool_calls[0]?.id, content: 'ok' });
      }
    }
    const rawSeconds = (performance.now() - rawStarted) / 1000;

    let turns = 0;
    const started = performance.now();
    for (let rollout = 0; rollout < ROLLOUTS; rollout++) {
      const result = await runAgent({ server: client, messages: prompt, tools: [trivial], sandbox });
      if (result.stopReason !== 'answer') throw new Error(`unexpected stop: ${result.stopReason}`);
      turns += result.turnsUsed;
    }
    const seconds = (performance.now() - started) / 1000;
    const perTurnMs = (seconds * 1000) / turns;
    print({
      bench: 'agent-loop.turns_per_second',
      mode: 'scripted-http',
      concurrency: 1,
      rollouts: ROLLOUTS,
      turnsPerRollout: TURNS_PER_ROLLOUT,
      turns,
      seconds: Number(seconds.toFixed(3)),
      turnsPerSecond: Number((turns / seconds).toFixed(1)),
      msPerTurn: Number(perTurnMs.toFixed(3)),
      rawHttpChatsPerSecond: Number((rawCalls / rawSeconds).toFixed(1)),
      loadAverage1m: Number(loadavg()[0]?.toFixed(2)),
    });

    // The loop alone: the same policy answered in-process (no HTTP), isolating framework cost.
    let callCounter = 0;
    const inProcess: ChatClient = {
      chat: async (request): Promise<ChatResponse> => {
        const reply = policy(request);
        const toolCalls = reply.toolCalls ?? [];
        const id = `call_${callCounter++}`;
        return {
          choices: [
            {
              index: 0,
              finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
              message: {
                role: 'assistant' as const,
                content: reply.content ?? null,
                ...(toolCalls.length > 0
                  ? {
                      tool_calls: toolCalls.map((call) => ({
                        id,
                        type: 'function' as const,
                        function: { name: call.name, arguments: JSON.stringify(call.arguments) },
                      })),
                    }
                  : {}),
              },
            },
          ],
          usage: {
            promptTokens: reply.usage.prompt_tokens,
            completionTokens: reply.usage.completion_tokens,
            totalTokens: reply.usage.prompt_tokens + reply.usage.completion_tokens,
          },
        };
      },
    };
    let loopTurns = 0;
    const loopStarted = performance.now();
    for (let rollout = 0; rollout < ROLLOUTS * 5; rollout++) {
      const result = await runAgent({ server: inProcess, messages: prompt, tools: [trivial], sandbox });
      loopTurns += result.turnsUsed;
    }
    const loopSeconds = (performance.now() - loopStarted) / 1000;
    print({
      bench: 'agent-loop.turns_per_second',
      mode: 'in-process-client',
      concurrency: 1,
      turns: loopTurns,
      seconds: Number(loopSeconds.toFixed(3)),
      turnsPerSecond: Number((loopTurns / loopSeconds).toFixed(1)),
      msPerTurn: Number(((loopSeconds * 1000) / loopTurns).toFixed(4)),
    });

    // The same with 16 rollouts in flight (one process, server included).
    let concurrentTurns = 0;
    const concurrentStarted = performance.now();
    const limiter = createConcurrencyLimiter(16);
    await Promise.all(
      Array.from({ length: ROLLOUTS }, () =>
        limiter.run(async () => {
          const result = await runAgent({ server: client, messages: prompt, tools: [trivial], sandbox });
          concurrentTurns += result.turnsUsed;
        }),
      ),
    );
    const concurrentSeconds = (performance.now() - concurrentStarted) / 1000;
    print({
      bench: 'agent-loop.turns_per_second',
      mode: 'scripted-http',
      concurrency: 16,
      rollouts: ROLLOUTS,
      turns: concurrentTurns,
      seconds: Number(concurrentSeconds.toFixed(3)),
      turnsPerSecond: Number((concurrentTurns / concurrentSeconds).toFixed(1)),
    });
  } finally {
    await sandbox.dispose();
    await provider.close();
    await server.close();
  }
}

async function memoryPerRollout() {
  const server = await createScriptedServer({
    record: false,
    policy: (request) =>
      request.messages.at(-1)?.role === 'tool'
        ? { content: 'done' }
        : { toolCalls: [{ name: 'park', arguments: { n: 1 } }], reasoning: 'thinking '.repeat(20) },
  });
  const client = createScriptedServerClient({ baseUrl: server.url, model: 'bench' });
  const provider = createTempSandboxProvider();
  let parked = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let allParked!: () => void;
  const everyoneParked = new Promise<void>((resolve) => {
    allParked = resolve;
  });
  const park = defineTool({
    name: 'park',
    description: 'Waits until released',
    inputSchema: z.object({ n: z.number() }),
    async execute() {
      parked++;
      if (parked === CONCURRENT) allParked();
      await gate;
      return 'released';
    },
  });
  const env: EnvV1 = {
    specificationVersion: 'v1',
    id: 'bench',
    nextItem: async () => ({ id: 'bench', prompt: 'park once, then answer' }),
    buildMessages: (item) => [
      { role: 'system', content: 'You are a benchmark agent. '.repeat(10) },
      { role: 'user', content: item.prompt },
    ],
    tools: () => [park],
    computeReward: async (_item, rollout) => ({ score: rollout.finishedNaturally ? 1 : 0 }),
  };
  const groupSize = 8;
  const groups = Math.ceil(CONCURRENT / groupSize);
  const item = { id: 'bench', prompt: 'park once, then answer' };
  // Warm-up group so code paths and sockets exist before the baseline.
  {
    const warm = createScriptedServer({ record: false, policy: () => ({ content: 'done' }) });
    const warmServer = await warm;
    await runGroup({
      env,
      item,
      server: createScriptedServerClient({ baseUrl: warmServer.url, model: 'bench' }),
      sandboxes: provider,
      groupSize: 2,
    });
    await warmServer.close();
  }
  await collect();
  const before = process.memoryUsage();
  const limiter = createConcurrencyLimiter(CONCURRENT);
  const running = Promise.all(
    Array.from({ length: groups }, () =>
      runGroup({ env, item, server: client, sandboxes: provider, groupSize, limiter }),
    ),
  );
  await everyoneParked;
  await collect();
  const during = process.memoryUsage();
  const live = provider.liveCount;
  release();
  const records = await running;
  const scored = records
    .flatMap((record) => record.rollouts)
    .filter((rollout) => rollout.outcome === 'scored').length;
  await provider.close();
  await server.close();
  print({
    bench: 'agent-loop.memory_per_rollout',
    concurrentRollouts: parked,
    liveSandboxes: live,
    scored,
    gcExposed: gc !== undefined,
    heapUsedBytesPerRollout: Math.round((during.heapUsed - before.heapUsed) / parked),
    rssBytesPerRollout: Math.round((during.rss - before.rss) / parked),
    heapUsedMbTotal: Number(((during.heapUsed - before.heapUsed) / 1024 / 1024).toFixed(2)),
  });
}

await turnsPerSecond();
await memoryPerRollout();
