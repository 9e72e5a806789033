// `shears evaluate`: k samples per task; unbiased pass@k, mean score with a bootstrap confidence
// interval, and a per-task table. What counts as solved is the env's verdict or
// `run.success_threshold` (see successRule). With --resume it keeps the finished items of an
// interrupted run of the same configuration and redoes only items that are missing or had failed
// rollouts; a run that ends before every item is complete writes a summary marked incomplete,
// listing what is missing.
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { ConfigError, type EnvItem, type ScoredGroupRecord } from '@shears/core';
import { type EvaluationSummary, isComplete, summarizeEvaluation } from '../evaluation-summary.js';
import { teeMetrics } from '../metrics/prometheus-metrics.js';
import { createRunMetrics, metricsPathFor, NO_METRICS, type RunMetrics } from '../metrics/run-metrics.js';
import { checkWandbConfig, openWandb, type WandbRun } from '../metrics/wandb.js';
import { checkRunConfig } from '../plan/env-plan.js';
import { refuseLoop } from '../plan/loop-plan.js';
import { formatNumber, formatTable } from '../progress/progress.js';
import { endingNote, exitCodeFor, formatFailures, type StoppedBy } from '../run/run-control.js';
import {
  checkResumable,
  checkSameTask,
  identityFile,
  identityPathFor,
  readResumedGroups,
  runIdentity,
} from '../run/run-identity.js';
import { createJsonlWriter, guardOutputs, refusePrometheus, writeOutputFile } from '../run/run-output.js';
import { type CommandContext, reportPathFor, resolveOut, runOneGroup, startRuntime } from '../runtime.js';
import { successRule } from '../stats.js';
import { buildViewerHtml, readMetricsForViewer } from '../viewer/build-viewer.js';
import { loadTokenDecoder } from '../viewer/token-decoder.js';

function formatEvaluation(summary: EvaluationSummary): string {
  const ks = Object.keys(summary.passAtK);
  const rows = summary.tasks
    .slice()
    .sort((a, b) => a.taskId.localeCompare(b.taskId))
    .map((task) => [
      task.taskId,
      `${task.correct}/${task.samples}`,
      formatNumber(task.meanScore),
      ...ks.map((key) => formatNumber(task.passAtK[key])),
      String(task.failed),
    ]);
  const table = formatTable(['task', 'correct', 'mean', ...ks, 'failed'], rows);
  const percent = Math.round(summary.meanScore.confidence * 100);
  return [
    table,
    '',
    `mean score ${formatNumber(summary.meanScore.mean, 3)} (${percent}% CI ${formatNumber(summary.meanScore.low, 3)}–${formatNumber(summary.meanScore.high, 3)}, bootstrap over ${summary.tasks.length} tasks)`,
    ks.map((key) => `${key} ${formatNumber(summary.passAtK[key], 3)}`).join('  '),
    `solved: ${summary.success}`,
    ...(summary.complete
      ? []
      : [
          `INCOMPLETE: ${summary.missing.length} task(s) without a complete result${summary.stopped ? ` (${summary.stopped})` : ''}; the numbers above cover only part of the set. Run again with --resume to finish it:`,
          ...summary.missing.slice(0, 20).map((entry) => `  ${entry.taskId}: ${entry.why}`),
          ...(summary.missing.length > 20 ? [`  … and ${summary.missing.length - 20} more`] : []),
        ]),
  ].join('\n');
}

export async function evaluateCommand(context: CommandContext): Promise<number> {
  const { config, io } = context;
  const k = config.evaluate.k;
  const out = resolveOut(context, config.evaluate.out);
  const identityPath = identityPathFor(out);
  const summaryPath = `${out.replace(/\.jsonl?$/i, '')}.summary.json`;
  const reportPath = config.run.report ? reportPathFor(out) : undefined;
  const metricsPath = config.run.metrics ? metricsPathFor(out) : undefined;
  const resume = context.flags.resume === true;
  const force = context.flags.force === true;
  const elsewhere = '--evaluate.out OTHER.jsonl';
  // Redacted as the file is: a secret in an ordinary setting never reaches the run record.
  const identity = context.redact.value(runIdentity(config, 'evaluate', io.cwd));
  const success = successRule(config.run.success_threshold);

  checkRunConfig(config);
  refuseLoop(config, 'evaluate');
  refusePrometheus(config, 'evaluate');
  checkWandbConfig(config, io.env);
  // Before anything runs: --force starts over, --resume continues the run in `out`, and
  // otherwise no existing file is touched.
  const resuming = resume && !force && existsSync(out);
  if (resume && !force && !resuming)
    io.stderr(`nothing to resume at ${relative(io.cwd, out) || out}; starting a new run\n`);
  if (resuming) checkResumable({ jsonlPath: out, command: 'evaluate', identity, cwd: io.cwd, elsewhere });
  else
    guardOutputs({
      paths: [
        out,
        identityPath,
        summaryPath,
        ...(reportPath ? [reportPath] : []),
        ...(metricsPath ? [metricsPath] : []),
      ],
      cwd: io.cwd,
      force,
      elsewhere,
      // Resuming a run whose JSONL is gone cannot help: only --force or another path do.
      resumable: !resume,
    });
  const kept = new Map<string, ScoredGroupRecord>();
  if (resuming)
    for (const record of readResumedGroups(out, { cwd: io.cwd, logger: context.logger })) {
      if (isComplete(record, k)) kept.set(record.taskId, record);
      else kept.delete(record.taskId);
    }

  // Before the runtime: a W&B run that cannot start refuses the run before any rollout.
  const wandb: WandbRun | undefined = await openWandb(context, 'evaluate');
  let runtime: Awaited<ReturnType<typeof startRuntime>>;
  try {
    runtime = await startRuntime(context, { label: 'task' });
  } catch (error) {
    await wandb?.finish({ failed: true });
    throw error;
  }
  const records: ScoredGroupRecord[] = [];
  let items: EnvItem[] = [];
  let ran = 0;
  let writer: ReturnType<typeof createJsonlWriter> | undefined;
  let metricsWriter: ReturnType<typeof createJsonlWriter> | undefined;
  let metrics: RunMetrics = NO_METRICS;
  try {
    if (runtime.env.evalItems) items = await runtime.env.evalItems();
    else {
      if (!config.evaluate.max_items) {
        throw new ConfigError({
          message: `evaluate.max_items: env "${config.env.name}" has no evaluation set, so say how many items to draw (e.g. --evaluate.max_items 50)`,
          issues: [{ path: 'evaluate.max_items', message: 'required for this env', value: undefined }],
        });
      }
      for (let index = 0; index < config.evaluate.max_items; index++) {
        const item = await runtime.env.nextItem();
        if (!item) break;
        items.push(item);
      }
    }
    if (config.evaluate.max_items) items = items.slice(0, config.evaluate.max_items);
    // A kept result must be of the same task the env gives now under that id.
    for (const item of items) {
      const previous = kept.get(item.id);
      if (previous)
        checkSameTask({ jsonlPath: out, cwd: io.cwd, before: previous.item, now: item, elsewhere });
    }
    writeOutputFile(identityPath, `${JSON.stringify(identityFile('evaluate', identity), null, 2)}\n`, {
      replace: true,
      cwd: io.cwd,
    });
    // Kept results first (also those of items outside this run's set: never lost), through a
    // temporary file, so an interrupted resume leaves a resumable file.
    const ids = new Set(items.map((item) => item.id));
    const initial = [
      ...items.flatMap((item) => (kept.has(item.id) ? [kept.get(item.id)!] : [])),
      ...[...kept.values()].filter((record) => !ids.has(record.taskId)),
    ];
    for (const record of initial) if (ids.has(record.taskId)) records.push(record);
    writer = createJsonlWriter(out, context.redact, {
      mode: force ? 'replace' : resuming ? 'append' : 'new',
      ...(resuming ? { initial } : {}),
      cwd: io.cwd,
      ...(metricsPath ? { companions: [metricsPath] } : {}),
    });
    if (metricsPath || wandb) {
      // A resumed run appends: its rows go on after the earlier run's (elapsedSeconds restarts at 0).
      if (metricsPath)
        metricsWriter = createJsonlWriter(metricsPath, context.redact, {
          mode: force ? 'replace' : resuming ? 'append' : 'new',
          cwd: io.cwd,
        });
      metrics = createRunMetrics({
        writer: wandb ? wandb.writer(metricsWriter) : metricsWriter!,
        command: 'evaluate',
        success,
        windowSeconds: config.run.metrics_window_seconds,
      });
      if (wandb) metrics = teeMetrics(metrics, wandb.rollouts);
    }
    if (kept.size) io.stderr(`resuming: ${records.length} of ${items.length} items already complete\n`);
    const todo = items.filter((item) => !kept.has(item.id));
    let cursor = 0;
    const window = Math.max(1, Math.ceil(config.run.concurrency / k) + 1);
    const worker = async () => {
      while (cursor < todo.length && !runtime.control.stopping) {
        const item = todo[cursor++]!;
        const record = await runOneGroup(runtime, context, item, k);
        ran++;
        records.push(record);
        writer!.write(record);
        metrics.group(record);
        runtime.progress.groupFinished(record);
      }
    };
    const settled = await Promise.allSettled(
      Array.from({ length: Math.min(window, Math.max(1, todo.length)) }, worker),
    );
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  } finally {
    metrics.close();
    metricsWriter?.close();
    writer?.close();
    await runtime.close();
    // After the run's own files are closed: W&B never holds them up or loses them.
    await wandb?.finish({ failed: runtime.control.stoppedBy !== undefined });
  }
  const stoppedBy = runtime.control.stoppedBy;
  const summary = summarizeEvaluation(records, {
    k,
    samples: config.evaluate.bootstrap_samples,
    confidence: config.evaluate.confidence,
    env: config.env.name,
    model: runtime.server.model,
    success,
  });
  summary.resumed = records.length - ran;
  summary.ran = ran;
  // Items never started count as missing too.
  const recorded = new Set(records.map((record) => record.taskId));
  for (const item of items)
    if (!recorded.has(item.id))
      summary.missing.push({ taskId: item.id, why: 'not run: the run stopped first' });
  summary.complete = summary.missing.length === 0;
  summary.stopped = describeStop(stoppedBy);
  const replace = force || resuming;
  writeOutputFile(summaryPath, `${JSON.stringify(context.redact.value(summary), null, 2)}\n`, {
    replace,
    cwd: io.cwd,
  });
  if (reportPath) {
    // Token text in the report's token view when the run recorded tokens with a known tokenizer.
    const recordedTokens = records.some((record) => record.rollouts.some((rollout) => rollout.tokens));
    const decodeToken =
      recordedTokens && config.server.tokenizer
        ? await loadTokenDecoder(config.server.tokenizer, io.cwd, 'server.tokenizer')
        : undefined;
    writeOutputFile(
      reportPath,
      buildViewerHtml(context.redact.value(records), {
        meta: {
          title: `shears evaluate · ${config.env.name}${summary.complete ? '' : ' (incomplete)'}`,
          description: context.redact(
            `k=${k}${summary.complete ? '' : ` · INCOMPLETE: ${summary.missing.length} of ${items.length} tasks without a complete result`}`,
          ),
        },
        evaluation: { ...summary, bootstrapSamples: config.evaluate.bootstrap_samples },
        ...(metricsPath ? { metrics: readMetricsForViewer(metricsPath).rows } : {}),
        ...(decodeToken ? { decodeToken } : {}),
      }),
      { replace, cwd: io.cwd },
    );
  }
  io.stderr(`${context.redact(formatEvaluation(summary))}\n`);
  const failures = formatFailures(runtime.control.failures());
  if (failures) io.stderr(`${context.redact(failures)}\n`);
  const scoredRollouts = records.reduce(
    (sum, record) => sum + record.rollouts.filter((rollout) => rollout.reward !== null).length,
    0,
  );
  const ending = endingNote({
    stoppedBy,
    scoredRollouts,
    rollouts: records.reduce((sum, group) => sum + group.rollouts.length, 0),
  });
  if (ending) io.stderr(`${ending}\n`);
  if (context.flags.json === true) io.stdout(`${JSON.stringify(context.redact.value(summary))}\n`);
  else
    io.stdout(
      `wrote ${records.length} items${summary.complete ? '' : ` (INCOMPLETE: ${summary.missing.length} missing)`} to ${relative(io.cwd, out) || out} and ${relative(io.cwd, summaryPath)}\n`,
    );
  return exitCodeFor({ stoppedBy, scoredRollouts });
}

function describeStop(stoppedBy: StoppedBy | undefined): string | null {
  if (!stoppedBy) return null;
  if (stoppedBy.kind === 'interrupt') return 'interrupted';
  return `stopped by the circuit breaker: ${stoppedBy.outcome} repeated ${stoppedBy.count} times: ${stoppedBy.reason}`;
}
