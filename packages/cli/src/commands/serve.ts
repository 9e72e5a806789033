// `shears serve`: run groups continuously and push them to a trajectory API (Atropos protocol),
// pausing when too far ahead of the trainer. `--max-groups N` stops after N groups. Every group
// also goes to `run.out` (JSONL), the configured sinks and, at the end, the HTML report, as with
// `shears process`.
import { relative } from 'node:path';
import { buildRunPlan } from '../plan/run-plan.js';
import { tallyLines } from '../progress/progress.js';
import { requireEnvChosen } from '../runtime/registry.js';
import { endingNote, exitCodeFor, formatFailures } from '../runtime/run-control.js';
import { runClusterServe } from '../serve/cluster-serve.js';
import { runServe } from '../serve/serve-run.js';
import type { CommandContext } from '../session.js';

export async function serveCommand(context: CommandContext): Promise<number> {
  await requireEnvChosen(context);
  const plan = await buildRunPlan(context, 'serve', {
    force: context.flags.force === true,
    maxGroups: context.flags['max-groups'],
  });
  if (plan.cluster) return runClusterServe(plan, plan.cluster);
  const { result, summary } = await runServe(plan);
  const { io, redact } = plan.session;
  io.stderr(`${redact(tallyLines(result.tally).join('\n'))}\n`);
  const failures = formatFailures(result.failures);
  if (failures) io.stderr(`${redact(failures)}\n`);
  const ending = endingNote(result);
  if (ending) io.stderr(`${ending}\n`);
  const show = (path: string) => relative(io.cwd, path) || path;
  const { out, report, metrics } = plan.output;
  io.stdout(
    `${redact(summary)}; wrote every group to ${show(out)}${report ? ` and the report to ${show(report)}` : ''}${metrics ? `; metrics in ${show(metrics)}` : ''}\n`,
  );
  return exitCodeFor(result);
}
