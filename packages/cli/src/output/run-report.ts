// A run's HTML report (the viewer and its dashboard, one static file): from the groups in memory
// (`process`, `evaluate`), or read back from the JSONL the run wrote (`serve`, `train`: such runs
// may hold more groups than fit in memory). Its metrics rows come from the run's metrics stream.
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import type { ScoredGroupRecord } from '@shears/core';
import type { EvaluationSummary } from '../evaluation-summary.js';
import { metricsPathFor } from '../plan/output-plan.js';
import type { RunPlan } from '../plan/run-plan.js';
import {
  buildViewerHtml,
  readGroupsForViewer,
  readMetricsForViewer,
  type ViewerMeta,
} from '../viewer/build-viewer.js';
import { loadTokenDecoder } from '../viewer/token-decoder.js';
import { fileError, writeOutputFile } from './output-files.js';

/** Writes the report the plan asks for (none when run.report is off). */
export async function writeRunReport(
  plan: RunPlan,
  report: {
    /** The groups, redacted. */
    groups: readonly ScoredGroupRecord[];
    meta: ViewerMeta;
    evaluation?: EvaluationSummary & { bootstrapSamples?: number };
    /** Replace a report that is there (the guard allowed it: --force, or the run being resumed). */
    replace: boolean;
    /** Show token text in the token view when the run recorded tokens and names its tokenizer. */
    decodeTokens?: boolean;
    /** The metrics stream whose rows the dashboard draws (default: the run's, when it writes one). */
    metrics?: string;
  },
): Promise<void> {
  const { output, server, session } = plan;
  if (!output.report) return;
  const metrics = report.metrics ?? output.metrics;
  const recordedTokens =
    report.decodeTokens === true &&
    report.groups.some((group) => group.rollouts.some((rollout) => rollout.tokens));
  const decodeToken =
    recordedTokens && server.tokenizer
      ? await loadTokenDecoder(server.tokenizer, session.io.cwd, 'server.tokenizer')
      : undefined;
  writeOutputFile(
    output.report,
    buildViewerHtml(report.groups, {
      meta: report.meta,
      ...(report.evaluation ? { evaluation: report.evaluation } : {}),
      ...(metrics ? { metrics: readMetricsForViewer(metrics).rows } : {}),
      ...(decodeToken ? { decodeToken } : {}),
    }),
    { replace: report.replace, cwd: session.io.cwd },
  );
}

/** The report of a long-running command (`serve`, `train`), built from the JSONL it wrote. */
export async function writeReportFromJsonl(
  plan: RunPlan,
  options: { title: string; incomplete: boolean },
): Promise<void> {
  const { output, session } = plan;
  const { io } = session;
  if (!output.report) return;
  // A run that wrote no group leaves no JSONL (the sink removes an empty file it created).
  if (!existsSync(output.out)) {
    io.stderr('no group was written, so there is no JSONL and no report\n');
    return;
  }
  let groups: ScoredGroupRecord[];
  try {
    groups = readGroupsForViewer(output.out).groups;
  } catch (error) {
    throw fileError(output.out, 'read', error, io.cwd);
  }
  await writeRunReport(plan, {
    groups,
    meta: {
      title: `${options.title}${options.incomplete ? ' (incomplete)' : ''}`,
      description: session.redact(
        `${groups.length} groups from ${relative(io.cwd, output.out) || output.out}${options.incomplete ? ' · INCOMPLETE: the run was stopped' : ''}`,
      ),
    },
    replace: output.force,
    // Charted even when this run wrote no stream (run.metrics off): what the file there holds.
    metrics: metricsPathFor(output.out),
  });
}
