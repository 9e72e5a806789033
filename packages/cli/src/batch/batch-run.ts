// A batch of groups from a plan, as `shears process` and `shears evaluate` run it: the outputs
// checked and opened (output/run-output.ts), the run's parts started, the items the command picks
// run a few groups at a time (the shared limiter bounds the rollouts in flight), every finished
// group written to the run's sinks and metrics, and everything closed however the run ends.
import type { EnvItem, ScoredGroupRecord } from '@shears/core';
import { openRunOutput, type RunOutput } from '../output/run-output.js';
import type { RunPlan } from '../plan/run-plan.js';
import type { ProgressSnapshot } from '../progress/progress.js';
import type { FailureCount, StoppedBy } from '../runtime/run-control.js';
import { openRun, type RunParts } from '../runtime/run-parts.js';
import type { Runtime } from '../runtime/runtime.js';

/** What a command runs, decided once the run's parts are up (the env gives the items). */
interface BatchItems {
  /** Groups of the run being resumed that are kept: written first, counted as done. */
  kept: ScoredGroupRecord[];
  /** Of those, the ones that count toward this run's result (default: all). */
  counted?: ScoredGroupRecord[];
  /** The next item to run, or undefined when there is none (called by each worker in turn). */
  next: () => Promise<EnvItem | undefined>;
  /** How many groups run at once. */
  workers: number;
  /** A line for stderr once the outputs are open (what a resumed run keeps). */
  note?: string;
}

interface BatchResult {
  /** The kept groups that count, then the groups of this run, as the sinks got them (redacted). */
  records: ScoredGroupRecord[];
  /** Groups this run ran. */
  ran: number;
  stoppedBy: StoppedBy | undefined;
  failures: FailureCount[];
  progress: ProgressSnapshot;
  /** The model the server named. */
  model: string;
  /** Whether the run continued an earlier one (--resume). */
  resumed: boolean;
}

export async function runBatch(
  plan: RunPlan,
  options: {
    progress: { totalGroups?: number; label?: string };
    groupSize: number;
    items: (runtime: Runtime, output: RunOutput) => Promise<BatchItems>;
  },
): Promise<BatchResult> {
  const { session } = plan;
  const output = await openRunOutput(plan);
  let parts: RunParts;
  try {
    parts = await openRun(plan, { mode: output.mode, runtime: options.progress });
  } catch (error) {
    await output.close({ incomplete: true });
    throw error;
  }
  const runtime = parts.runtime!;
  const records: ScoredGroupRecord[] = [];
  let ran = 0;
  try {
    const batch = await options.items(runtime, output);
    await output.start({ sinks: parts.sinks, kept: batch.kept });
    for (const record of batch.counted ?? batch.kept) records.push(session.redact.value(record));
    if (batch.note) session.io.stderr(`${batch.note}\n`);
    const worker = async () => {
      for (;;) {
        const item = await batch.next();
        if (!item) return;
        const record = await runtime.runGroup(item, options.groupSize);
        ran++;
        records.push(await output.write(record));
        output.metrics.group(record);
        runtime.progress.groupFinished(record);
      }
    };
    const settled = await Promise.allSettled(Array.from({ length: batch.workers }, worker));
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  } finally {
    await parts.close();
    await output.close({ incomplete: runtime.control.stoppedBy !== undefined });
  }
  return {
    records,
    ran,
    stoppedBy: runtime.control.stoppedBy,
    failures: runtime.control.failures(),
    progress: runtime.progress.snapshot(),
    model: runtime.server.model,
    resumed: output.resuming,
  };
}
