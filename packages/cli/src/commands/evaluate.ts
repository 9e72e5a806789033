// `shears evaluate`: k samples per task; unbiased pass@k, mean score with a bootstrap confidence
// interval, and a per-task table. What counts as solved is the env's verdict or
// `run.success_threshold` (see successRule). With --resume it keeps the finished items of an
// interrupted run of the same configuration and redoes only items that are missing or had failed
// rollouts; a run that ends before every item is complete writes a summary marked incomplete,
// listing what is missing.
import { relative } from 'node:path';
import { ConfigError, type EnvItem, type ScoredGroupRecord } from '@shears/core';
import { runBatch } from '../batch/batch-run.js';
import { type EvaluationSummary, isComplete, summarizeEvaluation } from '../evaluation-summary.js';
import { writeOutputFile } from '../output/output-files.js';
import { checkSameTask } from '../output/run-identity.js';
import { writeRunReport } from '../output/run-report.js';
import { buildRunPlan } from '../plan/run-plan.js';
import { formatNumber, formatTable, lengthCutLine, toolErrorLine } from '../progress/progress.js';
import { requireEnvChosen } from '../runtime/registry.js';
import { endingNote, exitCodeFor, formatFailures, type StoppedBy } from '../runtime/run-control.js';
import type { CommandContext } from '../session.js';

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
  await requireEnvChosen(context);
  const plan = await buildRunPlan(context, 'evaluate', {
    force: context.flags.force === true,
    resume: context.flags.resume === true,
  });
  const { io, redact } = plan.session;
  const { out, elsewhere, force } = plan.output;
  const { k, maxItems } = plan.evaluation;
  let items: EnvItem[] = [];
  const run = await runBatch(plan, {
    progress: { label: 'task' },
    groupSize: k,
    async items(runtime, output) {
      // The last complete record of each item in the earlier run.
      const kept = new Map<string, ScoredGroupRecord>();
      for (const record of output.previous) {
        if (isComplete(record, k)) kept.set(record.taskId, record);
        else kept.delete(record.taskId);
      }
      if (runtime.env.evalItems) items = await runtime.env.evalItems();
      else {
        if (!maxItems) {
          throw new ConfigError({
            message: `evaluate.max_items: env "${plan.env.name}" has no evaluation set, so say how many items to draw (e.g. --evaluate.max_items 50)`,
            issues: [{ path: 'evaluate.max_items', message: 'required for this env', value: undefined }],
          });
        }
        for (let index = 0; index < maxItems; index++) {
          const item = await runtime.env.nextItem();
          if (!item) break;
          items.push(item);
        }
      }
      if (maxItems) items = items.slice(0, maxItems);
      // A kept result must be of the same task the env gives now under that id.
      for (const item of items) {
        const previous = kept.get(item.id);
        if (previous)
          checkSameTask({ jsonlPath: out, cwd: io.cwd, before: previous.item, now: item, elsewhere });
      }
      // Kept results first (also those of items outside this run's set: never lost), through a
      // temporary file, so an interrupted resume leaves a resumable file.
      const ids = new Set(items.map((item) => item.id));
      const initial = [
        ...items.flatMap((item) => (kept.has(item.id) ? [kept.get(item.id)!] : [])),
        ...[...kept.values()].filter((record) => !ids.has(record.taskId)),
      ];
      const counted = initial.filter((record) => ids.has(record.taskId));
      const todo = items.filter((item) => !kept.has(item.id));
      let cursor = 0;
      return {
        kept: initial,
        counted,
        workers: Math.min(Math.max(1, Math.ceil(plan.control.concurrency / k) + 1), Math.max(1, todo.length)),
        ...(kept.size
          ? { note: `resuming: ${counted.length} of ${items.length} items already complete` }
          : {}),
        async next() {
          if (cursor >= todo.length || runtime.control.stopping) return undefined;
          return todo[cursor++];
        },
      };
    },
  });
  const { records, stoppedBy } = run;
  const summary = summarizeEvaluation(records, {
    k,
    samples: plan.evaluation.bootstrapSamples,
    confidence: plan.evaluation.confidence,
    env: plan.env.name,
    model: run.model,
    success: plan.control.success,
  });
  summary.resumed = records.length - run.ran;
  summary.ran = run.ran;
  // Items never started count as missing too.
  const recorded = new Set(records.map((record) => record.taskId));
  for (const item of items)
    if (!recorded.has(item.id))
      summary.missing.push({ taskId: item.id, why: 'not run: the run stopped first' });
  summary.complete = summary.missing.length === 0;
  summary.stopped = describeStop(stoppedBy);
  const replace = force || run.resumed;
  const summaryPath = plan.output.summary!;
  writeOutputFile(summaryPath, `${JSON.stringify(redact.value(summary), null, 2)}\n`, {
    replace,
    cwd: io.cwd,
  });
  await writeRunReport(plan, {
    groups: records,
    meta: {
      title: `shears evaluate · ${plan.env.name}${summary.complete ? '' : ' (incomplete)'}`,
      description: redact(
        `k=${k}${summary.complete ? '' : ` · INCOMPLETE: ${summary.missing.length} of ${items.length} tasks without a complete result`}`,
      ),
    },
    evaluation: { ...summary, bootstrapSamples: plan.evaluation.bootstrapSamples },
    replace,
    decodeTokens: true,
  });
  io.stderr(`${redact(formatEvaluation(summary))}\n`);
  for (const line of [toolErrorLine(records), lengthCutLine(records)])
    if (line) io.stderr(`${redact(line)}\n`);
  const failures = formatFailures(run.failures);
  if (failures) io.stderr(`${redact(failures)}\n`);
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
  if (context.flags.json === true) io.stdout(`${JSON.stringify(redact.value(summary))}\n`);
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
