// `/metrics` of a `serve` or `train` worker, for Prometheus: the same groups the metrics stream
// records, as counters (groups, rollouts by outcome, tool calls and errors per tool, tokens,
// latency by part, judge failures) and gauges (the last group's reward mean and pass rate, the
// trainer step and queue the trajectory API reported). prom-client does the exposition format.
// Labels stay bounded (outcome, tool, part, worker): per-task numbers are in the JSONL stream.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ScoredGroupRecord } from '@shears/core';
import { Counter, Gauge, Registry } from 'prom-client';
import type { SuccessRule } from '../stats.js';
import { type GroupLoop, type RunMetrics, type TrainerStatus, tallyGroup } from './run-metrics.js';

export interface PrometheusEndpoint extends RunMetrics {
  /** `http://host:port/metrics`. */
  readonly url: string;
  /** Stops the HTTP server. */
  stop(): Promise<void>;
}

const LATENCY_PARTS = ['model', 'tools', 'sandboxAcquire', 'reward', 'judges', 'sandboxRelease'] as const;

export async function startPrometheusEndpoint(options: {
  host: string;
  port: number;
  command: 'serve' | 'train';
  success: SuccessRule;
}): Promise<PrometheusEndpoint> {
  const registry = new Registry();
  registry.setDefaultLabels({ command: options.command });
  const labelNames = ['worker'] as const;
  const groups = new Counter({
    name: 'shears_worker_groups_total',
    help: 'Groups finished.',
    labelNames,
    registers: [registry],
  });
  const zeroSignal = new Counter({
    name: 'shears_worker_zero_signal_groups_total',
    help: 'Groups whose counted scores are all equal (or none was counted).',
    labelNames,
    registers: [registry],
  });
  const rollouts = new Counter({
    name: 'shears_worker_rollouts_total',
    help: 'Rollouts by outcome.',
    labelNames: ['worker', 'outcome'],
    registers: [registry],
  });
  const toolCalls = new Counter({
    name: 'shears_worker_tool_calls_total',
    help: 'Tool calls by tool.',
    labelNames: ['worker', 'tool'],
    registers: [registry],
  });
  const toolErrors = new Counter({
    name: 'shears_worker_tool_errors_total',
    help: 'Tool calls that ended in an error, by tool.',
    labelNames: ['worker', 'tool'],
    registers: [registry],
  });
  const tokens = new Counter({
    name: 'shears_worker_tokens_total',
    help: 'Tokens by direction (prompt, completion), as the server reported them.',
    labelNames: ['worker', 'direction'],
    registers: [registry],
  });
  const latency = new Counter({
    name: 'shears_worker_latency_seconds_total',
    help: 'Time spent per part of a rollout, summed over rollouts.',
    labelNames: ['worker', 'part'],
    registers: [registry],
  });
  const judgeFailures = new Counter({
    name: 'shears_worker_judge_failures_total',
    help: 'Failed judge verdicts, by kind.',
    labelNames: ['worker', 'kind'],
    registers: [registry],
  });
  const rewardMean = new Gauge({
    name: 'shears_worker_last_group_reward_mean',
    help: "Mean reward of the last finished group's counted rollouts.",
    labelNames,
    registers: [registry],
  });
  const passRate = new Gauge({
    name: 'shears_worker_last_group_pass_rate',
    help: "Share of the last finished group's counted rollouts that solved their task.",
    labelNames,
    registers: [registry],
  });
  const trainerStep = new Gauge({
    name: 'shears_worker_trainer_step',
    help: 'Trainer step the trajectory API last reported.',
    registers: [registry],
  });
  const queueSize = new Gauge({
    name: 'shears_worker_api_queue_groups',
    help: "Groups queued on the trajectory API ahead of the trainer, in this env's view.",
    registers: [registry],
  });
  const lag = new Gauge({
    name: 'shears_worker_last_group_lag_steps',
    help: 'Trainer steps taken while the last group ran.',
    labelNames,
    registers: [registry],
  });
  let step: number | undefined;

  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}/metrics`,
    group(
      record: ScoredGroupRecord,
      groupOptions: { worker?: string; trainerAtStart?: TrainerStatus; loop?: GroupLoop } = {},
    ) {
      // A replayed group's rollouts were counted when they ran; the stream (`loop.replayGroups`) counts replays.
      if (groupOptions.loop?.replayOf !== undefined) return;
      const worker = groupOptions.worker ?? '';
      const tally = tallyGroup(record, options.success);
      groups.inc({ worker });
      if (tally.zeroSignal) zeroSignal.inc({ worker });
      for (const [outcome, count] of Object.entries(tally.outcomes)) rollouts.inc({ worker, outcome }, count);
      for (const [tool, counts] of tally.tools) {
        toolCalls.inc({ worker, tool }, counts.calls);
        if (counts.errors) toolErrors.inc({ worker, tool }, counts.errors);
      }
      tokens.inc({ worker, direction: 'prompt' }, tally.promptTokens);
      tokens.inc({ worker, direction: 'completion' }, tally.completionTokens);
      for (const part of LATENCY_PARTS) latency.inc({ worker, part }, tally.latency[part] / 1000);
      for (const [kind, count] of Object.entries(tally.judges.failures))
        judgeFailures.inc({ worker, kind }, count);
      if (tally.rewards.length) {
        rewardMean.set(
          { worker },
          tally.rewards.reduce((sum, reward) => sum + reward, 0) / tally.rewards.length,
        );
        passRate.set({ worker }, tally.passed / tally.counted);
      }
      const start = groupOptions.trainerAtStart;
      if (start)
        lag.set({ worker }, Math.max(step ?? start.current_step, start.current_step) - start.current_step);
    },
    trainerStatus(status) {
      step = Math.max(step ?? status.current_step, status.current_step);
      trainerStep.set(step);
      queueSize.set(status.queue_size);
    },
    // Evaluations and loop events are rows of the metrics stream only; Prometheus gets no series for them.
    event() {},
    close() {},
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Both streams at once: the JSONL stream and the Prometheus endpoint see every group and status. */
export function teeMetrics(...all: readonly RunMetrics[]): RunMetrics {
  return {
    group: (record, options) => {
      for (const metrics of all) metrics.group(record, options);
    },
    trainerStatus: (status) => {
      for (const metrics of all) metrics.trainerStatus(status);
    },
    event: (row) => {
      for (const metrics of all) metrics.event(row);
    },
    close: () => {
      for (const metrics of all) metrics.close();
    },
  };
}
