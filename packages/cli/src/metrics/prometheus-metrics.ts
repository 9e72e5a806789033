// `/metrics` of a `serve` or `train` worker, for Prometheus: the same groups the metrics stream
// records, as counters (groups, rollouts by outcome, tool calls and errors per tool, tokens,
// latency by part, judge failures) and gauges (the last group's reward mean and pass rate, the
// trainer step and queue the trajectory API reported), and the improvement loop's rows: evaluations
// during training (pass@k and mean score with their intervals, per eval env) and loop events
// (curriculum moves, safety shifts and recoveries, the data mix in force, replayed groups).
// prom-client does the exposition format. Labels stay bounded (outcome, tool, part, worker, eval
// env, k, event, mix source): per-task numbers are in the JSONL stream.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ScoredGroupRecord } from '@shears/core';
import { Counter, Gauge, Registry } from 'prom-client';
import type { SuccessRule } from '../stats.js';
import {
  type GroupLoop,
  type LoopRowInput,
  type RunMetrics,
  type TrainerStatus,
  tallyGroup,
} from './run-metrics.js';

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
  // Evaluations during training (shears.metrics.eval rows): the latest one per eval env.
  const evalPassAtK = new Gauge({
    name: 'shears_worker_eval_pass_at_k',
    help: 'pass@k of the latest evaluation during training, averaged over its tasks (unbiased estimator), by eval env and k.',
    labelNames: ['env', 'k'],
    registers: [registry],
  });
  const evalPassAt1Bound = new Gauge({
    name: 'shears_worker_eval_pass_at_1_interval',
    help: 'Bootstrap interval of pass@1 over the tasks of the latest evaluation (bound: low, high).',
    labelNames: ['env', 'bound'],
    registers: [registry],
  });
  const evalMeanScore = new Gauge({
    name: 'shears_worker_eval_mean_score',
    help: 'Mean score over the tasks of the latest evaluation during training.',
    labelNames: ['env'],
    registers: [registry],
  });
  const evalMeanScoreBound = new Gauge({
    name: 'shears_worker_eval_mean_score_interval',
    help: 'Bootstrap interval of the mean score of the latest evaluation (bound: low, high).',
    labelNames: ['env', 'bound'],
    registers: [registry],
  });
  const evalStep = new Gauge({
    name: 'shears_worker_eval_step',
    help: 'Trainer step the latest evaluation was started at.',
    labelNames: ['env'],
    registers: [registry],
  });
  const evalComplete = new Gauge({
    name: 'shears_worker_eval_complete',
    help: '1 when every task of the latest evaluation got a complete result, 0 when its numbers cover part of the set.',
    labelNames: ['env'],
    registers: [registry],
  });
  const evaluations = new Counter({
    name: 'shears_worker_evaluations_total',
    help: 'Evaluations during training, by eval env and whether they were complete.',
    labelNames: ['env', 'complete'],
    registers: [registry],
  });
  // Loop events (shears.metrics.loop rows) and the replayed groups.
  const loopEvents = new Counter({
    name: 'shears_worker_loop_events_total',
    help: 'Improvement-loop events: curriculum_advanced, curriculum_fell_back, safety_regressed, safety_recovered.',
    labelNames: ['event'],
    registers: [registry],
  });
  const curriculumLevel = new Gauge({
    name: 'shears_worker_curriculum_level',
    help: 'Curriculum level (a numeric difficulty) of the latest group or curriculum event; a named level is in shears_worker_curriculum_level_info.',
    registers: [registry],
  });
  const curriculumLevelInfo = new Gauge({
    name: 'shears_worker_curriculum_level_info',
    help: 'The curriculum level now in force as a label (1 for the current level, 0 for earlier ones).',
    labelNames: ['level'],
    registers: [registry],
  });
  const safetyRegressed = new Gauge({
    name: 'shears_worker_safety_regressed',
    help: '1 while the safety monitor has shifted the data mix toward the capability data, 0 after a recovery.',
    registers: [registry],
  });
  const safetyScore = new Gauge({
    name: 'shears_worker_safety_score',
    help: 'The score the safety monitor last acted on (its event), with its baseline and tolerance in the sibling series.',
    registers: [registry],
  });
  const safetyBaseline = new Gauge({
    name: 'shears_worker_safety_baseline',
    help: "The safety monitor's baseline score.",
    registers: [registry],
  });
  const safetyTolerance = new Gauge({
    name: 'shears_worker_safety_tolerance',
    help: 'The safety monitor tolerance: a score below tolerance x baseline is a regression.',
    registers: [registry],
  });
  const mixWeight = new Gauge({
    name: 'shears_worker_data_mix_weight',
    help: 'Data mix weights in force after the latest safety event, by source (train, capability).',
    labelNames: ['source'],
    registers: [registry],
  });
  const replayedGroups = new Counter({
    name: 'shears_worker_replayed_groups_total',
    help: 'Replayed groups sent to the trainer (not in shears_worker_groups_total: their rollouts ran earlier). Replay share: replayed / (replayed + groups).',
    labelNames,
    registers: [registry],
  });
  const capabilityGroups = new Counter({
    name: 'shears_worker_capability_groups_total',
    help: "Groups of loop.safety's capability data (also counted in shears_worker_groups_total).",
    labelNames,
    registers: [registry],
  });
  const trainerStepValue = new Gauge({
    name: 'shears_trainer_step_value',
    help: "The reference trainer's last optimiser step, by quantity: loss, kl and entropy (per token), reward_mean (the batch's mean score)",
    labelNames: ['quantity'],
    registers: [registry],
  });
  let step: number | undefined;
  let shownLevel: string | undefined;
  const passAtKShown = new Map<string, Set<string>>();
  const setLevel = (level: number | string | undefined) => {
    if (level === undefined) return;
    if (typeof level === 'number') curriculumLevel.set(level);
    const name = String(level);
    if (name === shownLevel) return;
    if (shownLevel !== undefined) curriculumLevelInfo.set({ level: shownLevel }, 0);
    curriculumLevelInfo.set({ level: name }, 1);
    shownLevel = name;
  };
  const event = (row: LoopRowInput) => {
    if (row.kind === 'shears.metrics.trainer') {
      const quantities = { loss: row.loss, kl: row.kl, entropy: row.entropy, reward_mean: row.rewardMean };
      for (const [quantity, value] of Object.entries(quantities))
        if (value !== null && (!row.skipped || quantity === 'reward_mean'))
          trainerStepValue.set({ quantity }, value);
      return;
    }
    if (row.kind === 'shears.metrics.eval') {
      const env = row.env;
      evaluations.inc({ env, complete: String(row.complete) });
      evalStep.set({ env }, row.step);
      evalComplete.set({ env }, row.complete ? 1 : 0);
      // A k missing from this evaluation (not finite) must not keep an older evaluation's value.
      for (const k of passAtKShown.get(env) ?? []) evalPassAtK.remove({ env, k });
      const shown = new Set<string>();
      for (const [key, value] of Object.entries(row.passAtK))
        if (Number.isFinite(value)) {
          const k = key.replace(/^pass@/, '');
          evalPassAtK.set({ env, k }, value);
          shown.add(k);
        }
      passAtKShown.set(env, shown);
      const setOrRemove = (
        gauge: Gauge<string>,
        labels: Record<string, string>,
        value: number | null | undefined,
      ) => {
        if (typeof value === 'number' && Number.isFinite(value)) gauge.set(labels, value);
        else gauge.remove(labels);
      };
      setOrRemove(evalMeanScore, { env }, row.meanScore.mean);
      setOrRemove(evalMeanScoreBound, { env, bound: 'low' }, row.meanScore.low);
      setOrRemove(evalMeanScoreBound, { env, bound: 'high' }, row.meanScore.high);
      setOrRemove(evalPassAt1Bound, { env, bound: 'low' }, row.passAt1Interval?.low);
      setOrRemove(evalPassAt1Bound, { env, bound: 'high' }, row.passAt1Interval?.high);
      return;
    }
    loopEvents.inc({ event: row.event });
    if (row.event === 'curriculum_advanced' || row.event === 'curriculum_fell_back') {
      setLevel(row.to);
      return;
    }
    safetyRegressed.set(row.event === 'safety_regressed' ? 1 : 0);
    if (row.score !== undefined) safetyScore.set(row.score);
    if (row.baseline !== undefined) safetyBaseline.set(row.baseline);
    if (row.tolerance !== undefined) safetyTolerance.set(row.tolerance);
    for (const [source, weight] of Object.entries(row.weights ?? {})) mixWeight.set({ source }, weight);
  };

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
      const worker = groupOptions.worker ?? '';
      // A replayed group's rollouts were counted when they ran: only the replay is counted now.
      if (groupOptions.loop?.replayOf !== undefined) {
        replayedGroups.inc({ worker });
        return;
      }
      if (groupOptions.loop?.source === 'capability') capabilityGroups.inc({ worker });
      setLevel(groupOptions.loop?.curriculumLevel);
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
    event,
    close() {},
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
