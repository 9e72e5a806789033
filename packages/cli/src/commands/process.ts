// `shears process`: run N groups end to end and write scored groups as JSONL plus an HTML report.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { ScoredGroupRecord } from '@shears/core';
import { summarizeGroups } from '../progress/progress.js';
import {
  type CommandContext,
  createJsonlWriter,
  reportPathFor,
  resolveOut,
  runOneGroup,
  startRuntime,
} from '../runtime.js';
import { buildViewerHtml } from '../viewer/build-viewer.js';
import { loadTokenDecoder } from '../viewer/token-decoder.js';

export async function processCommand(context: CommandContext): Promise<number> {
  const { config, io } = context;
  const total = config.run.groups;
  const out = resolveOut(context, config.run.out);
  const runtime = await startRuntime(context, { totalGroups: total });
  const groups: ScoredGroupRecord[] = [];
  const writer = createJsonlWriter(out, context.redact);
  const started = Date.now();
  try {
    // Groups are started a few at a time; the shared limiter bounds the rollouts in flight.
    const window = Math.max(1, Math.ceil(config.run.concurrency / config.env.group_size) + 1);
    let next = 0;
    let exhausted = false;
    const worker = async () => {
      while (!exhausted && next < total && !context.signal.aborted) {
        next++;
        const item = await runtime.env.nextItem();
        if (!item) {
          exhausted = true;
          break;
        }
        const record = await runOneGroup(runtime, context, item, config.env.group_size);
        groups.push(record);
        writer.write(record);
        runtime.progress.groupFinished(record);
      }
    };
    await Promise.all(Array.from({ length: Math.min(window, total) }, worker));
  } finally {
    await runtime.close();
  }
  const snapshot = runtime.progress.snapshot();
  let reportPath: string | undefined;
  if (config.run.report) {
    reportPath = reportPathFor(out);
    // Token text in the report's token view when the run recorded tokens with a known tokenizer.
    const recordedTokens = groups.some((group) => group.rollouts.some((rollout) => rollout.tokens));
    const decodeToken =
      recordedTokens && config.server.tokenizer
        ? await loadTokenDecoder(config.server.tokenizer, io.cwd, 'server.tokenizer')
        : undefined;
    writeFileSync(
      reportPath,
      buildViewerHtml(groups, {
        meta: {
          title: `shears process · ${config.env.name}`,
          description: `${groups.length} groups × ${config.env.group_size} · model ${runtime.server.model} · ${new Date(started).toISOString()}`,
        },
        redact: context.redact,
        ...(decodeToken ? { decodeToken } : {}),
      }),
    );
  }
  io.stderr(`${context.redact(summarizeGroups(groups, snapshot))}\n`);
  const show = (path: string) => relative(io.cwd, path) || path;
  io.stdout(
    `wrote ${groups.length} groups to ${show(out)}${reportPath ? ` and the report to ${show(reportPath)}` : ''}\n`,
  );
  if (context.signal.aborted) return 130;
  return groups.length > 0 ? 0 : 1;
}
