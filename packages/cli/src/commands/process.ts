// `shears process`: run N groups end to end and write scored groups as JSONL plus an HTML report.
// Existing output is never overwritten without --force; --resume continues a run of the same
// configuration, keeping its complete groups and redoing the rest.
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import type { EnvItem, ScoredGroupRecord } from '@shears/core';
import { teeMetrics } from '../metrics/prometheus-metrics.js';
import { createRunMetrics, metricsPathFor, NO_METRICS, type RunMetrics } from '../metrics/run-metrics.js';
import { checkWandbConfig, openWandb, type WandbRun } from '../metrics/wandb.js';
import { checkRunConfig } from '../plan/env-plan.js';
import { refuseLoop } from '../plan/loop-plan.js';
import { summarizeGroups } from '../progress/progress.js';
import { endingNote, exitCodeFor, formatFailures } from '../run/run-control.js';
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

/** A group that needs no redoing: not stopped midway. */
function isCompleteGroup(record: ScoredGroupRecord): boolean {
  return !record.partial && record.rollouts.every((rollout) => rollout.outcome !== 'aborted');
}

export async function processCommand(context: CommandContext): Promise<number> {
  const { config, io } = context;
  const total = config.run.groups;
  const out = resolveOut(context, config.run.out);
  const identityPath = identityPathFor(out);
  const reportPath = config.run.report ? reportPathFor(out) : undefined;
  const metricsPath = config.run.metrics ? metricsPathFor(out) : undefined;
  const resume = context.flags.resume === true;
  const force = context.flags.force === true;
  const elsewhere = '--out OTHER.jsonl';
  // Redacted as the file is: a secret in an ordinary setting never reaches the run record.
  const identity = context.redact.value(runIdentity(config, 'process', io.cwd));

  checkRunConfig(config);
  refuseLoop(config, 'process');
  refusePrometheus(config, 'process');
  checkWandbConfig(config, io.env);
  // Before anything runs: which files exist, and whether they may be replaced or continued.
  // --force starts over; --resume continues the run in `out` when there is one.
  const resuming = resume && !force && existsSync(out);
  if (resume && !force && !resuming)
    io.stderr(`nothing to resume at ${relative(io.cwd, out) || out}; starting a new run\n`);
  if (resuming) checkResumable({ jsonlPath: out, command: 'process', identity, cwd: io.cwd, elsewhere });
  if (!resuming)
    guardOutputs({
      paths: [out, identityPath, ...(reportPath ? [reportPath] : []), ...(metricsPath ? [metricsPath] : [])],
      cwd: io.cwd,
      force,
      elsewhere,
      // Resuming a run whose JSONL is gone cannot help: only --force or another path do.
      resumable: !resume,
    });
  const previous = resuming ? readResumedGroups(out, { cwd: io.cwd, logger: context.logger }) : [];
  // Complete groups of the earlier run, by task id, consumed as the env yields the same tasks again.
  const pool = new Map<string, ScoredGroupRecord[]>();
  for (const record of previous.filter(isCompleteGroup))
    pool.set(record.taskId, [...(pool.get(record.taskId) ?? []), record]);
  const kept = previous.filter(isCompleteGroup);
  const redone = previous.length - kept.length;

  // Before the runtime: a W&B run that cannot start refuses the run before any rollout.
  const wandb: WandbRun | undefined = await openWandb(context, 'process');
  let runtime: Awaited<ReturnType<typeof startRuntime>>;
  try {
    runtime = await startRuntime(context, { totalGroups: total });
  } catch (error) {
    await wandb?.finish({ failed: true });
    throw error;
  }
  const groups: ScoredGroupRecord[] = [...kept];
  let writer: ReturnType<typeof createJsonlWriter> | undefined;
  let metricsWriter: ReturnType<typeof createJsonlWriter> | undefined;
  let metrics: RunMetrics = NO_METRICS;
  const started = Date.now();
  let reused = 0;
  try {
    writeOutputFile(identityPath, `${JSON.stringify(identityFile('process', identity), null, 2)}\n`, {
      replace: true,
      cwd: io.cwd,
    });
    writer = createJsonlWriter(out, context.redact, {
      mode: force ? 'replace' : resuming ? 'append' : 'new',
      ...(resuming ? { initial: kept } : {}),
      cwd: io.cwd,
      companions: [identityPath, ...(metricsPath ? [metricsPath] : [])],
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
        command: 'process',
        success: successRule(config.run.success_threshold),
        windowSeconds: config.run.metrics_window_seconds,
      });
      if (wandb) metrics = teeMetrics(metrics, wandb.rollouts);
    }
    if (resuming)
      io.stderr(
        `resuming ${relative(io.cwd, out) || out}: ${kept.length} complete group(s) kept${redone ? `, ${redone} partial group(s) to redo` : ''}\n`,
      );
    // Groups are started a few at a time; the shared limiter bounds the rollouts in flight.
    const window = Math.max(1, Math.ceil(config.run.concurrency / config.env.group_size) + 1);
    let next = 0;
    let exhausted = false;
    const nextToRun = async (): Promise<EnvItem | undefined> => {
      // The env yields the earlier run's tasks in the same order (same seed): skip the done ones.
      while (!exhausted && next < total && !runtime.control.stopping) {
        next++;
        const item = await runtime.env.nextItem();
        if (!item) {
          exhausted = true;
          return undefined;
        }
        const done = pool.get(item.id);
        if (done?.length) {
          checkSameTask({ jsonlPath: out, cwd: io.cwd, before: done[0]!.item, now: item, elsewhere });
          done.shift();
          reused++;
          continue;
        }
        return item;
      }
      return undefined;
    };
    const worker = async () => {
      for (;;) {
        const item = await nextToRun();
        if (!item) return;
        const record = await runOneGroup(runtime, context, item, config.env.group_size);
        groups.push(record);
        writer!.write(record);
        metrics.group(record);
        runtime.progress.groupFinished(record);
      }
    };
    const settled = await Promise.allSettled(Array.from({ length: Math.min(window, total) }, worker));
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
  const snapshot = runtime.progress.snapshot();
  const stoppedBy = runtime.control.stoppedBy;
  const missing = Math.max(0, total - groups.filter(isCompleteGroup).length);
  if (reportPath) {
    // Token text in the report's token view when the run recorded tokens with a known tokenizer.
    const recordedTokens = groups.some((group) => group.rollouts.some((rollout) => rollout.tokens));
    const decodeToken =
      recordedTokens && config.server.tokenizer
        ? await loadTokenDecoder(config.server.tokenizer, io.cwd, 'server.tokenizer')
        : undefined;
    const incomplete = stoppedBy ? ' · INCOMPLETE: the run was stopped' : '';
    writeOutputFile(
      reportPath,
      buildViewerHtml(context.redact.value(groups), {
        meta: {
          title: `shears process · ${config.env.name}${stoppedBy ? ' (incomplete)' : ''}`,
          description: context.redact(
            `${groups.length} groups × ${config.env.group_size} · model ${runtime.server.model} · ${new Date(started).toISOString()}${incomplete}`,
          ),
        },
        ...(metricsPath ? { metrics: readMetricsForViewer(metricsPath).rows } : {}),
        ...(decodeToken ? { decodeToken } : {}),
      }),
      { replace: true, cwd: io.cwd },
    );
  }
  const success = successRule(config.run.success_threshold);
  const failures = formatFailures(runtime.control.failures());
  io.stderr(`${context.redact(summarizeGroups(groups, snapshot, { success }))}\n`);
  if (failures) io.stderr(`${context.redact(failures)}\n`);
  const scoredRollouts = groups.reduce(
    (sum, group) => sum + group.rollouts.filter((rollout) => rollout.reward !== null).length,
    0,
  );
  const ending = endingNote({
    stoppedBy,
    scoredRollouts,
    rollouts: groups.reduce((sum, group) => sum + group.rollouts.length, 0),
  });
  if (ending)
    io.stderr(
      `${ending}${stoppedBy && missing > 0 ? `; ${missing} of ${total} groups missing (run again with --resume)` : ''}\n`,
    );
  const show = (path: string) => relative(io.cwd, path) || path;
  const partial = groups.filter((group) => group.partial).length;
  io.stdout(
    `wrote ${groups.length} groups${partial ? ` (${partial} partial)` : ''}${reused ? ` (${reused} kept from the earlier run)` : ''} to ${show(out)}${reportPath ? ` and the report to ${show(reportPath)}` : ''}${metricsPath ? `; metrics in ${show(metricsPath)}` : ''}\n`,
  );
  return exitCodeFor({ stoppedBy, scoredRollouts });
}
