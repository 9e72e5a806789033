// `shears view FILE.jsonl --watch`: a loopback-only HTTP server for the viewer page while a run
// goes on. `/` is the page built from the files as they are now; `/updates?groups=B&metrics=B`
// answers the groups and metrics rows appended after those byte offsets (complete lines only, so a
// line the run is still writing waits for the next poll). It binds 127.0.0.1 and serves nothing
// but these two paths: the boundary is this machine (anyone on it who can reach the port sees the
// run, redacted like the HTML report).
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, relative } from 'node:path';
import { safeParseJson } from '@shears/core';
import { metricsPathFor } from '../plan/output-plan.js';
import type { RunSession } from '../session.js';
import { buildViewerHtml, isMetricsRow, slimMetricsRow } from './build-viewer.js';

/** How often the page asks for new rows. */
const WATCH_INTERVAL_MS = 2000;

interface TailResult {
  lines: string[];
  /** Byte offset after the last complete line read. */
  offset: number;
}

/** The complete lines of `path` after byte `offset` (none when the file is missing or shorter). */
function readCompleteLines(path: string, offset: number): TailResult {
  if (!existsSync(path)) return { lines: [], offset: 0 };
  const size = statSync(path).size;
  // A file that shrank was replaced (a new run with --force): start again from its beginning.
  const from = size < offset ? 0 : offset;
  if (size === from) return { lines: [], offset: from };
  const buffer = Buffer.alloc(size - from);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, from);
  } finally {
    closeSync(fd);
  }
  const end = buffer.lastIndexOf(0x0a);
  if (end < 0) return { lines: [], offset: from };
  return {
    lines: buffer
      .subarray(0, end)
      .toString('utf8')
      .split('\n')
      .filter((line) => line.trim() !== ''),
    offset: from + end + 1,
  };
}

function parseLines(lines: readonly string[], source: string, keep: (value: unknown) => boolean): unknown[] {
  const out: unknown[] = [];
  for (const line of lines) {
    const parsed = safeParseJson(line, { source });
    if (parsed.success && keep(parsed.value)) out.push(parsed.value);
  }
  return out;
}

const isGroup = (value: unknown) =>
  typeof value === 'object' &&
  value !== null &&
  (value as { kind?: unknown }).kind === 'shears.group' &&
  Array.isArray((value as { rollouts?: unknown }).rollouts);

interface WatchViewerOptions {
  input: string;
  port: number;
  decodeToken?: (id: number) => string;
  /** Called once the server listens (tests). */
  onListening?: (url: string) => void;
}

/** Serves the live viewer until the command is stopped (Ctrl-C); resolves with the exit code. */
export async function watchViewer(context: RunSession, options: WatchViewerOptions): Promise<number> {
  const { io } = context;
  const metricsPath = metricsPathFor(options.input);
  const read = (kind: 'groups' | 'metrics', offset: number) => {
    const path = kind === 'groups' ? options.input : metricsPath;
    const tail = readCompleteLines(path, offset);
    const parsed = parseLines(tail.lines, path, kind === 'groups' ? isGroup : isMetricsRow);
    const rows = kind === 'groups' ? parsed : parsed.map(slimMetricsRow);
    return { rows: context.redact.value(rows), offset: tail.offset };
  };
  const page = () => {
    const groups = read('groups', 0);
    const metrics = read('metrics', 0);
    return buildViewerHtml(groups.rows as Parameters<typeof buildViewerHtml>[0], {
      meta: { title: `shears · ${basename(options.input)} (live)` },
      metrics: metrics.rows,
      live: {
        updatesPath: '/updates',
        intervalMs: WATCH_INTERVAL_MS,
        groupsOffset: groups.offset,
        metricsOffset: metrics.offset,
      },
      ...(options.decodeToken ? { decodeToken: options.decodeToken } : {}),
    });
  };
  const offsetParam = (url: URL, name: string) => {
    const value = Number(url.searchParams.get(name) ?? '0');
    return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  };
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    try {
      if (request.method === 'GET' && url.pathname === '/') {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        response.end(page());
        return;
      }
      if (request.method === 'GET' && url.pathname === '/updates') {
        const groups = read('groups', offsetParam(url, 'groups'));
        const metrics = read('metrics', offsetParam(url, 'metrics'));
        response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        response.end(
          JSON.stringify({
            groups: groups.rows,
            metrics: metrics.rows,
            groupsOffset: groups.offset,
            metricsOffset: metrics.offset,
          }),
        );
        return;
      }
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('not found: the watch server serves / and /updates\n');
    } catch (error) {
      response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(`could not read the run: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  };
  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}/`;
  const shown = relative(io.cwd, options.input) || options.input;
  io.stdout(`watching ${shown} (and ${basename(metricsPath)}): ${url}  (Ctrl-C stops)\n`);
  options.onListening?.(url);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    if (context.drain.aborted || context.signal.aborted) return resolve();
    context.drain.addEventListener('abort', stop, { once: true });
    context.signal.addEventListener('abort', stop, { once: true });
  });
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return 0;
}
