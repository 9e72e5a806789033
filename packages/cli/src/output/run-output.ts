// Everything a run writes, opened once from its plan for every command that runs groups: the
// guard (no output is overwritten unless --force; --resume continues only the same run), the
// trajectory sinks every group goes through (the run's JSONL, the `sinks` the config names, W&B's
// rollouts table), the run record, and the metrics stream (its JSONL, W&B, Prometheus).
//
// `openRunOutput` checks and creates before anything runs (a sink or W&B run that cannot start
// refuses the run before a rollout is spent); `start` opens the files once the run's parts are up;
// `close` closes the metrics, then every sink, W&B last (it never holds the run's files up).
import { existsSync, rmSync } from 'node:fs';
import { relative } from 'node:path';
import { InvalidArgumentError, type JsonlSink, type ScoredGroupRecord } from '@shears/core';
import { type PrometheusEndpoint, startPrometheusEndpoint } from '../metrics/prometheus-metrics.js';
import { createRunMetrics, NO_METRICS, type RunMetrics, teeMetrics } from '../metrics/run-metrics.js';
import { openWandb, type WandbRun } from '../metrics/wandb.js';
import type { RunPlan } from '../plan/run-plan.js';
import type { CreatedSinks } from '../runtime/registry.js';
import {
  appearedError,
  createJsonlWriter,
  fileError,
  guardOutputs,
  type JsonlWriter,
  writeOutputFile,
} from './output-files.js';
import { checkResumable, identityFile, readResumedGroups, runIdentity } from './run-identity.js';
import { createRunSinks } from './run-sinks.js';

export interface RunOutput {
  /** This run continues the run in the plan's `out` (--resume, and a run there to continue). */
  readonly resuming: boolean;
  /** The groups of the run being resumed, as its JSONL has them (none on a new run). */
  readonly previous: readonly ScoredGroupRecord[];
  /** How the run's JSONL is opened: new, replace (--force), append (the run being resumed). */
  readonly mode: 'new' | 'replace' | 'append';
  /** The run metrics stream (records nothing until `start`, and when every kind of it is off). */
  readonly metrics: RunMetrics;
  /**
   * Writes the run record, opens the run's sinks (a resumed run's `kept` groups handed over) with
   * W&B's rollouts table after them, and the metrics stream.
   */
  start(options: { sinks: CreatedSinks; kept?: readonly ScoredGroupRecord[] }): Promise<void>;
  /** Writes a finished group to every sink; resolves with it redacted, as the sinks got it. */
  write(record: ScoredGroupRecord): Promise<ScoredGroupRecord>;
  /** Closes the metrics, then the sinks (W&B last); `incomplete`: the run ended early. */
  close(options: { incomplete: boolean }): Promise<void>;
}

/**
 * Checks the outputs (refusing to overwrite, or checking that a resumed run is the same run) and
 * starts W&B (a W&B run that cannot start refuses the run before any rollout). Nothing is written
 * until `start`.
 */
export async function openRunOutput(plan: RunPlan): Promise<RunOutput> {
  const { output, session, command } = plan;
  const { io } = session;
  const resumable = output.identity !== undefined;
  // Before anything runs: which files exist, and whether they may be replaced or continued.
  // --force starts over; --resume continues the run in `out` when there is one.
  const resuming = output.resume && !output.force && existsSync(output.out);
  if (output.resume && !output.force && !resuming)
    io.stderr(`nothing to resume at ${relative(io.cwd, output.out) || output.out}; starting a new run\n`);
  // Redacted as the file is: a secret in an ordinary setting never reaches the run record.
  const identity =
    resumable && (command === 'process' || command === 'evaluate')
      ? session.redact.value(runIdentity(plan.config, command, io.cwd))
      : undefined;
  if (resuming && identity && (command === 'process' || command === 'evaluate'))
    checkResumable({ jsonlPath: output.out, command, identity, cwd: io.cwd, elsewhere: output.elsewhere });
  const previous = resuming ? readResumedGroups(output.out, { cwd: io.cwd, logger: session.logger }) : [];
  if (!resuming)
    guardOutputs({
      paths: [output.out, output.identity, output.summary, output.report, output.metrics].filter(
        (path): path is string => path !== undefined,
      ),
      cwd: io.cwd,
      force: output.force,
      elsewhere: output.elsewhere,
      // Resuming a run whose JSONL is gone cannot help: only --force or another path do.
      ...(resumable ? { resumable: !output.resume } : {}),
    });
  const mode = output.force ? 'replace' : resuming ? 'append' : 'new';
  const wandb: WandbRun | undefined = await openWandb({ session, config: plan.config, command });

  let metrics: RunMetrics = NO_METRICS;
  let metricsWriter: JsonlWriter | undefined;
  let prometheus: PrometheusEndpoint | undefined;
  let sinks: ReturnType<typeof createRunSinks> | undefined;
  let jsonl: JsonlSink | undefined;
  return {
    resuming,
    previous,
    mode,
    get metrics() {
      return metrics;
    },
    async start(options) {
      jsonl = options.sinks.jsonl;
      sinks = createRunSinks(
        [
          { sink: jsonl, label: relative(io.cwd, output.out) || output.out, error: jsonlError(plan) },
          ...options.sinks.configured,
          ...(wandb ? [{ sink: wandb.sink, label: 'wandb' }] : []),
        ],
        session.redact,
      );
      if (output.identity && identity)
        writeOutputFile(output.identity, `${JSON.stringify(identityFile(command, identity), null, 2)}\n`, {
          replace: true,
          cwd: io.cwd,
        });
      await sinks.open({ ...(resuming ? { kept: options.kept ?? [] } : {}), signal: session.signal });
      if (plan.metrics.prometheus && (command === 'serve' || command === 'train')) {
        prometheus = await startPrometheusEndpoint({
          ...plan.metrics.prometheus,
          command,
          success: plan.control.success,
        });
        io.stderr(`${command === 'train' ? 'train: ' : ''}metrics for Prometheus at ${prometheus.url}\n`);
      }
      if (output.metrics || wandb) {
        // A resumed run appends: its rows go on after the earlier run's (elapsedSeconds restarts at 0).
        if (output.metrics)
          metricsWriter = createJsonlWriter(output.metrics, session.redact, { mode, cwd: io.cwd });
        metrics = createRunMetrics({
          writer: wandb ? wandb.writer(metricsWriter) : metricsWriter!,
          command,
          success: plan.control.success,
          windowSeconds: plan.metrics.windowSeconds,
        });
      }
      if (prometheus) metrics = teeMetrics(metrics, prometheus);
    },
    write(record) {
      if (!sinks) throw new Error('RunOutput.write before start');
      return sinks.write(record);
    },
    async close(options) {
      try {
        await prometheus?.stop();
        metrics.close();
        metricsWriter?.close();
      } finally {
        if (sinks) await sinks.close(options);
        else await wandb?.finish({ failed: true });
        // A run that wrote no group leaves nothing that would block the next one: the JSONL sink
        // removed the file it created, and the run record and metrics stream go with it.
        if (mode === 'new' && jsonl && jsonl.written === 0 && !existsSync(output.out))
          for (const companion of [output.identity, output.metrics])
            if (companion && existsSync(companion)) rmSync(companion, { force: true });
      }
    },
  };
}

/** The run's JSONL errors as the user reads them: the file named, the reason in words. */
function jsonlError(plan: RunPlan): (error: unknown) => unknown {
  const { out } = plan.output;
  const cwd = plan.session.io.cwd;
  return (error) => {
    if (InvalidArgumentError.isInstance(error) && (error.cause as { code?: string })?.code === 'EEXIST')
      return appearedError(out, cwd, 'while the run started');
    if (
      typeof (error as { code?: unknown })?.code === 'string' &&
      /^E[A-Z]+$/.test((error as { code: string }).code)
    )
      return fileError(out, 'write', error, cwd);
    return error;
  };
}
