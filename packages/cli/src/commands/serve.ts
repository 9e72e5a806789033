// `shears serve`: run groups continuously and push them to a trajectory API (Atropos protocol),
// pausing when too far ahead of the trainer. `--max-groups N` stops after N groups. Every group
// also goes to `run.out` (JSONL) and, at the end, the HTML report, as with `shears process`.
import { relative } from 'node:path';
import { InvalidArgumentError } from '@shears/core';
import { createLoopController, type LoopController } from '../loop/loop-controller.js';
import { metricsPathFor } from '../metrics/run-metrics.js';
import { checkWandbConfig } from '../metrics/wandb.js';
import { openWorkerMetrics, type WorkerMetrics } from '../metrics/worker-metrics.js';
import { checkRunConfig } from '../plan/env-plan.js';
import { checkLoopConfig } from '../plan/loop-plan.js';
import { endingNote, exitCodeFor, formatFailures } from '../run/run-control.js';
import { createJsonlWriter, guardOutputs, type JsonlWriter } from '../run/run-output.js';
import { type CommandContext, reportPathFor, resolveOut } from '../runtime.js';
import { writeRunReport } from '../serve/run-report.js';
import { checkTrainerNeeds, formatServeResult, requireTokenizer, runServeLoop } from '../serve/serve-loop.js';

export async function serveCommand(context: CommandContext): Promise<number> {
  const { config, io } = context;
  const raw = context.flags['max-groups'];
  const maxGroups = raw === undefined ? undefined : Number(raw);
  if (maxGroups !== undefined && (!Number.isInteger(maxGroups) || maxGroups < 1)) {
    throw new InvalidArgumentError({
      argument: '--max-groups',
      value: raw,
      message: `--max-groups: expected a positive integer, got ${String(raw)}`,
    });
  }
  checkRunConfig(config);
  checkWandbConfig(config, io.env);
  checkLoopConfig(config);
  // A config shared with `shears train` says what its trainer needs; serve feeds that trainer.
  checkTrainerNeeds(config);
  await requireTokenizer(config, io.cwd, 'serve');
  const out = resolveOut(context, config.run.out);
  const reportPath = config.run.report ? reportPathFor(out) : undefined;
  const metricsPath = config.run.metrics ? metricsPathFor(out) : undefined;
  const force = context.flags.force === true;
  guardOutputs({
    paths: [out, ...(reportPath ? [reportPath] : []), ...(metricsPath ? [metricsPath] : [])],
    cwd: io.cwd,
    force,
    elsewhere: '--out OTHER.jsonl',
  });
  let writer: JsonlWriter | undefined;
  let workerMetrics: WorkerMetrics | undefined;
  let loop: LoopController | undefined;
  let result: Awaited<ReturnType<typeof runServeLoop>>;
  try {
    writer = createJsonlWriter(out, context.redact, {
      mode: force ? 'replace' : 'new',
      cwd: io.cwd,
      ...(metricsPath ? { companions: [metricsPath] } : {}),
    });
    workerMetrics = await openWorkerMetrics(context, {
      command: 'serve',
      metricsPath,
      force,
      notePrefix: '',
    });
    const { metrics } = workerMetrics;
    loop = await createLoopController(context, {
      metrics,
      out,
      note: (text) => io.stderr(`${context.redact(text)}\n`),
    });
    result = await runServeLoop(context, { maxGroups, writer, metrics, ...(loop ? { loop } : {}) });
  } finally {
    await loop?.close();
    await workerMetrics?.close();
    writer?.close();
  }
  if (reportPath)
    writeRunReport(context, {
      jsonlPath: out,
      reportPath,
      title: `shears serve · ${config.env.name}`,
      incomplete: result.stoppedBy !== undefined,
    });
  const failures = formatFailures(result.failures);
  if (failures) io.stderr(`${context.redact(failures)}\n`);
  const ending = endingNote(result);
  if (ending) io.stderr(`${ending}\n`);
  const show = (path: string) => relative(io.cwd, path) || path;
  io.stdout(
    `${context.redact(formatServeResult(result, config.api.url))}; wrote every group to ${show(out)}${reportPath ? ` and the report to ${show(reportPath)}` : ''}${metricsPath ? `; metrics in ${show(metricsPath)}` : ''}\n`,
  );
  return exitCodeFor(result);
}
