// `shears evaluate`: k samples per task; unbiased pass@k, mean score with a bootstrap confidence
// interval, and a per-task table. With --resume it keeps the finished items of an interrupted
// run and redoes only items that are missing or had failed rollouts.
import { existsSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { ConfigError, type EnvItem, type ScoredGroupRecord } from '@shears/core';
import { formatNumber, formatTable } from '../progress/progress.js';
import {
  type CommandContext,
  createJsonlWriter,
  reportPathFor,
  resolveOut,
  runOneGroup,
  startRuntime,
} from '../runtime.js';
import { bootstrapMean, mean, passAtK } from '../stats.js';
import { buildViewerHtml, readGroupsForViewer } from '../viewer/build-viewer.js';
import { loadTokenDecoder } from '../viewer/token-decoder.js';

export interface TaskEvaluation {
  taskId: string;
  samples: number;
  correct: number;
  meanScore: number;
  passAtK: Record<string, number>;
  failed: number;
}

export interface EvaluationSummary {
  kind: 'shears.evaluation';
  env: string;
  model: string;
  k: number;
  tasks: TaskEvaluation[];
  passAtK: Record<string, number>;
  meanScore: { mean: number; low: number; high: number; confidence: number };
  resumed: number;
  ran: number;
}

const COUNTED = new Set(['scored', 'model_failure']);

/** An item is finished when every one of its k rollouts got a valid score. */
export function isComplete(record: ScoredGroupRecord, k: number): boolean {
  return record.rollouts.length >= k && record.rollouts.every((rollout) => COUNTED.has(rollout.outcome));
}

function isCorrect(rollout: ScoredGroupRecord['rollouts'][number]): boolean {
  return rollout.success ?? (rollout.reward !== null && rollout.reward >= 1);
}

export function kValues(k: number): number[] {
  const values = new Set<number>([1]);
  for (let value = 2; value < k; value *= 2) values.add(value);
  values.add(k);
  return [...values].sort((a, b) => a - b);
}

export function summarizeEvaluation(
  records: readonly ScoredGroupRecord[],
  options: { k: number; samples: number; confidence: number; env: string; model: string },
): EvaluationSummary {
  const ks = kValues(options.k);
  const tasks: TaskEvaluation[] = records.map((record) => {
    const counted = record.rollouts.filter((rollout) => COUNTED.has(rollout.outcome));
    const correct = counted.filter(isCorrect).length;
    const pass: Record<string, number> = {};
    for (const k of ks) pass[`pass@${k}`] = passAtK(counted.length, correct, k);
    return {
      taskId: record.taskId,
      samples: counted.length,
      correct,
      meanScore: mean(counted.map((rollout) => rollout.reward ?? 0)),
      passAtK: pass,
      failed: record.rollouts.length - counted.length,
    };
  });
  const passAtKOverall: Record<string, number> = {};
  for (const k of ks)
    passAtKOverall[`pass@${k}`] = mean(
      tasks.map((task) => task.passAtK[`pass@${k}`]!).filter((value) => !Number.isNaN(value)),
    );
  const interval = bootstrapMean(
    tasks.map((task) => task.meanScore).filter((value) => !Number.isNaN(value)),
    { samples: options.samples, confidence: options.confidence },
  );
  return {
    kind: 'shears.evaluation',
    env: options.env,
    model: options.model,
    k: options.k,
    tasks,
    passAtK: passAtKOverall,
    meanScore: { ...interval, confidence: options.confidence },
    resumed: 0,
    ran: 0,
  };
}

export function formatEvaluation(summary: EvaluationSummary): string {
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
  ].join('\n');
}

export async function evaluateCommand(context: CommandContext): Promise<number> {
  const { config, io } = context;
  const k = config.evaluate.k;
  const out = resolveOut(context, config.evaluate.out);
  const resume = context.flags.resume === true;

  const kept = new Map<string, ScoredGroupRecord>();
  if (resume && existsSync(out)) {
    for (const record of readGroupsForViewer(out).groups) {
      if (isComplete(record, k)) kept.set(record.taskId, record);
      else kept.delete(record.taskId);
    }
  }

  const runtime = await startRuntime(context, { label: 'task' });
  const records: ScoredGroupRecord[] = [];
  let ran = 0;
  try {
    let items: EnvItem[];
    if (runtime.env.evalItems) items = await runtime.env.evalItems();
    else {
      if (!config.evaluate.max_items) {
        throw new ConfigError({
          message: `evaluate.max_items: env "${config.env.name}" has no evaluation set, so say how many items to draw (e.g. --evaluate.max_items 50)`,
          issues: [{ path: 'evaluate.max_items', message: 'required for this env', value: undefined }],
        });
      }
      items = [];
      for (let index = 0; index < config.evaluate.max_items; index++) {
        const item = await runtime.env.nextItem();
        if (!item) break;
        items.push(item);
      }
    }
    if (config.evaluate.max_items) items = items.slice(0, config.evaluate.max_items);
    // Rewrite the file with what is kept, then append; an interrupted run stays resumable.
    const writer = createJsonlWriter(out, context.redact);
    for (const item of items) {
      const previous = kept.get(item.id);
      if (previous) {
        writer.write(previous);
        records.push(previous);
      }
    }
    if (kept.size) io.stderr(`resuming: ${records.length} of ${items.length} items already complete\n`);
    const todo = items.filter((item) => !kept.has(item.id));
    let cursor = 0;
    const window = Math.max(1, Math.ceil(config.run.concurrency / k) + 1);
    const worker = async () => {
      while (cursor < todo.length && !context.signal.aborted) {
        const item = todo[cursor++]!;
        const record = await runOneGroup(runtime, context, item, k);
        ran++;
        records.push(record);
        writer.write(record);
        runtime.progress.groupFinished(record);
      }
    };
    await Promise.all(Array.from({ length: Math.min(window, Math.max(1, todo.length)) }, worker));
  } finally {
    await runtime.close();
  }
  const summary = summarizeEvaluation(records, {
    k,
    samples: config.evaluate.bootstrap_samples,
    confidence: config.evaluate.confidence,
    env: config.env.name,
    model: runtime.server.model,
  });
  summary.resumed = records.length - ran;
  summary.ran = ran;
  const summaryPath = `${out.replace(/\.jsonl?$/i, '')}.summary.json`;
  writeFileSync(summaryPath, `${context.redact(JSON.stringify(summary, null, 2))}\n`);
  if (config.run.report) {
    // Token text in the report's token view when the run recorded tokens with a known tokenizer.
    const recordedTokens = records.some((record) => record.rollouts.some((rollout) => rollout.tokens));
    const decodeToken =
      recordedTokens && config.server.tokenizer
        ? await loadTokenDecoder(config.server.tokenizer, io.cwd, 'server.tokenizer')
        : undefined;
    writeFileSync(
      reportPathFor(out),
      buildViewerHtml(records, {
        meta: { title: `shears evaluate · ${config.env.name}`, description: `k=${k}` },
        redact: context.redact,
        ...(decodeToken ? { decodeToken } : {}),
      }),
    );
  }
  io.stderr(`${context.redact(formatEvaluation(summary))}\n`);
  if (context.flags.json === true) io.stdout(`${context.redact(JSON.stringify(summary))}\n`);
  else
    io.stdout(
      `wrote ${records.length} items to ${relative(io.cwd, out) || out} and ${relative(io.cwd, summaryPath)}\n`,
    );
  return context.signal.aborted ? 130 : 0;
}
