// Benchmark of the docker sandbox: acquire latency cold (create + start + shell) vs. from the warm
// pool, and per-command latency over the persistent shell (without and with a timeout, i.e. with
// the in-shell watchdog the terminal tool always starts) vs. one `docker exec` per command.
// Prints one JSON line per metric (milliseconds). Uses SHEARS_TEST_DOCKER_HOST/IMAGE when set,
// otherwise starts a private dockerd and builds the busybox image like the test set-up does.
//   pnpm exec tsx packages/tools-terminal/bench/sandbox-docker.ts
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { ensureTestImage, startDockerd } from '@shears/test-infra';
import Dockerode from 'dockerode';
import { resolveDockerConnection } from '../src/docker/docker-hosts.js';
import type { DockerSandbox } from '../src/docker/docker-sandbox.js';
import { createDockerSandboxProvider } from '../src/docker/docker-sandbox-provider.js';

const COLD = Number(process.env.BENCH_COLD ?? 20);
const WARM = Number(process.env.BENCH_WARM ?? 20);
const COMMANDS = Number(process.env.BENCH_COMMANDS ?? 300);
const EXECS = Number(process.env.BENCH_EXECS ?? 50);

function summarise(metric: string, samples: number[], extra: Record<string, unknown> = {}): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  const round = (value: number) => Math.round(value * 100) / 100;
  console.log(
    JSON.stringify({
      bench: 'sandbox-docker',
      metric,
      unit: 'ms',
      n: samples.length,
      p50: round(at(0.5)),
      p95: round(at(0.95)),
      mean: round(samples.reduce((sum, value) => sum + value, 0) / samples.length),
      // Latencies here depend heavily on machine load; record it next to the figures.
      loadavg1: round(loadavg()[0] ?? 0),
      ...extra,
    }),
  );
}

async function readAll(stream: NodeJS.ReadableStream): Promise<void> {
  for await (const _chunk of stream as AsyncIterable<unknown>) {
    // drain
  }
}

async function main(): Promise<void> {
  let host = process.env.SHEARS_TEST_DOCKER_HOST;
  let stop: (() => Promise<void>) | undefined;
  if (!host) {
    const daemon = await startDockerd();
    host = daemon.host;
    stop = daemon.stop;
  }
  try {
    const image = process.env.SHEARS_TEST_DOCKER_IMAGE ?? (await ensureTestImage({ host }));
    const settings = { hosts: [host], image, limits: { memoryMb: 256, cpus: 1, pids: 128 } };

    // Cold: every acquire creates and starts a container and attaches the shell.
    const cold = createDockerSandboxProvider(settings);
    const coldSamples: number[] = [];
    for (let index = 0; index < COLD; index += 1) {
      const started = performance.now();
      const sandbox = await cold.acquire();
      coldSamples.push(performance.now() - started);
      await sandbox.dispose();
    }
    await cold.close();
    summarise('acquire_cold', coldSamples);

    // Warm: the pool holds pre-started containers with their shell attached.
    const warm = createDockerSandboxProvider({ ...settings, poolSize: 2 });
    await warm.warm();
    const warmSamples: number[] = [];
    for (let index = 0; index < WARM; index += 1) {
      const started = performance.now();
      const sandbox = await warm.acquire();
      warmSamples.push(performance.now() - started);
      await sandbox.dispose();
      await warm.warm(); // refill before the next sample so each one is a pool hit
    }
    summarise('acquire_warm', warmSamples, { poolSize: 2 });

    // Per command: the persistent shell vs. a fresh `docker exec` for each command.
    const sandbox = (await warm.acquire()) as DockerSandbox;
    for (let index = 0; index < 10; index += 1) await sandbox.exec('true'); // warm-up
    const shellSamples: number[] = [];
    for (let index = 0; index < COMMANDS; index += 1) {
      const started = performance.now();
      await sandbox.exec('echo hi');
      shellSamples.push(performance.now() - started);
    }
    summarise('command_persistent_shell', shellSamples, { command: 'echo hi' });
    // The terminal tool always passes a timeout, which starts the in-shell watchdog: the figure a
    // rollout's commands actually see.
    const timeoutSamples: number[] = [];
    for (let index = 0; index < COMMANDS; index += 1) {
      const started = performance.now();
      await sandbox.exec('echo hi', { timeoutMs: 60_000 });
      timeoutSamples.push(performance.now() - started);
    }
    summarise('command_persistent_shell_with_timeout', timeoutSamples, {
      command: 'echo hi',
      timeoutMs: 60_000,
    });

    const client = new Dockerode(resolveDockerConnection(host) as Dockerode.DockerOptions);
    const container = client.getContainer(sandbox.container.id);
    const execSamples: number[] = [];
    for (let index = 0; index < EXECS; index += 1) {
      const started = performance.now();
      const exec = await container.exec({
        Cmd: ['sh', '-c', 'echo hi'],
        AttachStdout: true,
        AttachStderr: true,
      });
      await readAll(await exec.start({ hijack: true, stdin: false }));
      await exec.inspect(); // the exit code needs one more round trip
      execSamples.push(performance.now() - started);
    }
    summarise('command_docker_exec', execSamples, { command: 'echo hi' });
    await sandbox.dispose();
    await warm.close();
  } finally {
    await stop?.();
  }
}

await main();
