// `shears serve`: run groups continuously and push them to a trajectory API (Atropos protocol),
// pausing when too far ahead of the trainer. `--max-groups N` stops after N groups. Every group
// also goes to `run.out` (JSONL), the configured sinks and, at the end, the HTML report, as with
// `shears process`.
import { relative } from 'node:path';
import { createLoopController, type LoopController } from '../loop/loop-controller.js';
import { writeReportFromJsonl } from '../output/run-report.js';
import { buildRunPlan } from '../plan/run-plan.js';
import { endingNote, exitCodeFor, formatFailures } from '../runtime/run-control.js';
import { openFeed } from '../serve/feed.js';
import { formatServeResult, runServeLoop } from '../serve/serve-loop.js';
import type { CommandContext } from '../session.js';

export async function serveCommand(context: CommandContext): Promise<number> {
  const plan = await buildRunPlan(context, 'serve', {
    force: context.flags.force === true,
    maxGroups: context.flags['max-groups'],
  });
  const { io, redact } = plan.session;
  const { output, registry, tokenizer } = await openFeed(plan);
  let loop: LoopController | undefined;
  let result: Awaited<ReturnType<typeof runServeLoop>> | undefined;
  try {
    loop = await createLoopController(plan, {
      registry,
      metrics: output.metrics,
      note: (text) => io.stderr(`${redact(text)}\n`),
    });
    result = await runServeLoop(plan, { registry, output, tokenizer, ...(loop ? { loop } : {}) });
  } finally {
    await loop?.close();
    await output.close({ incomplete: result === undefined || result.stoppedBy !== undefined });
  }
  await writeReportFromJsonl(plan, {
    title: `shears serve · ${plan.env.name}`,
    incomplete: result.stoppedBy !== undefined,
  });
  const failures = formatFailures(result.failures);
  if (failures) io.stderr(`${redact(failures)}\n`);
  const ending = endingNote(result);
  if (ending) io.stderr(`${ending}\n`);
  const show = (path: string) => relative(io.cwd, path) || path;
  const { out, report, metrics } = plan.output;
  io.stdout(
    `${redact(formatServeResult(result, plan.feed!.api.url))}; wrote every group to ${show(out)}${report ? ` and the report to ${show(report)}` : ''}${metrics ? `; metrics in ${show(metrics)}` : ''}\n`,
  );
  return exitCodeFor(result);
}
