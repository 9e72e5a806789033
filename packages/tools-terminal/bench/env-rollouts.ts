// Rollouts of the "count the words" env (issue 38 §5): a task list, one file-reading tool and a
// reward that reads the rollout's sandbox, run by the kernel's group runner against one scripted
// OpenAI-compatible server (its own process, bench/env-rollouts-server.ts), every rollout in its
// own local sandbox (its own workspace). Two ways of placing the task's file:
//   setup — a `setup` shell line in the sandbox spec (`printf ... > words.txt`), as the guide
//           showed: every rollout starts a shell;
//   data  — the file written with the sandbox's writeFile after acquire (what a high-level env
//           with `files` does): no shell is ever started.
// Each configuration (variant × concurrency × model latency) runs BENCH_ROLLOUTS rollouts of 2
// turns; configurations are interleaved over BENCH_ROUNDS rounds. With
// BENCH_BASELINE_TERMINAL=<path to another build's @shears/tools-terminal dist/index.js> the
// same configurations also run on that build's local sandbox (impl: baseline), interleaved.
// Prints one JSON line per run: rollouts/s, CPU s per 100 rollouts (this process and its
// reaped children: the shells), peak RSS of this process, with the load average beside them.
//   pnpm -F @shears/tools-terminal bench:env
// Peers (Atropos, verifiers): BENCH_ATROPOS_PYTHON / BENCH_VERIFIERS_PYTHON are where their
// pinned snapshots would be named; no runner for them exists yet, so a line says they were skipped.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { EnvItem, EnvV1, SandboxProviderV1, SandboxSpec } from '@shears/core';
import { createConcurrencyLimiter, defineTool, runGroup, silentLogger } from '@shears/core';
import { createScriptedServerClient } from '@shears/core/test';
import { z } from 'zod';
import { createLocalSandboxProvider } from '../src/local/local-sandbox-provider.js';

const ROLLOUTS = Number(process.env.BENCH_ROLLOUTS ?? 512);
const GROUP_SIZE = Number(process.env.BENCH_GROUP_SIZE ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '16,64').split(',').map(Number);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 50);
const LATENCIES = (process.env.BENCH_LATENCIES ?? `0,${LATENCY_MS}`).split(',').map(Number);
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'data,setup').split(',') as Variant[];
const TASKS = 32;

type Variant = 'data' | 'setup';
interface WordsItem extends EnvItem {
  text: string;
  words: number;
}

const print = (record: Record<string, unknown>) => console.log(JSON.stringify(record));

const VOCABULARY =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa'.split(
    ' ',
  );
const items: WordsItem[] = Array.from({ length: TASKS }, (_, index) => {
  const count = 40 + ((index * 37) % 160);
  const text = Array.from({ length: count }, (_, word) => VOCABULARY[(index + word * 7) % VOCABULARY.length])
    .join(' ')
    .replace(/(\S+ \S+ \S+ \S+ \S+ \S+ \S+ \S+) /g, '$1\n');
  return {
    id: `words-${index}`,
    prompt: 'How many words are in words.txt? Answer with the number.',
    text,
    words: count,
  };
});

const readFileTool = defineTool({
  name: 'read_file',
  description: 'Read a text file of the workspace',
  inputSchema: z.object({ path: z.string() }),
  async execute(args, context) {
    return Buffer.from(await context.sandbox.readFile(args.path, { signal: context.signal })).toString(
      'utf8',
    );
  },
});

function wordsEnv(variant: Variant): EnvV1<WordsItem> {
  let next = 0;
  return {
    specificationVersion: 'v1',
    id: `count-words-${variant}`,
    async nextItem() {
      return items[next++ % items.length]!;
    },
    buildMessages: (item) => [{ role: 'user', content: item.prompt }],
    tools: () => [readFileTool],
    // `files` is read by withFiles below (it stands in for a high-level env's file placement).
    sandboxSpec: (item) =>
      variant === 'setup'
        ? { setup: [`printf '%s' '${item.text}' > words.txt`] }
        : ({ files: { 'words.txt': item.text } } as SandboxSpec),
    budget: () => ({ maxTurns: 4 }),
    async computeReward(item, rollout, context) {
      const text = Buffer.from(
        await context.sandbox.readFile('words.txt', { signal: context.signal }),
      ).toString('utf8');
      const words = text.split(/\s+/).filter(Boolean).length;
      const correct = words === item.words && rollout.finalResponse?.trim() === String(words);
      return { score: correct ? 1 : 0, success: correct };
    },
  };
}

/** Writes `spec.files` into each sandbox after acquire, with the sandbox's own writeFile (no shell). */
function withFiles(provider: SandboxProviderV1): SandboxProviderV1 {
  return {
    specificationVersion: 'v1',
    id: provider.id,
    async acquire(spec = {}, options = {}) {
      const { files, ...rest } = spec as SandboxSpec & { files?: Record<string, string> };
      const sandbox = await provider.acquire(rest, options);
      try {
        for (const [path, text] of Object.entries(files ?? {})) await sandbox.writeFile(path, text);
      } catch (error) {
        await sandbox.dispose();
        throw error;
      }
      return sandbox;
    },
    close: () => provider.close(),
  };
}

/** CPU seconds of this process and of its reaped children (the sandbox shells and their commands). */
function cpuSeconds(): { own: number; children: number } {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  // After "pid (comm) ": state is field 0, utime 11, stime 12, cutime 13, cstime 14 (clock ticks).
  const own = process.cpuUsage();
  return { own: (own.user + own.system) / 1e6, children: (Number(fields[13]) + Number(fields[14])) / 100 };
}

async function startServers(): Promise<{ urls: Record<string, string>; stop: () => void }> {
  const script = fileURLToPath(new URL('./env-rollouts-server.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@shears/source', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_LATENCY_MS: String(LATENCY_MS) },
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the scripted server exited (${code})`)));
  });
  return {
    urls: (JSON.parse(first) as { urls: Record<string, string> }).urls,
    stop: () => child.kill('SIGTERM'),
  };
}

interface Run {
  impl: string;
  variant: Variant;
  concurrency: number;
  latencyMs: number;
}

async function runOne(run: Run, provider: SandboxProviderV1, url: string, round: number, count = ROLLOUTS) {
  const env = wordsEnv(run.variant);
  const server = createScriptedServerClient({ baseUrl: url, model: 'bench' });
  const limiter = createConcurrencyLimiter(run.concurrency);
  const groups = Math.ceil(count / GROUP_SIZE);
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
    Array.from({ length: groups }, async () => {
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
  const cpuAfter = cpuSeconds();
  const ownCpu = cpuAfter.own - cpuBefore.own;
  const childCpu = cpuAfter.children - cpuBefore.children;
  const per100 = (seconds: number) => Math.round((seconds / rollouts) * 100 * 1000) / 1000;
  clearInterval(sampler);
  const rollouts = scored + failed;
  print({
    bench: 'env-rollouts',
    round,
    ...run,
    rollouts,
    failed,
    rollouts_per_s: Math.round((rollouts / seconds) * 10) / 10,
    cpu_s_per_100_rollouts: per100(ownCpu + childCpu),
    cpu_s_per_100_node: per100(ownCpu),
    cpu_s_per_100_shells: per100(childCpu),
    peak_rss_mb: Math.round(peakRss / 2 ** 20),
    wall_s: Math.round(seconds * 100) / 100,
    loadavg: loadavg().map((value) => Math.round(value * 100) / 100),
    ...(firstFailure ? { first_failure: firstFailure.slice(0, 300) } : {}),
  });
  return failed;
}

async function main() {
  print({
    bench: 'env-rollouts',
    event: 'start',
    rollouts: ROLLOUTS,
    turns: 2,
    groupSize: GROUP_SIZE,
    loadavg: loadavg(),
  });
  for (const [peer, variable] of [
    ['atropos', 'BENCH_ATROPOS_PYTHON'],
    ['verifiers', 'BENCH_VERIFIERS_PYTHON'],
  ] as const) {
    print({
      bench: 'env-rollouts',
      peer,
      skipped: process.env[variable]
        ? `${variable} is set, but this bench has no ${peer} runner yet`
        : `no ${peer} snapshot (${variable} unset): shears alone`,
    });
  }
  const impls: Array<[string, SandboxProviderV1]> = [['current', withFiles(createLocalSandboxProvider())]];
  if (process.env.BENCH_BASELINE_TERMINAL) {
    const baseline = (await import(pathToFileURL(process.env.BENCH_BASELINE_TERMINAL).href)) as {
      createLocalSandboxProvider: typeof createLocalSandboxProvider;
    };
    impls.push(['baseline', withFiles(baseline.createLocalSandboxProvider())]);
  }
  const { urls, stop } = await startServers();
  let failures = 0;
  try {
    // Warm-up: JIT, sockets, the file cache.
    for (const [impl, provider] of impls)
      await runOne(
        { impl: `${impl}-warmup`, variant: 'setup', concurrency: 16, latencyMs: 0 },
        provider,
        urls[0]!,
        0,
        64,
      );
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const latencyMs of LATENCIES)
        for (const concurrency of CONCURRENCY)
          for (const variant of VARIANTS)
            for (const [impl, provider] of round % 2 === 0 ? [...impls].reverse() : impls)
              failures += await runOne(
                { impl, variant, concurrency, latencyMs },
                provider,
                urls[latencyMs]!,
                round,
              );
    }
  } finally {
    stop();
    await Promise.all(impls.map(([, provider]) => provider.close()));
  }
  if (failures > 0) {
    print({ bench: 'env-rollouts', error: `${failures} rollouts did not score 1` });
    process.exitCode = 1;
  }
}

await main();
