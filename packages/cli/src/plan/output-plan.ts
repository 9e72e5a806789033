// Where a run's records and files go: the JSONL every group is written to and the files beside it
// (the run record, the report, the evaluation summary, the metrics stream), whether existing ones
// may be replaced (--force) or continued (--resume); the trajectory sinks the config names
// (`sinks`); and the metrics the run exposes (the stream, Prometheus, W&B). Settings a command
// would ignore are refused here, before anything starts.
import { resolve } from 'node:path';
import { ConfigError } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';
import { checkWandbConfig } from './wandb-plan.js';

export type RunCommand = 'process' | 'evaluate' | 'serve' | 'train';

export interface OutputPlan {
  /** The JSONL every group goes to (run.out; evaluate.out for evaluate), absolute. */
  out: string;
  /** `<out>.run.json`: which run wrote the JSONL (`process`, `evaluate`: the commands that resume). */
  identity: string | undefined;
  /** `<out>.summary.json` (`evaluate`). */
  summary: string | undefined;
  /** `<out>.html` unless run.report is off. */
  report: string | undefined;
  /** `<out>.metrics.jsonl` unless run.metrics is off. */
  metrics: string | undefined;
  /** --force: existing outputs are replaced. */
  force: boolean;
  /** --resume: continue the run in `out` when there is one. */
  resume: boolean;
  /** How to write elsewhere instead, for messages (`--out OTHER.jsonl`). */
  elsewhere: string;
}

/** One `sinks` entry: a trajectory sink from a loaded plugin, with its settings. */
export interface SinkRequest {
  id: string;
  settings: Record<string, unknown>;
  /** Where it sits in the config (`sinks[0]`), for errors. */
  field: string;
}

export interface MetricsPlan {
  /** Seconds per window row of the metrics stream. */
  windowSeconds: number;
  /** `serve`, `train`: GET /metrics for Prometheus. */
  prometheus: { port: number; host: string } | undefined;
  /** The `wandb` section (checked against the environment). */
  wandb: NonNullable<ShearsConfig['wandb']> | undefined;
}

/** `runs/demo.jsonl` → `runs/demo.metrics.jsonl`. */
export function metricsPathFor(jsonlPath: string): string {
  return `${jsonlPath.replace(/\.jsonl?$/i, '')}.metrics.jsonl`;
}

/** `runs/demo.jsonl` → `runs/demo.html`. */
export function reportPathFor(jsonlPath: string): string {
  return `${jsonlPath.replace(/\.jsonl?$/i, '')}.html`;
}

/** `runs/x.jsonl` → `runs/x.run.json`. */
export function identityPathFor(jsonlPath: string): string {
  return `${jsonlPath.replace(/\.jsonl?$/i, '')}.run.json`;
}

function resolveOutputPlan(
  config: ShearsConfig,
  options: { command: RunCommand; cwd: string; flags: { force?: boolean; resume?: boolean } },
): OutputPlan {
  const { command } = options;
  const out = resolve(options.cwd, command === 'evaluate' ? config.evaluate.out : config.run.out);
  const resumable = command === 'process' || command === 'evaluate';
  return {
    out,
    identity: resumable ? identityPathFor(out) : undefined,
    summary: command === 'evaluate' ? `${out.replace(/\.jsonl?$/i, '')}.summary.json` : undefined,
    report: config.run.report ? reportPathFor(out) : undefined,
    metrics: config.run.metrics ? metricsPathFor(out) : undefined,
    force: options.flags.force === true,
    resume: resumable && options.flags.resume === true,
    elsewhere: command === 'evaluate' ? '--evaluate.out OTHER.jsonl' : '--out OTHER.jsonl',
  };
}

/** `sinks`: each entry a sink id from the loaded plugins, or { id, settings }. */
function resolveSinks(config: ShearsConfig): SinkRequest[] {
  return config.sinks.map((entry, index) => ({
    ...(typeof entry === 'string' ? { id: entry, settings: {} } : entry),
    field: `sinks[${index}]`,
  }));
}

function resolveMetrics(
  config: ShearsConfig,
  options: { command: RunCommand; env: Record<string, string | undefined> },
): MetricsPlan {
  const { command } = options;
  // run.prometheus belongs to the long-running commands; a short run refuses it rather than ignore it.
  if (config.run.prometheus && (command === 'process' || command === 'evaluate'))
    throw new ConfigError({
      message: `run.prometheus: only \`shears serve\` and \`shears train\` expose /metrics; \`shears ${command}\` writes the metrics stream (<out>.metrics.jsonl) instead. Remove run.prometheus for this command`,
      issues: [{ path: 'run.prometheus', message: `not read by ${command}`, value: config.run.prometheus }],
    });
  checkWandbConfig(config, options.env);
  return {
    windowSeconds: config.run.metrics_window_seconds,
    prometheus: config.run.prometheus,
    wandb: config.wandb,
  };
}

/** Where the run's records and files go, and its metrics. */
export function resolveOutput(
  config: ShearsConfig,
  options: {
    command: RunCommand;
    cwd: string;
    flags: { force?: boolean; resume?: boolean };
    env: Record<string, string | undefined>;
  },
): { output: OutputPlan; sinks: SinkRequest[]; metrics: MetricsPlan } {
  return {
    output: resolveOutputPlan(config, options),
    sinks: resolveSinks(config),
    metrics: resolveMetrics(config, options),
  };
}
