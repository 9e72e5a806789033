// `shears process`: run N groups end to end and write scored groups as JSONL plus an HTML report.
// Existing output is never overwritten without --force; --resume continues a run of the same
// configuration, keeping its complete groups and redoing the rest.
import { relative } from 'node:path';
import type { EnvItem, ScoredGroupRecord } from '@shears/core';
import { runBatch } from '../batch/batch-run.js';
import { checkSameTask } from '../output/run-identity.js';
import { writeRunReport } from '../output/run-report.js';
import { buildRunPlan } from '../plan/run-plan.js';
import { summarizeGroups } from '../progress/progress.js';
import { requireEnvChosen } from '../runtime/registry.js';
import { endingNote, exitCodeFor, formatFailures } from '../runtime/run-control.js';
import type { CommandContext } from '../session.js';

/** A group that needs no redoing: not stopped midway. */
function isCompleteGroup(record: ScoredGroupRecord): boolean {
  return !record.partial && record.rollouts.every((rollout) => rollout.outcome !== 'aborted');
}

export async function processCommand(context: CommandContext): Promise<number> {
  await requireEnvChosen(context);
  const plan = await buildRunPlan(context, 'process', {
    force: context.flags.force === true,
    resume: context.flags.resume === true,
  });
  const { io, redact } = plan.session;
  const { out, elsewhere } = plan.output;
  const total = plan.group.count;
  const started = Date.now();
  let reused = 0;
  const run = await runBatch(plan, {
    progress: { totalGroups: total },
    groupSize: plan.group.size,
    async items(runtime, output) {
      // Complete groups of the earlier run, by task id, consumed as the env yields the same tasks again.
      const kept = output.previous.filter(isCompleteGroup);
      const pool = new Map<string, ScoredGroupRecord[]>();
      for (const record of kept) pool.set(record.taskId, [...(pool.get(record.taskId) ?? []), record]);
      const redone = output.previous.length - kept.length;
      let next = 0;
      let exhausted = false;
      return {
        kept,
        // Groups are started a few at a time; the shared limiter bounds the rollouts in flight.
        workers: Math.min(Math.max(1, Math.ceil(plan.control.concurrency / plan.group.size) + 1), total),
        ...(output.resuming
          ? {
              note: `resuming ${relative(io.cwd, out) || out}: ${kept.length} complete group(s) kept${redone ? `, ${redone} partial group(s) to redo` : ''}`,
            }
          : {}),
        async next(): Promise<EnvItem | undefined> {
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
        },
      };
    },
  });
  const groups = run.records;
  const { stoppedBy } = run;
  const missing = Math.max(0, total - groups.filter(isCompleteGroup).length);
  const incomplete = stoppedBy ? ' · INCOMPLETE: the run was stopped' : '';
  await writeRunReport(plan, {
    groups,
    meta: {
      title: `shears process · ${plan.env.name}${stoppedBy ? ' (incomplete)' : ''}`,
      description: redact(
        `${groups.length} groups × ${plan.group.size} · model ${run.model} · ${new Date(started).toISOString()}${incomplete}`,
      ),
    },
    replace: true,
    decodeTokens: true,
  });
  const failures = formatFailures(run.failures);
  io.stderr(`${redact(summarizeGroups(groups, run.progress, { success: plan.control.success }))}\n`);
  if (failures) io.stderr(`${redact(failures)}\n`);
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
  const { report, metrics } = plan.output;
  const partial = groups.filter((group) => group.partial).length;
  io.stdout(
    `wrote ${groups.length} groups${partial ? ` (${partial} partial)` : ''}${reused ? ` (${reused} kept from the earlier run)` : ''} to ${show(out)}${report ? ` and the report to ${show(report)}` : ''}${metrics ? `; metrics in ${show(metrics)}` : ''}\n`,
  );
  return exitCodeFor({ stoppedBy, scoredRollouts });
}
