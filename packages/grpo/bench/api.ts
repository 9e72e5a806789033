// Benchmark of the trajectory API under the Atropos reference load (atropos-api.md §9):
// 4 concurrent clients POST groups of 16 sequences × 4,096 tokens gzipped to /scored_data,
// a trainer pulls /batch at batch_size 256, durability on (synchronous=FULL). The server runs
// in a child process; traffic goes to 127.0.0.1 only. Prints one JSON line per figure and a
// last `summary` line with the four headline figures (ingest groups/s, /batch p50, server
// CPU per group, resident memory).
//   pnpm -F @shears/grpo bench [--groups 1000] [--payload python|js] [--decode-workers N]
//     [--synchronous full|normal] [--hog N] [--clients 4] [--ingest-only] [--server src/server-main.ts]
//     [--url http://127.0.0.1:8000 --pid PID]   (a server already running, e.g. Atropos run-api, measured the same way)
// --payload: `python` spells floats as Python's json.dumps does (`1.0`, what BaseEnv sends);
//   `js` as JSON.stringify does (`1`), which the server must rewrite to floats.
// --hog N: N busy-looping processes run beside the server while it is measured (CPU contention).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';

const packageDirectory = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    groups: { type: 'string' },
    payload: { type: 'string', default: 'python' },
    'decode-workers': { type: 'string' },
    synchronous: { type: 'string', default: 'full' },
    hog: { type: 'string', default: '0' },
    server: { type: 'string', default: 'src/server-main.ts' },
    clients: { type: 'string', default: '4' },
    'ingest-only': { type: 'boolean', default: false },
    url: { type: 'string' },
    pid: { type: 'string' },
  },
});
const totalGroups = Number(options.groups ?? positionals[0] ?? 1000);
if (!Number.isInteger(totalGroups) || totalGroups < 1) throw new Error(`--groups must be a positive integer`);
if (options.payload !== 'python' && options.payload !== 'js')
  throw new Error(`--payload must be "python" or "js", got "${options.payload}"`);
if (options.synchronous !== 'full' && options.synchronous !== 'normal')
  throw new Error(`--synchronous must be "full" or "normal", got "${options.synchronous}"`);
const hogs = Number(options.hog);
const clients = Number(options.clients);
if (!Number.isInteger(clients) || clients < 1) throw new Error('--clients must be a positive integer');
const sequences = 16;
const tokensPerSequence = 4096;
const batchSize = 256;
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

function emit(record: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: 'grpo/api', ...record })}\n`);
}

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function call(
  url: string,
  path: string,
  options: { method?: string; body?: Buffer; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Buffer; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'accept-encoding': 'gzip', ...(options.headers ?? {}) };
    if (options.body) headers['content-length'] = String(options.body.length);
    const req = httpRequest(
      new URL(path, url),
      { method: options.method ?? 'GET', headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : Number.NaN;
}

/** User + system CPU time of a process in milliseconds (clock ticks are 10 ms on Linux). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Python's repr of a float (what json.dumps writes): `1.0`, `1e-05`, `1.5e+16`. */
function pythonFloat(value: number): string {
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const [mantissa = '', exponentText = '0'] = value.toExponential().split('e');
  const exponent = Number(exponentText);
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = value < 0 ? '-' : '';
  if (exponent < -4 || exponent >= 16) {
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${body}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  return `${sign}${whole}.${digits.slice(exponent + 1) || '0'}`;
}

function makeGroup(seed: number): Buffer {
  let state = seed + 1;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const tokens: number[][] = [];
  const masks: number[][] = [];
  const logprobs: number[][] = [];
  for (let index = 0; index < sequences; index++) {
    const row = Array.from({ length: tokensPerSequence }, () => Math.floor(next() * 150_000));
    tokens.push(row);
    masks.push(row.map((token, position) => (position < 512 ? -100 : token)));
    logprobs.push(row.map((_, position) => (position < 512 ? 1.0 : -next() * 4)));
  }
  const scores = Array.from({ length: sequences }, () => next());
  const floats = (list: number[]) =>
    options.payload === 'python' ? `[${list.map(pythonFloat).join(',')}]` : JSON.stringify(list);
  const text = `{"tokens":${JSON.stringify(tokens)},"masks":${JSON.stringify(masks)},"scores":${floats(scores)},"inference_logprobs":[${logprobs.map(floats).join(',')}],"env_id":null}`;
  return gzipSync(text);
}

async function main(): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'shears-api-bench-'));
  const hogProcesses: ChildProcess[] = [];
  const settings = {
    groups: totalGroups,
    payload: options.payload,
    decodeWorkers: options['decode-workers'] ?? 'default',
    synchronous: options.synchronous,
    hogs,
    clients,
    server: options.server,
  };
  const port = await freePort();
  const external = options.url !== undefined;
  if (external && options.pid === undefined)
    throw new Error('--url needs --pid (the server process, for its CPU and memory)');
  const url = options.url ?? `http://127.0.0.1:${port}`;
  const server: ChildProcess = external
    ? spawn(
        process.execPath,
        ['-e', 'console.log(JSON.stringify({event:"listening"})); setInterval(() => {}, 1e9)'],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      )
    : spawn(process.execPath, ['--import', 'tsx', '--conditions=@shears/source', options.server], {
        cwd: packageDirectory,
        env: {
          ...process.env,
          SHEARS_API_PORT: String(port),
          SHEARS_API_DB: join(directory, 'api.sqlite'),
          SHEARS_API_SYNCHRONOUS: options.synchronous,
          SHEARS_API_MAX_QUEUED_GROUPS: '100000',
          ...(options['decode-workers'] === undefined
            ? {}
            : { SHEARS_API_DECODE_WORKERS: options['decode-workers'] }),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
  try {
    await new Promise<void>((resolve, reject) => {
      server.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('"listening"') && resolve());
      server.once('exit', (code) => reject(new Error(`server exited (${code})`)));
    });
    const pid = external ? Number(options.pid) : (server.pid as number);
    // Built before the first request: uvicorn drops a keep-alive connection idle for 5 s.
    const bodies = Array.from({ length: 8 }, (_, index) => makeGroup(index));
    const register = {
      wandb_group: 'bench',
      wandb_project: 'bench',
      batch_size: batchSize,
      max_token_len: 8192,
      checkpoint_dir: 'c',
      save_checkpoint_interval: 100,
      starting_step: 0,
      num_steps: 100000,
    };
    await call(url, '/register', {
      method: 'POST',
      body: Buffer.from(JSON.stringify(register)),
      headers: { 'content-type': 'application/json' },
    });
    await call(url, '/batch');
    // Busy loops beside the server: the CPU contention the issue saw on a shared machine.
    for (let index = 0; index < hogs; index++)
      hogProcesses.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
    const rawBytes = gunzipSync(bodies[0] as Buffer).length;
    emit({
      figure: 'payload',
      ...settings,
      sequences,
      tokensPerSequence,
      jsonBytes: rawBytes,
      gzipBytes: (bodies[0] as Buffer).length,
    });
    const rssStart = rssOf(pid);
    let peakRss = rssStart;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, rssOf(pid));
    }, 100);

    // Phase 1: ingest.
    const latencies: number[] = [];
    let sent = 0;
    const post = async () => {
      while (sent < totalGroups) {
        const index = sent++;
        const started = performance.now();
        const response = await call(url, '/scored_data', {
          method: 'POST',
          body: bodies[index % bodies.length],
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        });
        if (response.status !== 200)
          throw new Error(`POST /scored_data answered ${response.status}: ${response.body.toString()}`);
        latencies.push(performance.now() - started);
      }
    };
    const ingestCpu = cpuMsOf(pid);
    const ingestStart = performance.now();
    await Promise.all(Array.from({ length: clients }, post));
    const ingestSeconds = (performance.now() - ingestStart) / 1000;
    const ingestCpuMsPerGroup = (cpuMsOf(pid) - ingestCpu) / totalGroups;
    const rssAfterIngest = rssOf(pid);
    emit({
      figure: 'ingest',
      groups: totalGroups,
      clients,
      groupsPerSecond: Number((totalGroups / ingestSeconds).toFixed(1)),
      tokensPerSecond: Math.round((totalGroups * sequences * tokensPerSequence) / ingestSeconds),
      postP50Ms: Number(percentile(latencies, 0.5).toFixed(1)),
      postP95Ms: Number(percentile(latencies, 0.95).toFixed(1)),
      serverCpuMsPerGroup: Number(ingestCpuMsPerGroup.toFixed(1)),
      loadAverage1m: Number(loadavg()[0]?.toFixed(2)),
      atroposGroupsPerSecond: 17.3,
      atroposCpuMsPerGroup: 58,
    });
    emit({
      figure: 'memory',
      afterGroups: totalGroups,
      rssBytes: rssAfterIngest,
      peakRssBytes: peakRss,
      startRssBytes: rssStart,
      atroposRssBytes: 15.2e9,
    });

    if (options['ingest-only']) {
      emit({
        figure: 'summary',
        ...settings,
        ingestGroupsPerSecond: Number((totalGroups / ingestSeconds).toFixed(1)),
        postP50Ms: Number(percentile(latencies, 0.5).toFixed(1)),
        serverCpuMsPerGroup: Number(ingestCpuMsPerGroup.toFixed(1)),
        rssMB: Math.round(rssAfterIngest / 1e6),
        loadAverage1m: Number(loadavg()[0]?.toFixed(2)),
      });
      clearInterval(sampler);
      return;
    }

    // Phase 2: /batch latency (time to the last byte, gzip as Python clients ask for it).
    const batchLatencies: number[] = [];
    const batchCpu = cpuMsOf(pid);
    for (let index = 0; index < 20; index++) {
      const started = performance.now();
      const response = await call(url, '/batch');
      batchLatencies.push(performance.now() - started);
      if (index === 0) {
        const batch = JSON.parse(gunzipSync(response.body).toString()) as { batch: { tokens: unknown[] }[] };
        const total = batch.batch.reduce((sum, group) => sum + group.tokens.length, 0);
        if (total !== batchSize) throw new Error(`batch had ${total} sequences`);
        emit({
          figure: 'batch-size-check',
          sequences: total,
          groups: batch.batch.length,
          gzipBytes: response.body.length,
        });
      }
    }
    emit({
      figure: 'batch',
      batchSize,
      batches: batchLatencies.length,
      p50Ms: Number(percentile(batchLatencies, 0.5).toFixed(1)),
      p95Ms: Number(percentile(batchLatencies, 0.95).toFixed(1)),
      serverCpuMsPerBatch: Number(((cpuMsOf(pid) - batchCpu) / batchLatencies.length).toFixed(1)),
      loadAverage1m: Number(loadavg()[0]?.toFixed(2)),
      atroposP50Ms: 6500,
    });

    // Phase 3: ingest while a trainer pulls continuously.
    const concurrentGroups = Math.min(400, totalGroups);
    sent = 0;
    latencies.length = 0;
    let pulled = 0;
    let pulling = true;
    const trainerLatencies: number[] = [];
    const trainer = (async () => {
      while (pulling) {
        const started = performance.now();
        const response = await call(url, '/batch');
        if (response.body.length > 100) {
          pulled++;
          trainerLatencies.push(performance.now() - started);
        } else await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const mixedStart = performance.now();
    const postLimited = async () => {
      while (sent < concurrentGroups) {
        const index = sent++;
        const started = performance.now();
        const response = await call(url, '/scored_data', {
          method: 'POST',
          body: bodies[index % bodies.length],
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        });
        if (response.status !== 200) throw new Error(`POST answered ${response.status}`);
        latencies.push(performance.now() - started);
      }
    };
    await Promise.all(Array.from({ length: clients }, postLimited));
    const mixedSeconds = (performance.now() - mixedStart) / 1000;
    pulling = false;
    await trainer;
    clearInterval(sampler);
    emit({
      figure: 'ingest-while-training',
      groups: concurrentGroups,
      groupsPerSecond: Number((concurrentGroups / mixedSeconds).toFixed(1)),
      postP95Ms: Number(percentile(latencies, 0.95).toFixed(1)),
      batchesPulled: pulled,
      batchP50Ms: Number(percentile(trainerLatencies, 0.5).toFixed(1)),
      atroposGroupsPerSecond: 11.3,
    });
    emit({ figure: 'memory-final', rssBytes: rssOf(pid), peakRssBytes: peakRss });
    emit({
      figure: 'summary',
      ...settings,
      ingestGroupsPerSecond: Number((totalGroups / ingestSeconds).toFixed(1)),
      batchP50Ms: Number(percentile(batchLatencies, 0.5).toFixed(1)),
      serverCpuMsPerGroup: Number(ingestCpuMsPerGroup.toFixed(1)),
      rssMB: Math.round(rssAfterIngest / 1e6),
      peakRssMB: Math.round(peakRss / 1e6),
      loadAverage1m: Number(loadavg()[0]?.toFixed(2)),
      issueBaseline: {
        groupsPerSecond: [142, 134],
        batchP50Ms: [362, 347],
        cpuMsPerGroup: [10.2, 10.7],
        rssMB: [165, 189],
      },
      atroposIssue: {
        groupsPerSecond: [23.8, 23.5],
        batchP50Ms: [5032, 4897],
        cpuMsPerGroup: 42,
        rssMB: 7600,
      },
    });
  } finally {
    for (const hog of hogProcesses) hog.kill('SIGKILL');
    server.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    if (server.exitCode === null) server.kill('SIGKILL');
    agent.destroy();
    rmSync(directory, { recursive: true, force: true });
  }
}

await main();
