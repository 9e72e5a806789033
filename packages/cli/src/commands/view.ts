// `shears view FILE.jsonl [--html FILE.html] [--tokenizer DIR] [--force] [--watch [--port N]]`:
// build the static trajectory viewer and run dashboard from JSONL (the dashboard reads the run's
// metrics stream, FILE.metrics.jsonl, when it is there). With --watch nothing is written: a
// loopback-only HTTP server serves the page, which polls it for groups and metrics rows appended
// since, so it updates live while a run goes on. With a tokenizer (`--tokenizer`, i.e. `server.tokenizer`) the
// token view shows token text instead of ids. An existing HTML file is replaced only when it is
// a viewer page shears built (derived data) or with --force; lines that are not readable groups
// are named, and make the exit code 1.
import { readFileSync, statSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';
import { InvalidArgumentError, safeParseJson } from '@shears/core';
import { fileError, guardOutputs, writeOutputFile } from '../output/output-files.js';
import { metricsPathFor, reportPathFor } from '../plan/output-plan.js';
import type { CommandContext } from '../session.js';
import { buildViewerHtml, readGroupsForViewer, readMetricsForViewer } from '../viewer/build-viewer.js';
import { loadTokenDecoder } from '../viewer/token-decoder.js';
import { watchViewer } from '../viewer/watch-server.js';

/** Whether `path` is a viewer page shears built (an HTML page with its embedded-data element). */
function isViewerPage(path: string): boolean {
  try {
    const text = readFileSync(path, 'utf8');
    return text.startsWith('<!doctype html>') && text.includes('id="shears-data" data-encoding=');
  } catch {
    return false;
  }
}

/** Why a skipped line is not a group: broken data, or a record of another kind. */
function skippedWhy(line: string): { broken: boolean; why: string } {
  const parsed = safeParseJson(line, { source: 'line' });
  if (!parsed.success) return { broken: true, why: 'not valid JSON (cut off, or changed by hand?)' };
  const value = parsed.value as { kind?: unknown } | null;
  if (value && typeof value === 'object' && !Array.isArray(value) && value.kind !== 'shears.group')
    return { broken: false, why: `a record of kind ${JSON.stringify(value.kind ?? null)}, not a group` };
  return { broken: true, why: 'not a scored group (no rollouts)' };
}

export async function viewCommand(context: CommandContext): Promise<number> {
  const { io } = context;
  const file = context.positionals[0];
  if (!file)
    throw new InvalidArgumentError({
      argument: 'FILE',
      message:
        'Usage: shears view FILE.jsonl [--html OUT.html] [--tokenizer DIR] [--force] [--watch [--port N]]',
    });
  const input = resolve(io.cwd, file);
  if (context.flags.watch === true) {
    for (const flag of ['html', 'force'])
      if (context.flags[flag] !== undefined)
        throw new InvalidArgumentError({
          argument: `--${flag}`,
          message: `--${flag} does nothing with --watch (it serves the page and writes no file); leave one out`,
        });
    const tokenizer = context.config.server.tokenizer;
    return watchViewer(context, {
      input,
      port: parsePort(context.flags.port),
      ...(tokenizer
        ? { decodeToken: await loadTokenDecoder(tokenizer, context.io.cwd, 'server.tokenizer') }
        : {}),
    });
  }
  if (context.flags.port !== undefined)
    throw new InvalidArgumentError({
      argument: '--port',
      message: "--port is the --watch server's port; add --watch",
    });
  const shown = (path: string) => relative(io.cwd, path) || path;
  let read: ReturnType<typeof readGroupsForViewer>;
  let lines: string[];
  try {
    if (statSync(input).isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    read = readGroupsForViewer(input);
    lines = read.skipped.length ? readFileSync(input, 'utf8').split('\n') : [];
  } catch (error) {
    throw fileError(input, 'read', error, io.cwd);
  }
  const target =
    typeof context.flags.html === 'string' ? resolve(io.cwd, context.flags.html) : reportPathFor(input);
  const tokenizer = context.config.server.tokenizer;
  const decodeToken = tokenizer ? await loadTokenDecoder(tokenizer, io.cwd, 'server.tokenizer') : undefined;
  // A viewer page is derived from its JSONL: building it again loses nothing, so it is replaced
  // (and said). Any other file is the user's: refused without --force.
  const earlierViewer = context.flags.force !== true && isViewerPage(target);
  if (earlierViewer) io.stderr(`replacing ${shown(target)} (a viewer page shears built earlier)\n`);
  else
    guardOutputs({
      paths: [target],
      cwd: io.cwd,
      force: context.flags.force === true,
      elsewhere: '--html OTHER.html',
    });
  const metricsPath = metricsPathFor(input);
  const metrics = readMetricsForViewer(metricsPath);
  if (metrics.skipped.length)
    io.stderr(
      `${shown(metricsPath)}: ${metrics.skipped.length} line(s) are not metrics rows and are not charted (first: line ${metrics.skipped[0]})\n`,
    );
  writeOutputFile(
    target,
    buildViewerHtml(context.redact.value(read.groups), {
      meta: { title: `shears · ${basename(input)}` },
      metrics: context.redact.value(metrics.rows),
      ...(decodeToken ? { decodeToken } : {}),
    }),
    { replace: context.flags.force === true || earlierViewer, cwd: io.cwd },
  );
  let broken = 0;
  if (read.skipped.length) {
    const described = read.skipped.map((number) => ({ number, ...skippedWhy(lines[number - 1] ?? '') }));
    broken = described.filter((line) => line.broken).length;
    io.stderr(
      `${shown(input)}: ${read.skipped.length} line(s) not shown:\n${described
        .slice(0, 20)
        .map((line) => `  line ${line.number}: ${line.why}`)
        .join('\n')}${described.length > 20 ? `\n  … and ${described.length - 20} more` : ''}\n`,
    );
  }
  io.stdout(
    `${read.groups.length} groups → ${shown(target)}${metrics.rows.length ? ` (dashboard: ${metrics.rows.length} metrics rows)` : ''}\n`,
  );
  return broken > 0 ? 1 : 0;
}

/** `--port N`: 0 (the default) picks a free port. */
function parsePort(value: string | true | undefined): number {
  if (value === undefined) return 0;
  const port = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(port >= 0 && port <= 65535))
    throw new InvalidArgumentError({
      argument: '--port',
      message: `--port takes a number from 0 to 65535 (0: any free port), not ${JSON.stringify(value)}`,
    });
  return port;
}
