// The metrics of a command that feeds a trainer (`serve`, `train`): the metrics JSONL when
// `run.metrics` is on, and the Prometheus endpoint when `run.prometheus` is set, as one RunMetrics.
import { createJsonlWriter, type JsonlWriter } from '../run/run-output.js';
import type { CommandContext } from '../runtime.js';
import { successRule } from '../stats.js';
import { type PrometheusEndpoint, startPrometheusEndpoint, teeMetrics } from './prometheus-metrics.js';
import { createRunMetrics, NO_METRICS, type RunMetrics } from './run-metrics.js';
import { openWandb, type WandbRun } from './wandb.js';

export interface WorkerMetrics {
  metrics: RunMetrics;
  /** Stops the endpoint and closes the stream; safe to call once whatever was opened. */
  close(): Promise<void>;
}

export async function openWorkerMetrics(
  context: CommandContext,
  options: {
    command: 'serve' | 'train';
    metricsPath: string | undefined;
    force: boolean;
    notePrefix: string;
  },
): Promise<WorkerMetrics> {
  const { config, io } = context;
  const success = successRule(config.run.success_threshold);
  let metricsWriter: JsonlWriter | undefined;
  let metrics: RunMetrics = NO_METRICS;
  let prometheus: PrometheusEndpoint | undefined;
  let wandb: WandbRun | undefined;
  const close = async () => {
    await prometheus?.stop();
    metrics.close();
    metricsWriter?.close();
    // After the metrics file is closed: W&B never holds it up.
    await wandb?.finish();
  };
  try {
    wandb = await openWandb(context, options.command);
    if (options.metricsPath || wandb) {
      if (options.metricsPath)
        metricsWriter = createJsonlWriter(options.metricsPath, context.redact, {
          mode: options.force ? 'replace' : 'new',
          cwd: io.cwd,
        });
      metrics = createRunMetrics({
        writer: wandb ? wandb.writer(metricsWriter) : metricsWriter!,
        command: options.command,
        success,
        windowSeconds: config.run.metrics_window_seconds,
      });
      if (wandb) metrics = teeMetrics(metrics, wandb.rollouts);
    }
    if (config.run.prometheus) {
      prometheus = await startPrometheusEndpoint({
        ...config.run.prometheus,
        command: options.command,
        success,
      });
      io.stderr(`${options.notePrefix}metrics for Prometheus at ${prometheus.url}\n`);
      metrics = teeMetrics(metrics, prometheus);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { metrics, close };
}
