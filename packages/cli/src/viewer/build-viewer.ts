// Builds the trajectory viewer and run dashboard: one static HTML file (no server) with the scored
// groups and the run's metrics rows embedded as gzip-compressed, base64-encoded blocks that the
// page decompresses in the browser: a small per-group index parsed at load, the whole records
// decoded only when a group is opened (buildViewerHtml says which block holds what; readViewerPage
// reads a page back). The page's code and styles are asset files (viewer-assets.ts).
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { type ScoredGroupRecord, safeParseJson } from '@shears/core';
import type { EvaluationSummary } from '../evaluation-summary.js';
import { bootstrapMean } from '../stats.js';
import { viewerAssets } from './viewer-assets.js';

/** Tokens shown per sequence in the token view (the page says how many more there are). */
const TOKENS_SHOWN_PER_SEQUENCE = 3000;

export interface ViewerMeta {
  title?: string;
  /** One line shown under the title (run settings, never secrets). */
  description?: string;
}

export interface BuildViewerOptions {
  meta?: ViewerMeta;
  /** Applied to the serialised data before embedding (secret redaction). */
  redact?: (text: string) => string;
  /** Text of one token id; when given, the token view shows text (ids stay in the tooltip). */
  decodeToken?: (id: number) => string;
  /** Rows of the run's metrics stream (`<out>.metrics.jsonl`): the dashboard draws them. */
  metrics?: readonly unknown[];
  /** `shears evaluate`'s summary: the report shows pass@k and mean score with their intervals. */
  evaluation?: EvaluationSummary & { bootstrapSamples?: number };
  /** `shears view --watch`: the page polls this same-origin path for new groups and metrics rows. */
  live?: { updatesPath: string; intervalMs: number; groupsOffset: number; metricsOffset: number };
}

/** The text of every token id the token view will show, decoded once per distinct id. */
function tokenVocabulary(
  groups: readonly ScoredGroupRecord[],
  decode: (id: number) => string,
): Record<string, string> {
  const vocab: Record<string, string> = {};
  for (const group of groups)
    for (const rollout of group.rollouts)
      for (const sequence of rollout.tokens?.sequences ?? []) {
        const shown = Math.min(sequence.tokens.length, TOKENS_SHOWN_PER_SEQUENCE);
        for (let index = 0; index < shown; index++) {
          const id = sequence.tokens[index] as number;
          if (!(id in vocab)) vocab[id] = decode(id);
        }
      }
  return vocab;
}

export interface ReadGroupsResult {
  groups: ScoredGroupRecord[];
  /** Lines that were not JSON objects with `kind: "shears.group"` (1-based line numbers). */
  skipped: number[];
}

/** Reads shears JSONL leniently for viewing: other record kinds and broken lines are skipped. */
export function readGroupsForViewer(path: string): ReadGroupsResult {
  const groups: ScoredGroupRecord[] = [];
  const skipped: number[] = [];
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    const parsed = safeParseJson(line, { source: `${path}:${index + 1}` });
    const value = parsed.success ? (parsed.value as Record<string, unknown>) : undefined;
    if (
      value &&
      typeof value === 'object' &&
      value.kind === 'shears.group' &&
      Array.isArray(value.rollouts)
    ) {
      groups.push(value as unknown as ScoredGroupRecord);
    } else skipped.push(index + 1);
  });
  return { groups, skipped };
}

interface ReadMetricsResult {
  /** JSON objects with a `kind` starting `shears.metrics.`, in file order. */
  rows: Record<string, unknown>[];
  /** Lines that were not such objects (1-based line numbers). */
  skipped: number[];
}

/** Reads a metrics stream leniently for the dashboard; no file is an empty stream. */
export function readMetricsForViewer(path: string): ReadMetricsResult {
  const rows: Record<string, unknown>[] = [];
  const skipped: number[] = [];
  if (!existsSync(path)) return { rows, skipped };
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      if (line.trim() === '') return;
      const parsed = safeParseJson(line, { source: `${path}:${index + 1}` });
      const value = parsed.success ? parsed.value : undefined;
      if (isMetricsRow(value)) rows.push(value);
      else skipped.push(index + 1);
    });
  return { rows, skipped };
}

export function isMetricsRow(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { kind?: unknown }).kind === 'string' &&
    ((value as { kind: string }).kind.startsWith('shears.metrics.') ||
      (value as { kind: string }).kind.startsWith('shears.event.'))
  );
}

/** pass@k per k with a bootstrap interval over tasks (the summary itself carries only the point value). */
function evaluationForPage(evaluation: NonNullable<BuildViewerOptions['evaluation']>) {
  const passAtK: Record<string, { mean: number; low: number; high: number }> = {};
  for (const key of Object.keys(evaluation.passAtK)) {
    const values = evaluation.tasks
      .map((task) => task.passAtK[key])
      .filter((value): value is number => typeof value === 'number' && !Number.isNaN(value));
    const interval = bootstrapMean(values, {
      confidence: evaluation.meanScore.confidence,
      ...(evaluation.bootstrapSamples ? { samples: evaluation.bootstrapSamples } : {}),
    });
    passAtK[key] = { mean: evaluation.passAtK[key] ?? interval.mean, low: interval.low, high: interval.high };
  }
  return {
    k: evaluation.k,
    tasks: evaluation.tasks.length,
    passAtK,
    meanScore: evaluation.meanScore,
    complete: evaluation.complete,
    missing: evaluation.missing.length,
    success: evaluation.success,
  };
}

// Fields of a `shears.metrics.group` row the dashboard does not draw: left out of the page (about
// half of a row), which matters at 100,000 groups. Every other field, and every row of another
// kind, is embedded as it is, so rows the dashboard learns to read later need no change here.
const UNCHARTED_GROUP_FIELDS = new Set([
  'version',
  'at',
  'command',
  'envId',
  'rollouts',
  'zeroSignal',
  'dropped',
  'partial',
  'advantage',
  'turns',
  'toolCalls',
  'toolErrors',
  'tokens',
  'wallTimeSeconds',
]);

export function slimMetricsRow(row: unknown): unknown {
  if (!row || typeof row !== 'object' || (row as { kind?: unknown }).kind !== 'shears.metrics.group')
    return row;
  return Object.fromEntries(Object.entries(row).filter(([key]) => !UNCHARTED_GROUP_FIELDS.has(key)));
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/**
 * What the group list, the filters, the summary line and the dashboard read of a group: a
 * projection of the record (same field names), embedded for every group and parsed at load. The
 * whole record is embedded beside it, unparsed, and parsed when the group is opened.
 */
function groupSummary(group: ScoredGroupRecord): Record<string, unknown> {
  return {
    groupId: group.groupId,
    taskId: group.taskId,
    item: { prompt: group.item?.prompt },
    ...(group.dropped ? { dropped: { reason: group.dropped.reason } } : {}),
    ...(group.stats ? { stats: { mean: group.stats.mean, std: group.stats.std } } : {}),
    advantages: group.advantages,
    advantageMethod: group.advantageMethod,
    rollouts: group.rollouts.map((rollout) => ({
      outcome: rollout.outcome,
      reward: rollout.reward,
      ...(rollout.success !== undefined ? { success: rollout.success } : {}),
    })),
  };
}

/** Characters of whole records per embedded block (about 1 MB): opening a group decompresses one block. */
const GROUP_BLOCK_CHARACTERS = 1 << 20;

/** gzip + base64, the encoding of every embedded block (the page decompresses with DecompressionStream). */
function embed(text: string): string {
  // Level 3: measured on a 100,000-group run, 3x faster than the default 6 for a third more bytes.
  return gzipSync(text, { level: 3 }).toString('base64');
}

export function buildViewerHtml(
  groups: readonly ScoredGroupRecord[],
  options: BuildViewerOptions = {},
): string {
  const meta = options.meta ?? {};
  const vocab = options.decodeToken ? tokenVocabulary(groups, options.decodeToken) : undefined;
  const redact = options.redact ?? ((text: string) => text);
  // The page reads its data in four kinds of blocks, each gzip + base64 in its own
  // <script type="application/octet-stream">, so no block is one huge string to parse at load:
  // - #shears-data: meta, vocabulary, evaluation, live settings, where each records block starts;
  // - #shears-index: one summary per group (groupSummary) a line, parsed at load for the list and charts;
  // - #shears-metrics: the metrics rows the dashboard draws;
  // - .shears-groups: the whole records as JSONL, about 1 MB each, decoded when a group is opened.
  // Serialised one group at a time and compressed block by block (a large run's JSON exceeds the
  // longest string V8 holds; one gzip call per megabyte is also faster than one over the whole).
  // Redaction applies to each piece, each a whole JSON value.
  const index: string[] = [];
  const blocks: string[] = [];
  const blockStarts: number[] = [];
  let block: string[] = [];
  let blockLength = 0;
  const closeBlock = () => {
    if (!block.length) return;
    blocks.push(embed(block.join('')));
    block = [];
    blockLength = 0;
  };
  groups.forEach((group, position) => {
    if (blockLength === 0) blockStarts.push(position);
    const line = `${redact(JSON.stringify(group))}\n`;
    block.push(line);
    blockLength += line.length;
    if (blockLength >= GROUP_BLOCK_CHARACTERS) closeBlock();
    index.push(redact(JSON.stringify(groupSummary(group))));
  });
  closeBlock();
  const data: Record<string, unknown> = {
    meta,
    tokensShown: TOKENS_SHOWN_PER_SEQUENCE,
    groupCount: groups.length,
    groupBlocks: blockStarts,
  };
  if (vocab) data.vocab = vocab;
  if (options.evaluation) data.evaluation = evaluationForPage(options.evaluation);
  if (options.live) data.live = options.live;
  const payload = embed(redact(JSON.stringify(data)));
  // JSONL: the page parses it a few thousand lines at a time, answering input in between.
  const indexPayload = embed(index.join('\n'));
  const metricsPayload = options.metrics
    ? embed(`[${options.metrics.map((row) => redact(JSON.stringify(slimMetricsRow(row)))).join(',')}]`)
    : undefined;
  const title = escapeHtml(meta.title ?? 'shears trajectories');
  const assets = viewerAssets();
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
${assets.styles.map((style) => `<style>${style}</style>`).join('\n')}
</head>
<body>
<header><h1>${title}</h1><span id="summary" class="muted">loading…</span><span id="meta" class="muted"></span><span id="live" class="muted" data-testid="live"></span></header>
<nav class="tabs"><button id="tab-trajectories" class="tab active" data-testid="tab-trajectories">Trajectories</button><button id="tab-dashboard" class="tab" data-testid="tab-dashboard">Dashboard</button><span id="evaluation" class="evaluation" data-testid="evaluation"></span></nav>
<div id="view-trajectories" class="view">
<div class="filters">
  <label>score ≥ <input id="min-score" type="number" step="0.1" data-testid="min-score"></label>
  <label>≤ <input id="max-score" type="number" step="0.1" data-testid="max-score"></label>
  <label>outcome <select id="outcome" data-testid="outcome"><option value="all">all</option></select></label>
  <input id="search" type="search" placeholder="task or group id" data-testid="search">
  <label><input id="show-dropped" type="checkbox" checked> dropped groups</label>
  <label>sort <select id="sort" data-testid="sort"><option value="file">run order</option><option value="mean-desc">mean reward ↓</option><option value="mean-asc">mean reward ↑</option><option value="std-desc">spread (std) ↓</option><option value="task">task id</option></select></label>
  <span id="selection" class="selection hidden" data-testid="selection"></span>
  <span id="count" class="muted" data-testid="count"></span>
</div>
<main><div id="list" data-testid="list"><div id="spacer"><div id="rows"></div></div></div><section id="detail" data-testid="detail"></section></main>
</div>
<div id="view-dashboard" class="view hidden" data-testid="dashboard"></div>
<script type="application/octet-stream" id="shears-data" data-encoding="gzip">${payload}</script>
<script type="application/octet-stream" id="shears-index" data-encoding="gzip">${indexPayload}</script>
${metricsPayload === undefined ? '' : `<script type="application/octet-stream" id="shears-metrics" data-encoding="gzip">${metricsPayload}</script>\n`}${blocks.map((text, position) => `<script type="application/octet-stream" class="shears-groups" id="shears-groups-${position}" data-encoding="gzip">${text}</script>`).join('\n')}
${assets.scripts.map((script) => `<script>${script}</script>`).join('\n')}
</body>
</html>
`;
}

/** Everything a viewer page embeds, decoded (tests, and tools that read a built page back). */
interface ViewerPageData extends Record<string, unknown> {
  /** The whole records, in page order. */
  groups: ScoredGroupRecord[];
  /** The per-group summaries the page parses at load. */
  index: Record<string, unknown>[];
  metrics?: unknown[];
}

/** Reads back the data a page built by buildViewerHtml embeds. */
export function readViewerPage(html: string): ViewerPageData {
  const blockOf = (id: string) => {
    const match = new RegExp(
      `<script type="application/octet-stream"[^>]* id="${id}" data-encoding="gzip">([^<]*)</script>`,
    ).exec(html);
    return match ? gunzipSync(Buffer.from(match[1] ?? '', 'base64')).toString('utf8') : undefined;
  };
  const head = blockOf('shears-data');
  if (head === undefined) throw new Error('not a shears viewer page: it has no #shears-data block');
  const data = JSON.parse(head) as Record<string, unknown> & { groupBlocks: number[] };
  const groups: ScoredGroupRecord[] = [];
  data.groupBlocks.forEach((_, position) => {
    const text = blockOf(`shears-groups-${position}`);
    if (text === undefined) throw new Error(`the page lacks its records block ${position}`);
    for (const line of text.split('\n')) if (line) groups.push(JSON.parse(line) as ScoredGroupRecord);
  });
  const metrics = blockOf('shears-metrics');
  return {
    ...data,
    groups,
    index: (blockOf('shears-index') ?? '')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>),
    ...(metrics === undefined ? {} : { metrics: JSON.parse(metrics) as unknown[] }),
  };
}
