// Benchmark of the trajectory API under the Atropos reference load (atropos-api.md §9), live
// against Atropos's own server: 4 concurrent clients POST groups of 16 sequences × 4,096 tokens
// gzipped to /scored_data as BaseEnv sends them, then a trainer pulls /batch at batch_size 256;
// shears with durability on (synchronous=FULL). Each server runs in a child process on
// 127.0.0.1 and is started fresh for each measurement; the servers are interleaved (the order
// alternates by round), in two modes: `free` (the OS schedules them as it likes) and `pinned`
// (each server pinned to one core with taskset, so both get the same CPU share). Ratios are
// printed only from this run. Prints one JSON line per measurement and one `summary` line per
// mode, each with the 1-minute load average; CPU time is the server process's user + system.
//
//   pnpm -F @shears/grpo bench [--groups 300] [--rounds 2] [--modes free,pinned] [--clients 4]
//     [--batches 20] [--payload python|js] [--baseline path/to/server-main.ts]
//
// Atropos is measured when SHEARS_BENCH_ATROPOS_DIR names a checkout of NousResearch/atropos
// and SHEARS_BENCH_ATROPOS_PYTHON a python with its API's requirements (fastapi, uvicorn[standard],
// pydantic); it is started with its own `run-api` entry point. Without them shears is measured
// alone and the summary says so. `--baseline` adds another shears server-main (e.g. a worktree
// of an earlier commit) as a third contender, interleaved the same way, for before/after figures.
// SHEARS_BENCH_NODE_ARGS adds node options to the shears servers (e.g. `--cpu-prof
// --cpu-prof-dir=DIR` to profile them under this load).
// --payload: `python` spells floats as Python's json.dumps does (`1.0`, what BaseEnv sends);
//   `js` as JSON.stringify does (`1`), which the server must rewrite to floats.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';

const packageDirectory = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: options } = parseArgs({
  options: {
    groups: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '2' },
    modes: { type: 'string', default: 'free,pinned' },
    clients: { type: 'string', default: '4' },
    batches: { type: 'string', default: '20' },
    payload: { type: 'string', default: 'python' },
    baseline: { type: 'string' },
  },
});
const positive = (name: string, text: string): number => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} must be a positive integer, got "${text}"`);
  return value;
};
const totalGroups = positive('groups', options.groups);
const rounds = positive('rounds', options.rounds);
const clients = positive('clients', options.clients);
const batchPulls = positive('batches', options.batches);
const modes = options.modes.split(',').map((mode) => mode.trim());
for (const mode of modes)
  if (mode !== 'free' && mode !== 'pinned')
    throw new Error(`--modes takes free and/or pinned, got "${mode}"`);
if (options.payload !== 'python' && options.payload !== 'js')
  throw new Error(`--payload must be "python" or "js", got "${options.payload}"`);
const sequences = 16;
const tokensPerSequence = 4096;
const batchSize = 256;

const atroposDirectory = process.env.SHEARS_BENCH_ATROPOS_DIR;
const atroposPython = process.env.SHEARS_BENCH_ATROPOS_PYTHON;
const atropos =
  atroposDirectory && atroposPython
    ? { directory: resolve(atroposDirectory), python: atroposPython }
    : undefined;
if (atropos && !existsSync(join(atropos.directory, 'atroposlib', 'api', 'server.py')))
  throw new Error(
    `SHEARS_BENCH_ATROPOS_DIR=${atropos.directory} is not an Atropos checkout (no atroposlib/api/server.py)`,
  );

const load = () => Number(loadavg()[0]?.toFixed(2));

function emit(record: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: 'grpo/api', ...record, loadAverage1m: load() })}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}
const round1 = (value: number) => Number(value.toFixed(1));

async function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolvePort(port));
    });
  });
}

function call(
  agent: Agent,
  url: string,
  path: string,
  options: { method?: string; body?: Buffer; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolveCall, reject) => {
    const headers: Record<string, string> = { 'accept-encoding': 'gzip', ...(options.headers ?? {}) };
    if (options.body) headers['content-length'] = String(options.body.length);
    const req = httpRequest(
      new URL(path, url),
      { method: options.method ?? 'GET', headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolveCall({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
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

/** User + system CPU time of a process (all its threads) in milliseconds. */
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

// A group as BaseEnv sends it: prompt tokens masked, completion tokens as their own labels,
// inference logprobs 1.0 at masked positions.
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

type Contender = 'shears' | 'baseline' | 'atropos';

interface Started {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function startServer(contender: Contender, pinned: boolean, directory: string): Promise<Started> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let command: string;
  let args: string[];
  let cwd: string;
  let env: NodeJS.ProcessEnv = process.env;
  if (contender === 'atropos') {
    const entry = `import sys; sys.argv = ['run-api', '--host', '127.0.0.1', '--port', '${port}']; from atroposlib.cli.run_api import main; main()`;
    command = atropos?.python as string;
    args = ['-c', entry];
    cwd = atropos?.directory as string;
    env = { ...process.env, PYTHONPATH: cwd };
  } else {
    command = process.execPath;
    const script = contender === 'baseline' ? resolve(options.baseline as string) : 'src/server-main.ts';
    const extra = process.env.SHEARS_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    args = [...extra, '--import', 'tsx', '--conditions=@shears/source', script];
    cwd = packageDirectory;
    env = {
      ...process.env,
      SHEARS_API_PORT: String(port),
      SHEARS_API_DB: join(directory, `${contender}-${port}.sqlite`),
      SHEARS_API_SYNCHRONOUS: 'full',
      SHEARS_API_MAX_QUEUED_GROUPS: '100000',
    };
  }
  // taskset execs the server, so the child's pid is the server's. Its stderr is kept for errors.
  const stdio: ['ignore', 'ignore', 'pipe'] = ['ignore', 'ignore', 'pipe'];
  const child: ChildProcess = pinned
    ? spawn('taskset', ['-c', '0', command, ...args], { cwd, env, stdio })
    : spawn(command, args, { cwd, env, stdio });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) =>
      reject(new Error(`${contender} server exited (${code}) before it answered:\n${stderr}`)),
    ),
  );
  exited.catch(() => {});
  const agent = new Agent({ keepAlive: false });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await Promise.race([
      call(agent, url, '/').then(
        (response) => response.status === 200,
        () => false,
      ),
      exited,
    ]);
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`${contender} server did not answer on ${url} within 60 s`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
  }
  agent.destroy();
  return {
    url,
    pid: child.pid as number,
    async stop() {
      // A busy machine can take seconds to let the server close (and write a --cpu-prof
      // profile on its way out): SIGKILL only after 10 s.
      const gone = new Promise<void>((resolveGone) => {
        if (child.exitCode !== null || child.signalCode !== null) resolveGone();
        else child.once('exit', () => resolveGone());
      });
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}

interface Measured {
  contender: Contender;
  mode: string;
  round: number;
  ingestGroupsPerSecond: number;
  cpuMsPerGroup: number;
  postP50Ms: number;
  batchP50Ms: number;
  cpuMsPerBatch: number;
  rssMB: number;
}

async function measure(
  contender: Contender,
  mode: string,
  round: number,
  bodies: Buffer[],
  directory: string,
): Promise<Measured> {
  const server = await startServer(contender, mode === 'pinned', directory);
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  try {
    const { url, pid } = server;
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
    await call(agent, url, '/register', {
      method: 'POST',
      body: Buffer.from(JSON.stringify(register)),
      headers: { 'content-type': 'application/json' },
    });
    await call(agent, url, '/batch');

    // Phase 1: ingest.
    const latencies: number[] = [];
    let sent = 0;
    const post = async () => {
      while (sent < totalGroups) {
        const index = sent++;
        const started = performance.now();
        const response = await call(agent, url, '/scored_data', {
          method: 'POST',
          body: bodies[index % bodies.length],
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        });
        if (response.status !== 200)
          throw new Error(
            `${contender}: POST /scored_data answered ${response.status}: ${response.body.toString()}`,
          );
        latencies.push(performance.now() - started);
      }
    };
    const ingestCpu = cpuMsOf(pid);
    const ingestStart = performance.now();
    await Promise.all(Array.from({ length: clients }, post));
    const ingestSeconds = (performance.now() - ingestStart) / 1000;
    const cpuMsPerGroup = (cpuMsOf(pid) - ingestCpu) / totalGroups;
    const rss = rssOf(pid);

    // Phase 2: /batch latency (time to the last byte, gzip as Python clients ask for it). A new
    // connection each: uvicorn closes keep-alive connections idle for 5 s, and Atropos's /batch
    // can take longer than that.
    const fresh = new Agent({ keepAlive: false });
    const batchLatencies: number[] = [];
    const batchCpu = cpuMsOf(pid);
    const available = Math.min(batchPulls, Math.floor((totalGroups * sequences) / batchSize));
    for (let index = 0; index < available; index++) {
      const started = performance.now();
      const response = await call(fresh, url, '/batch');
      batchLatencies.push(performance.now() - started);
      const served = JSON.parse(gunzipSync(response.body).toString()) as {
        batch: { tokens: unknown[] }[] | null;
      };
      const total = served.batch?.reduce((sum, group) => sum + group.tokens.length, 0) ?? 0;
      if (total !== batchSize) throw new Error(`${contender}: /batch ${index} had ${total} sequences`);
    }
    const measured: Measured = {
      contender,
      mode,
      round,
      ingestGroupsPerSecond: round1(totalGroups / ingestSeconds),
      cpuMsPerGroup: round1(cpuMsPerGroup),
      postP50Ms: round1(median(latencies)),
      batchP50Ms: round1(median(batchLatencies)),
      cpuMsPerBatch: round1((cpuMsOf(pid) - batchCpu) / Math.max(1, batchLatencies.length)),
      rssMB: Math.round(rss / 1e6),
    };
    emit({
      figure: 'run',
      groups: totalGroups,
      clients,
      payload: options.payload,
      batches: available,
      ...measured,
    });
    return measured;
  } finally {
    agent.destroy();
    await server.stop();
  }
}

async function main(): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'shears-api-bench-'));
  try {
    // Built before any server starts: uvicorn drops a keep-alive connection idle for 5 s.
    const bodies = Array.from({ length: 8 }, (_, index) => makeGroup(index));
    const contenders: Contender[] = ['shears'];
    if (options.baseline !== undefined) contenders.push('baseline');
    if (atropos) contenders.push('atropos');
    emit({
      figure: 'setup',
      groups: totalGroups,
      rounds,
      modes,
      clients,
      payload: options.payload,
      sequences,
      tokensPerSequence,
      batchSize,
      jsonBytes: gunzipSync(bodies[0] as Buffer).length,
      gzipBytes: (bodies[0] as Buffer).length,
      contenders,
      ...(atropos
        ? { atropos: atropos.directory }
        : { atropos: 'not measured: set SHEARS_BENCH_ATROPOS_DIR and SHEARS_BENCH_ATROPOS_PYTHON' }),
    });
    const results: Measured[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const mode of modes) {
        // Interleaved: the order of the servers alternates by round.
        const order = round % 2 === 1 ? contenders : [...contenders].reverse();
        for (const contender of order) results.push(await measure(contender, mode, round, bodies, directory));
      }
    }
    for (const mode of modes) {
      const of = (contender: Contender, key: keyof Measured) =>
        results
          .filter((item) => item.mode === mode && item.contender === contender)
          .map((item) => item[key] as number);
      const summary: Record<string, unknown> = { figure: 'summary', mode, groups: totalGroups, rounds };
      for (const contender of contenders) {
        summary[contender] = {
          ingestGroupsPerSecond: of(contender, 'ingestGroupsPerSecond'),
          cpuMsPerGroup: of(contender, 'cpuMsPerGroup'),
          batchP50Ms: of(contender, 'batchP50Ms'),
          rssMB: of(contender, 'rssMB'),
        };
      }
      // Ratios within each round (the servers measured back to back), then their median: the
      // load of a shared machine moves more between rounds than between neighbours.
      const ratio = (numerator: number[], denominator: number[]) => {
        const perRound = numerator.map((value, index) => round1(value / (denominator[index] as number)));
        return { perRound, median: round1(median(perRound)) };
      };
      if (atropos) {
        summary.shearsOverAtropos = {
          groupsPerSecond: ratio(
            of('shears', 'ingestGroupsPerSecond'),
            of('atropos', 'ingestGroupsPerSecond'),
          ),
          cpuPerGroup: ratio(of('atropos', 'cpuMsPerGroup'), of('shears', 'cpuMsPerGroup')),
          batchP50: ratio(of('atropos', 'batchP50Ms'), of('shears', 'batchP50Ms')),
        };
      } else summary.atropos = 'not measured (set SHEARS_BENCH_ATROPOS_DIR and SHEARS_BENCH_ATROPOS_PYTHON)';
      if (options.baseline !== undefined) {
        summary.shearsOverBaseline = {
          groupsPerSecond: ratio(
            of('shears', 'ingestGroupsPerSecond'),
            of('baseline', 'ingestGroupsPerSecond'),
          ),
          cpuPerGroup: ratio(of('baseline', 'cpuMsPerGroup'), of('shears', 'cpuMsPerGroup')),
        };
      }
      emit(summary);
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

await main();
