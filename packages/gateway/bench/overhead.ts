// Benchmark of the agent gateway. Prints JSON lines:
//  - `overhead`: per-request latency p50/p95 and CPU per request, through the gateway versus
//    calling the same backend (the scripted OpenAI-compatible server) directly, non-streaming
//    and streaming, for each API the gateway speaks; modes are interleaved in rounds so that
//    machine load hits them alike. Also the gateway alone, in front of an in-process server
//    that answers at once (no backend HTTP), to separate its own cost from the phase-1 client's;
//    a bare pass-through proxy (bench/bare-proxy.ts), the floor of any second hop; and the
//    backend answering Responses and Messages itself (bench/same-api.ts), a second baseline.
//    Two layouts (`topology` in every record), their modes interleaved in the same rounds:
//    `one_process`, the client (fetch), the gateway and the backend in this one process, sharing
//    one event loop and heap; `three_processes`, as in real use, the client
//    (bench/overhead-client.ts) and the backend (bench/overhead-backend.ts) forked into their own
//    processes, the gateway in this one. BENCH_TOPOLOGY=one_process|three_processes keeps one.
//  - `session_memory`: heap per open session, empty and after a recorded 3-turn conversation.
//  - `concurrency`: many sessions, each a 3-turn streaming tool loop at once: requests/s,
//    rollouts/s, p95, heap per session, and what is left open after every session closed.
// Issue 15's target: at most 1 ms p50 added per request. Run: pnpm -F @shears/gateway bench
import { type ChildProcess, fork } from 'node:child_process';
import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import type { ChatResponse, ServerV1 } from '@shears/core';
import { createOpenAICompatibleServer } from '@shears/servers';
import { createGateway } from '../src/gateway.js';
import { phase1Backend } from '../test/backends.js';
import { startBareProxy } from './bare-proxy.js';
import { bodyFor, MESSAGES, REPLY, TOOLS, TURNS } from './overhead-bodies.js';
import { type ModeSpec, requestLoop, type SessionAddress } from './overhead-requests.js';
import { replyAnswer, sameApiRoutes } from './same-api.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
// Tool loops (8 requests each) every mode runs before any is measured. A gateway in an RL run
// serves thousands of requests, so the figure that matters is the warm one: V8 optimises a hot
// function only after many calls, and with 3 loops of warm-up (this bench until 2026-11-28) the
// measured requests still ran partly unoptimised code, which added about 0.5 ms p50 in three
// processes. The first COLD_LOOPS loops are kept and reported apart (`cold_p50_ms`).
const WARMUP_LOOPS = Number(process.env.BENCH_WARMUP ?? 50);
const COLD_LOOPS = 3;
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 5);
// BENCH_TOPOLOGY=one_process or three_processes runs one layout of the overhead bench; both by default.
const TOPOLOGIES: Topology[] =
  process.env.BENCH_TOPOLOGY === 'one_process' || process.env.BENCH_TOPOLOGY === 'three_processes'
    ? [process.env.BENCH_TOPOLOGY]
    : ['one_process', 'three_processes'];
// BENCH_STAGES=1: in the three-process topology, time the stages of each gateway request in the
// gateway's process (diagnostics channels of node:http and undici, and a wrapper around the
// phase-1 server's chat), printed as `overhead_stages` records. Off by default: the observers cost time.
const stages = process.env.BENCH_STAGES === '1' ? stageProbe() : undefined;
const gc = (globalThis as { gc?: () => void }).gc;

// Every record carries the load it was measured under: the load averages and the CPUs they share.
const emit = (record: Record<string, unknown>) =>
  console.log(
    JSON.stringify({
      ...record,
      loadavg: loadavg().map((value) => Number(value.toFixed(2))),
      cpus: availableParallelism(),
    }),
  );

function percentile(samples: number[], fraction: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] as number;
}

type Topology = 'one_process' | 'three_processes';

interface Mode {
  topology: Topology;
  spec: ModeSpec;
  /** Runs `loops` tool loops, pushing each request's time to `samples`; returns the CPU time it took (µs). */
  run: (loops: number) => Promise<number>;
  samples: number[];
  /** The samples of the first COLD_LOOPS warm-up loops: a gateway that has just started. */
  coldSamples?: number[];
  /** The samples of each measured round, in order. */
  rounds: number[][];
  cpuMicros: number;
  count: number;
  /** `three_processes` with BENCH_STAGES=1: the stage timestamps of each gateway request. */
  stageRows?: StageRow[];
  /** `three_processes`: CPU time (µs) per process role, summed over the batches. */
  processCpuMicros?: Record<string, number>;
}

interface Split {
  backendUrl: string;
  backendCpu(): Promise<number>;
  batch(batch: {
    spec: ModeSpec;
    bodies: string[];
    loops: number;
    directBaseUrl: string;
    sessions: SessionAddress[];
  }): Promise<{ samples: number[]; cpuMicros: number }>;
  close(): Promise<void>;
}

/** Timestamps (performance.now(), ms) of one gateway request, in the gateway's process. */
interface StageRow {
  /** Its headers parsed (`http.server.request.start`). */
  start: number;
  /** Its body read to the end. */
  body?: number;
  /** The gateway calls the phase-1 server's `chat` (body parsed, dialect, thread matched). */
  chat?: number;
  /** The phase-1 client hands the backend request to undici (`undici:request:create`). */
  send?: number;
  /** The backend's answer received in full (`undici:request:trailers`). */
  received?: number;
  /** `chat` resolved: the answer parsed into a ChatResponse. */
  chatDone?: number;
  /** The gateway calls `response.end` with its rendered answer. */
  end?: number;
}

type StageMark = 'chat' | 'chatDone';

function stageProbe() {
  let rows: StageRow[] | undefined;
  let current: StageRow | undefined;
  diagnostics.subscribe('http.server.request.start', (message) => {
    if (!rows) return;
    const { request, response } = message as { request: IncomingMessage; response: ServerResponse };
    const row: StageRow = { start: performance.now() };
    current = row;
    rows.push(row);
    request.once('end', () => {
      row.body = performance.now();
    });
    const end = response.end;
    response.end = function (this: ServerResponse, ...args: unknown[]) {
      row.end ??= performance.now();
      return (end as (...rest: unknown[]) => ServerResponse).apply(this, args);
    } as typeof response.end;
  });
  diagnostics.subscribe('undici:request:create', () => {
    if (rows && current) current.send ??= performance.now();
  });
  diagnostics.subscribe('undici:request:trailers', () => {
    if (rows && current) current.received ??= performance.now();
  });
  return {
    /** Records the gateway requests that start from now into `into`; `undefined` stops. */
    watch(into: StageRow[] | undefined) {
      rows = into;
      current = undefined;
    },
    mark(name: StageMark) {
      if (rows && current) current[name] ??= performance.now();
    },
  };
}

/** The median of each stage's duration (ms) over the requests that passed every stage. */
function stageMedians(rows: StageRow[]): Record<string, number> {
  const complete = rows.filter(
    (row): row is Required<StageRow> =>
      row.body !== undefined &&
      row.chat !== undefined &&
      row.send !== undefined &&
      row.received !== undefined &&
      row.chatDone !== undefined &&
      row.end !== undefined,
  );
  const median = (duration: (row: Required<StageRow>) => number) =>
    Number(percentile(complete.map(duration), 0.5).toFixed(3));
  return {
    requests: complete.length,
    read_body_ms: median((row) => row.body - row.start),
    gateway_before_backend_ms: median((row) => row.chat - row.body),
    client_before_send_ms: median((row) => row.send - row.chat),
    backend_exchange_ms: median((row) => row.received - row.send),
    client_after_reply_ms: median((row) => row.chatDone - row.received),
    gateway_after_backend_ms: median((row) => row.end - row.chatDone),
    total_to_end_ms: median((row) => row.end - row.start),
  };
}

/** Forks the backend and client processes of topology `three_processes` (same Node flags as this one). */
async function startSplit(): Promise<Split> {
  const pending = new Map<number, (message: Record<string, unknown>) => void>();
  let nextId = 0;
  const listen = (child: ChildProcess, name: string) => {
    child.on('message', (message: Record<string, unknown>) => {
      const resolve = pending.get(message.id as number);
      if (!resolve) return;
      pending.delete(message.id as number);
      resolve(message);
    });
    child.on('exit', (code, signal) => {
      if (code !== 0 && !closing) {
        console.error(`bench: the ${name} process exited (code ${code}, signal ${signal})`);
        process.exit(1);
      }
    });
  };
  const ask = (child: ChildProcess, message: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      child.send({ ...message, id });
    });
  let closing = false;
  const ready = (child: ChildProcess) =>
    new Promise<Record<string, unknown>>((resolve) => child.once('message', resolve));
  // `.ts` under tsx, `.js` when the bench is bundled (e.g. with esbuild, the three files as entry points).
  const extension = import.meta.url.endsWith('.js') ? 'js' : 'ts';
  const backend = fork(new URL(`./overhead-backend.${extension}`, import.meta.url), [JSON.stringify(REPLY)]);
  const backendReady = ready(backend);
  const client = fork(new URL(`./overhead-client.${extension}`, import.meta.url));
  const clientReady = ready(client);
  const { url } = await backendReady;
  await clientReady;
  listen(backend, 'backend');
  listen(client, 'client');
  return {
    backendUrl: url as string,
    backendCpu: async () => (await ask(backend, { type: 'cpu' })).cpuMicros as number,
    batch: async (batch) => {
      const answer = await ask(client, { type: 'batch', ...batch });
      if (answer.type !== 'done') throw new Error(`bench client: ${answer.error}`);
      return { samples: answer.samples as number[], cpuMicros: answer.cpuMicros as number };
    },
    close: async () => {
      closing = true;
      const exited = [backend, client].map((child) => new Promise((resolve) => child.once('exit', resolve)));
      backend.send({ type: 'exit' });
      client.send({ type: 'exit' });
      await Promise.all(exited);
    },
  };
}

async function overhead(): Promise<void> {
  const backend = await phase1Backend({
    policy: () => REPLY,
    record: false,
    routes: sameApiRoutes(replyAnswer(REPLY)),
  });
  const gateway = await createGateway({ server: backend.server });
  // The gateway in front of a server that answers at once: its own cost, no backend HTTP.
  const instant: ServerV1 = {
    specificationVersion: 'v1',
    provider: 'instant',
    model: 'instant',
    chat: async (): Promise<ChatResponse> => replyAnswer(REPLY),
  };
  const instantGateway = await createGateway({ server: instant });
  const closers: Array<() => Promise<void>> = [
    () => backend.close(),
    () => gateway.close(),
    () => instantGateway.close(),
  ];

  // Bodies are built ahead, so that only the request is timed.
  const bodies = new Map<string, string[]>();
  for (const api of ['chat', 'responses', 'messages'] as const)
    for (const stream of [false, true])
      bodies.set(
        `${api}.${stream}`,
        Array.from({ length: TURNS }, (_, turn) => bodyFor(api, turn, stream)),
      );
  const specs: ModeSpec[] = [];
  for (const stream of [false, true]) {
    const kind = stream ? 'stream' : 'json';
    // The backend called directly in each API: chat (the baseline of every API, as before), and
    // Responses and Messages as a server that speaks them answers (bench/same-api.ts).
    for (const api of ['chat', 'responses', 'messages'] as const)
      specs.push({ name: `direct.${api}.${kind}`, api, stream, via: 'direct' });
    for (const api of ['chat', 'responses', 'messages'] as const)
      specs.push({ name: `gateway.${api}.${kind}`, api, stream, via: 'gateway' });
    specs.push({ name: `gateway.chat_instant_backend.${kind}`, api: 'chat', stream, via: 'instant' });
    specs.push({ name: `bare_proxy.chat.${kind}`, api: 'chat', stream, via: 'proxy' });
  }
  // BENCH_MODES=name,name keeps only those modes (e.g. to look at one API).
  const only = process.env.BENCH_MODES?.split(',');
  const kept = only ? specs.filter((spec) => only.includes(spec.name)) : specs;
  const modes: Mode[] = [];
  const proxy = await startBareProxy(backend.scripted.url);
  closers.push(() => proxy.close());
  // Topology `one_process`: this process is the client (fetch), the gateway and the backend.
  if (TOPOLOGIES.includes('one_process'))
    for (const spec of kept) {
      const mode: Mode = {
        topology: 'one_process',
        spec,
        samples: [],
        rounds: [],
        cpuMicros: 0,
        count: 0,
        run: async (loops) => {
          const cpu = process.cpuUsage();
          for (let loop = 0; loop < loops; loop++) {
            const list = bodies.get(`${spec.api}.${spec.stream}`) ?? [];
            if (spec.via === 'direct') {
              await requestLoop(spec, list, { directBaseUrl: backend.scripted.url }, mode.samples);
              continue;
            }
            if (spec.via === 'proxy') {
              await requestLoop(spec, list, { session: proxy.address }, mode.samples);
              continue;
            }
            // Each gateway loop runs in a fresh session (one rollout).
            const session = (spec.via === 'instant' ? instantGateway : gateway).openSession({
              rolloutId: 'bench',
            });
            await requestLoop(spec, list, { session }, mode.samples);
            await session.close();
          }
          const used = process.cpuUsage(cpu);
          return used.user + used.system;
        },
      };
      modes.push(mode);
    }
  // Topology `three_processes`: the harness (client), this process (the gateway) and the
  // inference server (backend) are separate processes, as in real use. The client process sends
  // the same requests, to the backend directly and through this process's gateway; CPU per
  // request is the sum of the three processes' CPU time over each batch.
  const split = TOPOLOGIES.includes('three_processes') ? await startSplit() : undefined;
  if (split) {
    const phase1 = createOpenAICompatibleServer({
      baseUrl: split.backendUrl,
      model: 'scripted-model',
      apiKey: 'backend-key',
      retry: { maxRetries: 0 },
    });
    const splitGateway = await createGateway({
      server: stages
        ? {
            ...phase1,
            chat: async (request) => {
              stages.mark('chat');
              try {
                return await phase1.chat(request);
              } finally {
                stages.mark('chatDone');
              }
            },
          }
        : phase1,
    });
    closers.push(() => splitGateway.close());
    const splitProxy = await startBareProxy(split.backendUrl);
    closers.push(() => splitProxy.close());
    for (const spec of kept) {
      const mode: Mode = {
        topology: 'three_processes',
        spec,
        samples: [],
        rounds: [],
        cpuMicros: 0,
        count: 0,
        processCpuMicros: { client: 0, gateway_process: 0, backend: 0 },
        ...(stages && spec.via === 'gateway' ? { stageRows: [] } : {}),
        run: async (loops) => {
          const before = { gateway: process.cpuUsage(), backend: await split.backendCpu() };
          const stageRows: StageRow[] = [];
          if (spec.via === 'gateway') stages?.watch(stageRows);
          const sessions =
            spec.via === 'direct' || spec.via === 'proxy'
              ? []
              : Array.from({ length: loops }, () =>
                  (spec.via === 'instant' ? instantGateway : splitGateway).openSession({
                    rolloutId: 'bench',
                  }),
                );
          const result = await split.batch({
            spec,
            bodies: bodies.get(`${spec.api}.${spec.stream}`) ?? [],
            loops,
            directBaseUrl: split.backendUrl,
            sessions:
              spec.via === 'proxy'
                ? Array.from({ length: loops }, () => splitProxy.address)
                : sessions.map(({ baseUrl, openaiBaseUrl, apiKey }) => ({
                    baseUrl,
                    openaiBaseUrl,
                    apiKey,
                  })),
          });
          stages?.watch(undefined);
          mode.stageRows?.push(...stageRows);
          for (const session of sessions) await session.close();
          const gatewayUsed = process.cpuUsage(before.gateway);
          const gatewayMicros = gatewayUsed.user + gatewayUsed.system;
          const backendMicros = (await split.backendCpu()) - before.backend;
          mode.samples.push(...result.samples);
          const perProcess = mode.processCpuMicros as Record<string, number>;
          perProcess.client = (perProcess.client ?? 0) + result.cpuMicros;
          perProcess.gateway_process = (perProcess.gateway_process ?? 0) + gatewayMicros;
          perProcess.backend = (perProcess.backend ?? 0) + backendMicros;
          return result.cpuMicros + gatewayMicros + backendMicros;
        },
      };
      modes.push(mode);
    }
    closers.push(() => split.close());
  }
  // Modes (both topologies) interleave within each round, so that machine load hits them alike.
  for (let round = 0; round < WARMUP_LOOPS; round++) {
    for (const mode of modes) await mode.run(1);
    if (round === COLD_LOOPS - 1) for (const mode of modes) mode.coldSamples = [...mode.samples];
  }
  for (const mode of modes) {
    mode.samples.length = 0;
    if (mode.stageRows) mode.stageRows.length = 0;
    if (mode.processCpuMicros)
      for (const role of Object.keys(mode.processCpuMicros)) mode.processCpuMicros[role] = 0;
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of modes) {
      const first = mode.samples.length;
      mode.cpuMicros += await mode.run(PER_ROUND);
      mode.count += PER_ROUND * TURNS;
      mode.rounds.push(mode.samples.slice(first));
    }
  }
  const ms = (micros: number, count: number) => Number((micros / count / 1000).toFixed(3));
  for (const topology of TOPOLOGIES) {
    const summary = new Map<
      string,
      { p50: number; p95: number; cpuMs: number; rounds: number[][]; coldP50?: number }
    >();
    // The added p50 of each round (this mode's p50 minus the baseline's, in the same round), then
    // their median: less moved by load that changes between rounds than the difference of the
    // pooled p50s.
    const byRound = (through: { rounds: number[][] }, baseline: { rounds: number[][] }) =>
      Number(
        percentile(
          through.rounds.map(
            (samples, round) => percentile(samples, 0.5) - percentile(baseline.rounds[round] ?? samples, 0.5),
          ),
          0.5,
        ).toFixed(3),
      );
    for (const mode of modes.filter((candidate) => candidate.topology === topology)) {
      const figures = {
        p50: Number(percentile(mode.samples, 0.5).toFixed(3)),
        p95: Number(percentile(mode.samples, 0.95).toFixed(3)),
        cpuMs: ms(mode.cpuMicros, mode.count),
        rounds: mode.rounds,
        coldP50: mode.coldSamples ? Number(percentile(mode.coldSamples, 0.5).toFixed(3)) : undefined,
      };
      summary.set(mode.spec.name, figures);
      emit({
        bench: 'overhead',
        topology,
        mode: mode.spec.name,
        requests: mode.count,
        warmup_requests: WARMUP_LOOPS * TURNS,
        p50_ms: figures.p50,
        p95_ms: figures.p95,
        cold_p50_ms: figures.coldP50,
        cpu_ms_per_request: figures.cpuMs,
        ...(mode.processCpuMicros
          ? Object.fromEntries(
              Object.entries(mode.processCpuMicros).map(([role, micros]) => [
                `cpu_ms_per_request_${role}`,
                ms(micros, mode.count),
              ]),
            )
          : {}),
      });
      if (mode.stageRows)
        emit({ bench: 'overhead_stages', topology, mode: mode.spec.name, ...stageMedians(mode.stageRows) });
    }
    for (const kind of ['json', 'stream']) {
      const direct = summary.get(`direct.chat.${kind}`);
      if (!direct) continue;
      const added = (
        bench: string,
        api: string,
        through: NonNullable<typeof direct>,
        baselineName = `direct.chat.${kind}`,
        baseline = direct,
      ) =>
        emit({
          bench,
          topology,
          api,
          kind,
          baseline: baselineName,
          added_p50_ms: Number((through.p50 - baseline.p50).toFixed(3)),
          added_p95_ms: Number((through.p95 - baseline.p95).toFixed(3)),
          added_p50_ms_median_of_rounds: byRound(through, baseline),
          added_cpu_ms_per_request: Number((through.cpuMs - baseline.cpuMs).toFixed(3)),
          // The same, over the first COLD_LOOPS tool loops after the start (not warm).
          added_cold_p50_ms:
            through.coldP50 !== undefined && baseline.coldP50 !== undefined
              ? Number((through.coldP50 - baseline.coldP50).toFixed(3))
              : undefined,
          target_added_p50_ms: 1,
        });
      for (const api of ['chat', 'responses', 'messages']) {
        const through = summary.get(`gateway.${api}.${kind}`);
        if (!through) continue;
        // Against the chat baseline: what a harness speaking this API pays over a chat harness
        // calling the backend directly (the API's own cost included).
        added('overhead_added', api, through);
        // Against the backend answering this same API itself: the gateway's hop alone.
        const sameApi = api === 'chat' ? undefined : summary.get(`direct.${api}.${kind}`);
        if (sameApi) added('overhead_added', api, through, `direct.${api}.${kind}`, sameApi);
      }
      // The gateway's own handling: in front of an in-process server that answers at once,
      // against the scripted backend answering the same request directly (both one HTTP round trip).
      const alone = summary.get(`gateway.chat_instant_backend.${kind}`);
      if (alone) added('overhead_gateway_alone', 'chat', alone);
      // The floor for any proxy on this machine: a second HTTP hop and nothing else.
      const bare = summary.get(`bare_proxy.chat.${kind}`);
      if (bare) added('overhead_bare_proxy', 'chat', bare);
    }
  }
  for (const close of closers.reverse()) await close();
}

function heapAfterGc(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

async function loop(baseUrl: string, key: string, turns: number, latencies: number[]): Promise<void> {
  const messages: Array<Record<string, unknown>> = [...MESSAGES];
  for (let turn = 0; turn < turns; turn++) {
    const start = performance.now();
    const response = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'm', messages, tools: TOOLS, stream: true }),
    });
    const text = await response.text();
    latencies.push(performance.now() - start);
    if (!text.includes('[DONE]')) throw new Error(`turn ${turn}: no [DONE] in ${text.slice(0, 200)}`);
    messages.push(
      {
        role: 'assistant',
        content: REPLY.content,
        tool_calls: [
          {
            id: `call_${turn}`,
            type: 'function',
            function: { name: 'run_shell_command', arguments: '{"command":"pytest"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: `call_${turn}`, content: `${'collected 12 items ... F.\n'.repeat(20)}` },
    );
  }
}

async function memoryAndConcurrency(): Promise<void> {
  const backend = await phase1Backend({
    policy: () => REPLY,
    record: false,
    routes: sameApiRoutes(replyAnswer(REPLY)),
  });
  const gateway = await createGateway({ server: backend.server });
  const count = 1000;
  const before = heapAfterGc();
  const sessions = Array.from({ length: count }, (_, index) =>
    gateway.openSession({ rolloutId: `m${index}` }),
  );
  const open = heapAfterGc();
  emit({
    bench: 'session_memory',
    topology: 'one_process',
    state: 'open_empty',
    sessions: count,
    bytes_per_session: Math.round((open - before) / count),
    gc: Boolean(gc),
  });
  const recorded = sessions.slice(0, 100);
  for (const session of recorded) await loop(session.openaiBaseUrl, session.apiKey, 3, []);
  const after = heapAfterGc();
  emit({
    bench: 'session_memory',
    topology: 'one_process',
    state: 'after_3_turn_loop',
    sessions: recorded.length,
    bytes_per_session: Math.round((after - open) / recorded.length),
    gc: Boolean(gc),
  });
  await Promise.all(sessions.map((session) => session.close()));

  for (const concurrent of [64, 256]) {
    const baseline = heapAfterGc();
    const group = Array.from({ length: concurrent }, (_, index) =>
      gateway.openSession({ rolloutId: `c${concurrent}-${index}` }),
    );
    const latencies: number[] = [];
    const cpu = process.cpuUsage();
    const start = performance.now();
    await Promise.all(group.map((session) => loop(session.openaiBaseUrl, session.apiKey, 3, latencies)));
    const seconds = (performance.now() - start) / 1000;
    const used = process.cpuUsage(cpu);
    const peak = heapAfterGc();
    const records = await Promise.all(group.map((session) => session.close()));
    const failed = records
      .flatMap((record) => record.requests)
      .filter((request) => request.status !== 'ok').length;
    emit({
      bench: 'concurrency',
      topology: 'one_process',
      sessions: concurrent,
      turns_per_session: 3,
      seconds: Number(seconds.toFixed(3)),
      requests_per_second: Number(((concurrent * 3) / seconds).toFixed(1)),
      rollouts_per_second: Number((concurrent / seconds).toFixed(1)),
      p50_ms: Number(percentile(latencies, 0.5).toFixed(2)),
      p95_ms: Number(percentile(latencies, 0.95).toFixed(2)),
      cpu_ms_per_request: Number(((used.user + used.system) / 1000 / (concurrent * 3)).toFixed(3)),
      heap_bytes_per_session: Math.round((peak - baseline) / concurrent),
      failed_requests: failed,
      open_sessions_after_close: gateway.openSessions,
    });
  }
  await gateway.close();
  await backend.close();
  // Give client sockets a moment to see their servers go, then count what is still open.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const handles = (
    process as unknown as { _getActiveHandles(): Array<{ constructor: { name: string } }> }
  )._getActiveHandles();
  const kinds: Record<string, number> = {};
  for (const handle of handles) kinds[handle.constructor.name] = (kinds[handle.constructor.name] ?? 0) + 1;
  emit({ bench: 'leaks', topology: 'one_process', active_handles_after_close: handles.length, kinds });
}

// BENCH_ONLY=overhead or BENCH_ONLY=concurrency runs one half.
if (process.env.BENCH_ONLY !== 'concurrency') await overhead();
if (process.env.BENCH_ONLY !== 'overhead') await memoryAndConcurrency();
