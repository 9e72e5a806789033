// The HTML report of a long-running command (`serve`, `train`), built at the end from the JSONL
// it wrote (not from memory: such runs may hold more groups than fit in it).
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { metricsPathFor } from '../metrics/run-metrics.js';
import { fileError, writeOutputFile } from '../run/run-output.js';
import type { CommandContext } from '../runtime.js';
import { buildViewerHtml, readGroupsForViewer, readMetricsForViewer } from '../viewer/build-viewer.js';

export function writeRunReport(
  context: CommandContext,
  options: { jsonlPath: string; reportPath: string; title: string; incomplete: boolean },
): void {
  // A run that wrote no group leaves no JSONL (the writer removes an empty file it created).
  if (!existsSync(options.jsonlPath)) {
    context.io.stderr('no group was written, so there is no JSONL and no report\n');
    return;
  }
  let groups: ReturnType<typeof readGroupsForViewer>['groups'];
  try {
    groups = readGroupsForViewer(options.jsonlPath).groups;
  } catch (error) {
    throw fileError(options.jsonlPath, 'read', error, context.io.cwd);
  }
  writeOutputFile(
    options.reportPath,
    buildViewerHtml(groups, {
      meta: {
        title: `${options.title}${options.incomplete ? ' (incomplete)' : ''}`,
        description: context.redact(
          `${groups.length} groups from ${relative(context.io.cwd, options.jsonlPath) || options.jsonlPath}${options.incomplete ? ' · INCOMPLETE: the run was stopped' : ''}`,
        ),
      },
      metrics: readMetricsForViewer(metricsPathFor(options.jsonlPath)).rows,
    }),
    { replace: context.flags.force === true, cwd: context.io.cwd },
  );
}
