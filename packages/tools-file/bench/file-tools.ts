// Benchmark: latency of each file tool on the local sandbox backend and on the docker backend
// (busybox image; BENCH_DOCKER=0 skips it). One JSON line per backend and case: median and p90
// milliseconds over N calls, with the load average next to them (latencies here depend heavily
// on machine load). Uses SHEARS_TEST_DOCKER_HOST/IMAGE when set, otherwise starts a private
// dockerd and builds the busybox image like the test set-up does.
//   pnpm -F @shears/tools-file bench            (BENCH_N=30 by default)
import { loadavg } from 'node:os';
import {
  type SandboxProviderV1,
  type SandboxV1,
  silentLogger,
  type ToolContext,
  type ToolV1,
} from '@shears/core';
import { startDockerService } from '@shears/test-infra';
import { createDockerSandboxProvider, createLocalSandboxProvider } from '@shears/tools-terminal';
import { createFileTools } from '../src/index.js';

const N = Number(process.env.BENCH_N ?? 30);
const LABEL = process.env.BENCH_LABEL ?? 'current';

async function bench(backend: string, sandbox: SandboxV1): Promise<void> {
  const context: ToolContext = {
    sandbox,
    taskId: 'bench',
    rolloutId: 'bench',
    signal: new AbortController().signal,
    logger: silentLogger,
    state: new Map(),
  };
  const tools = new Map(createFileTools().map((tool) => [tool.name, tool as ToolV1]));
  const lines = Array.from(
    { length: 2000 },
    (_, index) => `const value${index} = compute(${index}); // line ${index}`,
  ).join('\n');
  await tools.get('write_file')!.execute({ path: 'src/big.ts', content: lines }, context);
  for (let index = 0; index < 50; index++)
    await tools
      .get('write_file')!
      .execute({ path: `src/mod${index}.ts`, content: `export const x${index} = ${index};\n` }, context);

  const cases: Array<[string, string, () => Record<string, unknown>]> = [
    ['read_file 500 lines', 'read_file', () => ({ path: 'src/big.ts' })],
    ['write_file 2 KB', 'write_file', () => ({ path: 'out/a.txt', content: 'x'.repeat(2048) })],
    ['write_file 64 KB', 'write_file', () => ({ path: 'out/b.txt', content: 'y'.repeat(65536) })],
    [
      'patch replace',
      'patch',
      () => ({ path: 'src/big.ts', old_string: 'compute(1000);', new_string: 'compute(1000); ' }),
    ],
    ['search_files content', 'search_files', () => ({ pattern: 'compute\\(19\\d\\d\\)', path: 'src' })],
    ['search_files files', 'search_files', () => ({ pattern: '*.ts', target: 'files', path: 'src' })],
  ];
  for (const [label, name, args] of cases) {
    const tool = tools.get(name)!;
    const samples: number[] = [];
    for (let index = 0; index < N; index++) {
      let input = args();
      if (name === 'patch' && index % 2 === 1)
        input = { ...input, old_string: input.new_string, new_string: input.old_string };
      const started = performance.now();
      // A fresh state per call: the repeated-read guard would (rightly) block identical reads.
      const output = await tool.execute(tool.inputSchema.parse(input), { ...context, state: new Map() });
      samples.push(performance.now() - started);
      if (typeof output !== 'string' && output.isError) throw new Error(`${label}: ${output.content}`);
    }
    samples.sort((a, b) => a - b);
    const at = (q: number) =>
      Number(samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!.toFixed(2));
    console.log(
      JSON.stringify({
        bench: 'tools-file',
        label: LABEL,
        backend,
        case: label,
        n: N,
        medianMs: at(0.5),
        p90Ms: at(0.9),
        loadavg1: Number((loadavg()[0] ?? 0).toFixed(2)),
      }),
    );
  }
}

async function run(backend: string, provider: SandboxProviderV1): Promise<void> {
  const sandbox = await provider.acquire();
  try {
    await bench(backend, sandbox);
  } finally {
    await sandbox.dispose();
    await provider.close();
  }
}

await run('local', createLocalSandboxProvider());
if (process.env.BENCH_DOCKER !== '0') {
  // The test run's Docker service: SHEARS_TEST_DOCKER_HOST if set, else a private dockerd; busybox image.
  const docker = await startDockerService();
  if (!docker) throw new Error('no Docker daemon for the docker figures (set BENCH_DOCKER=0 to skip them)');
  try {
    const { SHEARS_TEST_DOCKER_HOST: host, SHEARS_TEST_DOCKER_IMAGE: image } = docker.env;
    await run('docker', createDockerSandboxProvider({ hosts: [host!], image: image! }));
  } finally {
    await docker.teardown();
  }
}
