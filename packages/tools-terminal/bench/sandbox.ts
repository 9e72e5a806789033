// Benchmark of the local and ssh sandboxes: acquire latency (acquire, and acquire + first command
// which opens the shell session), a whole life without commands (acquire, writeFile, readFile,
// dispose: time and CPU), and per-command latency over the persistent shell vs. a fresh
// process (local) or a fresh exec channel on an open connection (ssh) per command. Prints one
// JSON line per metric (milliseconds); then runs bench/sandbox-docker.ts when it exists.
//   pnpm -F @shears/tools-terminal bench
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { SandboxProviderV1 } from '@shears/core';
import { startSshService } from '@shears/test-infra';
import { createLocalSandboxProvider } from '../src/local/local-sandbox-provider.js';
import { createSshSandboxProvider } from '../src/ssh/ssh-sandbox-provider.js';

const ACQUIRES = Number(process.env.BENCH_ACQUIRES ?? 20);
const COMMANDS = Number(process.env.BENCH_COMMANDS ?? 300);
const FRESH = Number(process.env.BENCH_FRESH ?? 100);

function summarise(
  backend: string,
  metric: string,
  samples: number[],
  extra: Record<string, unknown> = {},
): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  const round = (value: number) => Math.round(value * 100) / 100;
  console.log(
    JSON.stringify({
      bench: 'sandbox',
      backend,
      metric,
      unit: 'ms',
      n: samples.length,
      p50: round(at(0.5)),
      p95: round(at(0.95)),
      mean: round(samples.reduce((sum, value) => sum + value, 0) / samples.length),
      ...extra,
    }),
  );
}

async function time(body: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await body();
  return performance.now() - started;
}

async function benchProvider(
  backend: string,
  provider: SandboxProviderV1,
  fresh: () => Promise<unknown>,
): Promise<void> {
  const acquire: number[] = [];
  const ready: number[] = [];
  for (let index = 0; index < ACQUIRES; index += 1) {
    const started = performance.now();
    const sandbox = await provider.acquire();
    acquire.push(performance.now() - started);
    await sandbox.exec('true');
    ready.push(performance.now() - started);
    await sandbox.dispose();
  }
  summarise(backend, 'acquire', acquire);
  summarise(backend, 'acquire_to_first_command', ready);

  // A sandbox's whole life when no command runs (files placed and read as data), with its CPU.
  const lifecycle: number[] = [];
  const cpuBefore = process.cpuUsage();
  for (let index = 0; index < ACQUIRES; index += 1) {
    lifecycle.push(
      await time(async () => {
        const sandbox = await provider.acquire();
        await sandbox.writeFile('words.txt', 'one two three');
        await sandbox.readFile('words.txt');
        await sandbox.dispose();
      }),
    );
  }
  const cpu = process.cpuUsage(cpuBefore);
  summarise(backend, 'lifecycle_without_commands', lifecycle, {
    cpu_ms_per_sandbox: Math.round((cpu.user + cpu.system) / ACQUIRES / 10) / 100,
  });

  const sandbox = await provider.acquire();
  for (let index = 0; index < 10; index += 1) await sandbox.exec('true');
  const persistent: number[] = [];
  for (let index = 0; index < COMMANDS; index += 1) persistent.push(await time(() => sandbox.exec('true')));
  summarise(backend, 'command_persistent_shell', persistent, { command: 'true' });
  const withTimeout: number[] = [];
  for (let index = 0; index < COMMANDS; index += 1)
    withTimeout.push(await time(() => sandbox.exec('true', { timeoutMs: 60_000 })));
  summarise(backend, 'command_persistent_shell_with_timeout', withTimeout, { command: 'true' });
  const echo: number[] = [];
  for (let index = 0; index < COMMANDS; index += 1)
    echo.push(await time(() => sandbox.exec('echo hello; echo err >&2')));
  summarise(backend, 'command_persistent_shell_output', echo, { command: 'echo hello; echo err >&2' });
  await sandbox.dispose();

  const spawned: number[] = [];
  for (let index = 0; index < FRESH; index += 1) spawned.push(await time(fresh));
  summarise(backend, backend === 'local' ? 'command_fresh_process' : 'command_fresh_channel', spawned, {
    command: 'true',
  });
  await provider.close();
}

async function main(): Promise<void> {
  console.log(
    JSON.stringify({
      bench: 'sandbox',
      event: 'start',
      cpus: (await import('node:os')).cpus().length,
      loadavg: (await import('node:os')).loadavg(),
    }),
  );

  await benchProvider(
    'local',
    createLocalSandboxProvider(),
    () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn('/bin/sh', ['-c', 'true'], { stdio: 'pipe' });
        child.once('error', reject);
        child.once('close', () => resolve());
      }),
  );

  const ssh = await startSshService();
  const env =
    ssh?.env ?? (process.env.SHEARS_TEST_SSH_HOST ? (process.env as Record<string, string>) : undefined);
  if (!env) {
    console.log(
      JSON.stringify({
        bench: 'sandbox',
        backend: 'ssh',
        skipped: 'no sshd (needs root and openssh-server)',
      }),
    );
  } else {
    try {
      const settings = {
        host: env.SHEARS_TEST_SSH_HOST!,
        port: Number(env.SHEARS_TEST_SSH_PORT),
        username: env.SHEARS_TEST_SSH_USER!,
        privateKeyPath: env.SHEARS_TEST_SSH_KEY!,
        knownHostsPath: env.SHEARS_TEST_SSH_KNOWN_HOSTS!,
        root: '/tmp/shears-ssh-bench',
      };
      const { Client } = await import('ssh2');
      const client = new Client();
      await new Promise<void>((resolve, reject) => {
        client.once('ready', () => resolve());
        client.once('error', reject);
        client.connect({
          host: settings.host,
          port: settings.port,
          username: settings.username,
          privateKey: readFileSync(settings.privateKeyPath),
        });
      });
      await benchProvider(
        'ssh',
        createSshSandboxProvider(settings),
        () =>
          new Promise<void>((resolve, reject) => {
            client.exec('true', (error, channel) => {
              if (error) return reject(error);
              channel.resume();
              channel.once('close', () => resolve());
            });
          }),
      );
      client.end();
    } finally {
      await ssh?.teardown();
    }
  }

  const dockerBench = fileURLToPath(new URL('./sandbox-docker.ts', import.meta.url));
  if (existsSync(dockerBench) && process.env.BENCH_SKIP_DOCKER !== '1') await import('./sandbox-docker.js');
}

await main();
