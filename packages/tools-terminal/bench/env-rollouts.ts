// Rollouts of the "count the words" env (issue 38 §5) side by side in shears, Atropos and
// verifiers: a task list, one file-reading tool (read_text) and a reward that reads the rollout's
// workspace, every rollout in its own workspace, all three against one scripted OpenAI-compatible
// server (its own process, bench/env-rollouts-server.ts: turn 1 calls read_text, turn 2 answers).
//
// shears is written the documented way (docs/write-an-env.md): `defineEnv` from @shears/core with
// `tools: [tool(...)]` and a `reward(row, { read })`, created through a plugin registry and run by
// the group runner on the local sandbox provider (one sandbox, its own workspace, per rollout),
// talking to the model through @shears/servers's OpenAI-compatible client (`--provider openai`).
// Two ways of placing the task's file:
//   files — `files: (row) => ({ 'words.txt': row.text })`, written with the sandbox's writeFile
//           (no shell is started: the local sandbox starts its shell with the first command);
//   setup — `setup: (row) => ["printf ... > words.txt"]`: every rollout starts a shell.
// The peers run in their own idioms from pinned snapshots (bench/peers/*.py, one long-lived
// Python process each, its start-up not measured): Atropos's BaseEnv with the tool offered through
// its ServerManager (groups of BENCH_GROUP_SIZE through collect_trajectories, concurrency / group
// size workers), verifiers's StatefulToolEnv through env.evaluate (max_concurrent = concurrency /
// group size groups). They run when BENCH_ATROPOS_PYTHON (+ BENCH_ATROPOS_DIR, the snapshot, and
// BENCH_ATROPOS_TOKENIZER, a local tokenizer folder) and BENCH_VERIFIERS_PYTHON (+
// BENCH_VERIFIERS_DIR) are set; otherwise a line says so and shears runs alone.
//
// Each configuration (impl × concurrency × model latency) runs BENCH_ROLLOUTS rollouts of 2 turns;
// configurations are interleaved over BENCH_ROUNDS rounds (the order of the impls rotates each
// round). Prints one JSON line per run: rollouts/s, CPU s per 100 rollouts (the process and its
// reaped children), peak RSS, with the load average beside them; then one summary line per
// setting: the median over rounds and shears-files's ratios to each peer.
//   pnpm -F @shears/tools-terminal bench:env
// With BENCH_BASELINE_TERMINAL=<another build's @shears/tools-terminal dist/index.js> shears also
// runs on that build's local sandbox (impl shears-baseline-*), interleaved.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { EnvV1, SandboxProviderV1 } from '@shears/core';
import {
  createConcurrencyLimiter,
  createRegistry,
  defineEnv,
  runGroup,
  silentLogger,
  tool,
} from '@shears/core';
import { createOpenAICompatibleServer } from '@shears/servers';
import { z } from 'zod';
import { createLocalSandboxProvider } from '../src/local/local-sandbox-provider.js';

const ROLLOUTS = Number(process.env.BENCH_ROLLOUTS ?? 512);
const GROUP_SIZE = Number(process.env.BENCH_GROUP_SIZE ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '16,64').split(',').map(Number);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 50);
const LATENCIES = (process.env.BENCH_LATENCIES ?? `0,${LATENCY_MS}`).split(',').map(Number);
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'files,setup').split(',') as Variant[];
const WARMUP = 64;
const TASKS = 32;
const PROMPT = 'How many words are in words.txt? Answer with the number.';

type Variant = 'files' | 'setup';
type WordsRow = { id: string; prompt: string; text: string; words: number };

const print = (record: Record<string, unknown>) => console.log(JSON.stringify(record));
const load = () => loadavg().map((value) => Math.round(value * 100) / 100);

for (const variant of VARIANTS)
  if (variant !== 'files' && variant !== 'setup')
    throw new Error(`BENCH_VARIANTS: "${variant}" is not a variant (files, setup)`);
if (GROUP_SIZE < 1 || CONCURRENCY.some((value) => !(value >= GROUP_SIZE)))
  throw new Error(
    `BENCH_CONCURRENCY (${CONCURRENCY}) must be at least BENCH_GROUP_SIZE (${GROUP_SIZE}): the peers run concurrency / group size groups at a time`,
  );

const VOCABULARY =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa'.split(
    ' ',
  );
const rows: WordsRow[] = Array.from({ length: TASKS }, (_, index) => {
  const count = 40 + ((index * 37) % 160);
  const text = Array.from({ length: count }, (_, word) => VOCABULARY[(index + word * 7) % VOCABULARY.length])
    .join(' ')
    .replace(/(\S+ \S+ \S+ \S+ \S+ \S+ \S+ \S+) /g, '$1\n');
  return { id: `words-${index}`, prompt: PROMPT, text, words: count };
});

// The env as docs/write-an-env.md writes it.
const readText = tool({
  name: 'read_text',
  description: 'Read a text file of the workspace',
  parameters: z.object({ path: z.string().describe('The file to read') }),
  async run({ path }, { sandbox }) {
    return new TextDecoder().decode(await sandbox.readFile(path));
  },
});

function countWordsEnv(variant: Variant) {
  return defineEnv({
    name: `count-words-${variant}`,
    tasks: rows,
    prompt: '{prompt}',
    ...(variant === 'files'
      ? { files: (row: WordsRow) => ({ 'words.txt': row.text }) }
      : { setup: (row: WordsRow) => [`printf '%s' '${row.text}' > words.txt`] }),
    tools: [readText],
    maxTurns: 4,
    async reward(row, { read, rollout }) {
      const words = (await read('words.txt'))?.split(/\s+/).filter(Boolean).length;
      return words === row.words && rollout.finalResponse?.trim() === String(words);
    },
  });
}

async function createEnv(variant: Variant): Promise<EnvV1> {
  const pack = countWordsEnv(variant);
  return (await createRegistry().use(pack).create('envs', pack.env, {})) as EnvV1;
}

/** CPU seconds of this process and of its reaped children (the sandbox shells and their commands). */
function cpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  // After "pid (comm) ": state is field 0, utime 11, stime 12, cutime 13, cstime 14 (clock ticks).
  const own = process.cpuUsage();
  return (own.user + own.system) / 1e6 + (Number(fields[13]) + Number(fields[14])) / 100;
}

async function firstLine(
  lines: Interface,
  child: ChildProcessWithoutNullStreams | ReturnType<typeof spawn>,
  what: string,
) {
  return new Promise<string>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`${what} exited (${code}) before answering`));
    child.once('exit', onExit);
    lines.once('line', (line) => {
      child.off('exit', onExit);
      resolve(line);
    });
  });
}

async function startServers(): Promise<{ urls: Record<string, string>; stop: () => void }> {
  const script = fileURLToPath(new URL('./env-rollouts-server.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@shears/source', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_LATENCY_MS: String(LATENCY_MS) },
  });
  const first = await firstLine(createInterface({ input: child.stdout! }), child, 'the scripted server');
  return {
    urls: (JSON.parse(first) as { urls: Record<string, string> }).urls,
    stop: () => child.kill('SIGTERM'),
  };
}

interface Measured {
  rollouts: number;
  failed: number;
  seconds: number;
  cpu: number;
  peakRssMb: number;
  firstFailure?: string;
}

interface Impl {
  name: string;
  run(url: string, concurrency: number): Promise<Measured>;
  close(): Promise<void>;
}

function shearsImpl(name: string, variant: Variant, env: EnvV1, provider: SandboxProviderV1): Impl {
  const warm = new Set<string>();
  async function play(url: string, concurrency: number, count: number): Promise<Measured> {
    // The production client (`--provider openai`): undici keep-alive HTTP/1.1, the OpenAI format.
    const server = createOpenAICompatibleServer({ baseUrl: url, model: 'bench', apiKey: 'bench' });
    const limiter = createConcurrencyLimiter(concurrency);
    let scored = 0;
    let failed = 0;
    let firstFailure: string | undefined;
    let peakRss = process.memoryUsage.rss();
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
    }, 50);
    const cpuBefore = cpuSeconds();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: Math.ceil(count / GROUP_SIZE) }, async () => {
        const item = (await env.nextItem())!;
        await runGroup({
          env,
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
            if (event.outcome === 'scored' && event.reward === 1) scored += 1;
            else {
              failed += 1;
              firstFailure ??= `${event.outcome}: ${event.reason ?? ''} ${event.error ? String(event.error) : ''}`;
            }
          },
        });
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSeconds() - cpuBefore;
    clearInterval(sampler);
    return {
      rollouts: scored + failed,
      failed,
      seconds,
      cpu,
      peakRssMb: Math.round(Math.max(peakRss, process.memoryUsage.rss()) / 2 ** 20),
      ...(firstFailure ? { firstFailure } : {}),
    };
  }
  return {
    name: `${name}-${variant}`,
    async run(url, concurrency) {
      // Warm-up on a server's first use (JIT, sockets, the file cache), as the peers do.
      if (!warm.has(url)) {
        warm.add(url);
        await play(url, concurrency, WARMUP);
      }
      return play(url, concurrency, ROLLOUTS);
    },
    close: async () => {},
  };
}

interface PeerSpec {
  name: 'atropos' | 'verifiers';
  python: string | undefined;
  dir: string | undefined;
  script: string;
  extraArgs: string[];
}

async function peerImpl(spec: PeerSpec, tasksFile: string): Promise<Impl> {
  const script = fileURLToPath(new URL(`./peers/${spec.script}`, import.meta.url));
  const child = spawn(
    spec.python!,
    [script, '--tasks', tasksFile, '--group-size', String(GROUP_SIZE), ...spec.extraArgs],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        PYTHONPATH: [spec.dir, process.env.PYTHONPATH].filter(Boolean).join(':'),
        TQDM_DISABLE: '1',
      },
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const lines = createInterface({ input: child.stdout });
  const next = async () => {
    try {
      return await firstLine(lines, child, `the ${spec.name} runner`);
    } catch (error) {
      throw new Error(`${(error as Error).message}; its stderr ends:\n${stderr}`);
    }
  };
  // Skips anything a library prints on stdout before the runner's own JSON lines.
  const nextJson = async (): Promise<Record<string, unknown>> => {
    for (;;) {
      const line = await next();
      if (line.startsWith('{')) return JSON.parse(line) as Record<string, unknown>;
    }
  };
  await nextJson();
  return {
    name: spec.name,
    async run(url, concurrency) {
      child.stdin.write(`${JSON.stringify({ url, concurrency, rollouts: ROLLOUTS, warmup: WARMUP })}\n`);
      const result = await nextJson();
      return {
        rollouts: result.rollouts as number,
        failed: result.failed as number,
        seconds: result.wall_s as number,
        cpu: result.cpu_s as number,
        peakRssMb: result.peak_rss_mb as number,
        ...(result.first_failure ? { firstFailure: String(result.first_failure) } : {}),
      };
    },
    async close() {
      child.stdin.end('\n');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

function peerSpecs(): PeerSpec[] {
  const env = process.env;
  return [
    {
      name: 'atropos',
      python: env.BENCH_ATROPOS_PYTHON,
      dir: env.BENCH_ATROPOS_DIR,
      script: 'atropos_count_words.py',
      extraArgs: env.BENCH_ATROPOS_TOKENIZER ? ['--tokenizer', env.BENCH_ATROPOS_TOKENIZER] : [],
    },
    {
      name: 'verifiers',
      python: env.BENCH_VERIFIERS_PYTHON,
      dir: env.BENCH_VERIFIERS_DIR,
      script: 'verifiers_count_words.py',
      extraArgs: [],
    },
  ];
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const round2 = (value: number) => Math.round(value * 100) / 100;

async function main() {
  print({
    bench: 'env-rollouts',
    event: 'start',
    rollouts: ROLLOUTS,
    turns: 2,
    groupSize: GROUP_SIZE,
    rounds: ROUNDS,
    loadavg: load(),
  });
  const specs = peerSpecs();
  if (specs.some((spec) => spec.name === 'atropos' && spec.python && !process.env.BENCH_ATROPOS_TOKENIZER))
    throw new Error(
      'BENCH_ATROPOS_PYTHON is set but BENCH_ATROPOS_TOKENIZER is not: Atropos loads a tokenizer (a local folder with tokenizer.json; nothing is downloaded)',
    );
  const scratch = mkdtempSync(join(tmpdir(), 'shears-env-bench-'));
  const tasksFile = join(scratch, 'tasks.json');
  writeFileSync(tasksFile, JSON.stringify(rows));

  const impls: Impl[] = [];
  const providers: SandboxProviderV1[] = [];
  const builds: Array<[string, typeof createLocalSandboxProvider]> = [['shears', createLocalSandboxProvider]];
  if (process.env.BENCH_BASELINE_TERMINAL) {
    const baseline = (await import(pathToFileURL(process.env.BENCH_BASELINE_TERMINAL).href)) as {
      createLocalSandboxProvider: typeof createLocalSandboxProvider;
    };
    builds.push(['shears-baseline', baseline.createLocalSandboxProvider]);
  }
  for (const [name, create] of builds)
    for (const variant of VARIANTS) {
      const provider = create();
      providers.push(provider);
      impls.push(shearsImpl(name, variant, await createEnv(variant), provider));
    }
  for (const spec of specs) {
    if (!spec.python) {
      print({
        bench: 'env-rollouts',
        peer: spec.name,
        skipped: `no ${spec.name} snapshot (BENCH_${spec.name.toUpperCase()}_PYTHON unset): shears alone`,
      });
      continue;
    }
    impls.push(await peerImpl(spec, tasksFile));
  }

  const { urls, stop } = await startServers();
  const results: Array<{
    impl: string;
    concurrency: number;
    latencyMs: number;
    rps: number;
    cpu100: number;
    rss: number;
  }> = [];
  let failures = 0;
  try {
    for (let round = 1; round <= ROUNDS; round += 1) {
      const order = impls.map((_, index) => impls[(index + round - 1) % impls.length]!);
      for (const latencyMs of LATENCIES)
        for (const concurrency of CONCURRENCY)
          for (const impl of order) {
            const measured = await impl.run(urls[latencyMs]!, concurrency);
            const rps = measured.rollouts / measured.seconds;
            const cpu100 = (measured.cpu / measured.rollouts) * 100;
            failures += measured.failed + Math.max(0, ROLLOUTS - measured.rollouts);
            results.push({ impl: impl.name, concurrency, latencyMs, rps, cpu100, rss: measured.peakRssMb });
            print({
              bench: 'env-rollouts',
              round,
              impl: impl.name,
              concurrency,
              latencyMs,
              rollouts: measured.rollouts,
              failed: measured.failed,
              rollouts_per_s: Math.round(rps * 10) / 10,
              cpu_s_per_100_rollouts: Math.round(cpu100 * 1000) / 1000,
              peak_rss_mb: measured.peakRssMb,
              wall_s: round2(measured.seconds),
              loadavg: load(),
              ...(measured.firstFailure ? { first_failure: measured.firstFailure.slice(0, 300) } : {}),
            });
          }
    }
  } finally {
    stop();
    await Promise.all(impls.map((impl) => impl.close()));
    await Promise.all(providers.map((provider) => provider.close()));
    rmSync(scratch, { recursive: true, force: true });
  }
  // One line per setting: medians over the rounds, and shears-files's ratios to each peer.
  for (const latencyMs of LATENCIES)
    for (const concurrency of CONCURRENCY) {
      const summary: Record<string, unknown> = {
        bench: 'env-rollouts',
        summary: true,
        concurrency,
        latencyMs,
      };
      const of = (impl: string) =>
        results.filter((r) => r.impl === impl && r.concurrency === concurrency && r.latencyMs === latencyMs);
      for (const impl of impls) {
        const runs = of(impl.name);
        summary[impl.name] = {
          rollouts_per_s: Math.round(median(runs.map((r) => r.rps)) * 10) / 10,
          cpu_s_per_100_rollouts: round2(median(runs.map((r) => r.cpu100))),
          peak_rss_mb: Math.max(...runs.map((r) => r.rss)),
        };
      }
      const shears = summary['shears-files'] as
        | { rollouts_per_s: number; cpu_s_per_100_rollouts: number }
        | undefined;
      for (const peer of ['atropos', 'verifiers']) {
        const other = summary[peer] as { rollouts_per_s: number; cpu_s_per_100_rollouts: number } | undefined;
        if (!shears || !other) continue;
        summary[`shears_files_vs_${peer}`] = {
          rollouts_per_s: round2(shears.rollouts_per_s / other.rollouts_per_s),
          cpu_per_rollout: round2(shears.cpu_s_per_100_rollouts / other.cpu_s_per_100_rollouts),
        };
      }
      summary.loadavg = load();
      print(summary);
    }
  if (failures > 0) {
    print({ bench: 'env-rollouts', error: `${failures} rollouts did not score 1` });
    process.exitCode = 1;
  }
}

await main();
