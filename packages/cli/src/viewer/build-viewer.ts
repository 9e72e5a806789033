// Builds the trajectory viewer: one static HTML file (no server) with the scored groups embedded
// as gzip-compressed, base64-encoded JSON that the page decompresses in the browser.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { type ScoredGroupRecord, safeParseJson } from '@shears/core';
import { TOKENS_SHOWN_PER_SEQUENCE, VIEWER_SCRIPT } from './viewer-script.js';

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

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:13px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1f2328;background:#f6f8fa;height:100vh;display:flex;flex-direction:column}
header{padding:8px 14px;background:#24292f;color:#fff;display:flex;flex-wrap:wrap;gap:6px 16px;align-items:baseline}
header h1{font-size:15px;margin:0}
header .muted{color:#c9d1d9}
.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:center;padding:6px 14px;background:#fff;border-bottom:1px solid #d0d7de}
.filters input[type=number]{width:70px}
.filters input[type=search]{width:180px}
main{flex:1;display:flex;min-height:0}
#list{width:38%;min-width:260px;overflow-y:auto;position:relative;border-right:1px solid #d0d7de;background:#fff}
#spacer{position:relative}
.row{position:absolute;left:0;right:0;height:44px;display:flex;align-items:center;gap:8px;padding:0 10px;border-bottom:1px solid #eaeef2;cursor:pointer;white-space:nowrap;overflow:hidden}
.row:hover{background:#f3f6f9}.row.selected{background:#ddf4ff}
.row .task{font-weight:600;min-width:110px;overflow:hidden;text-overflow:ellipsis}
.chips{display:flex;gap:3px;flex:1;overflow:hidden}
.chip{display:inline-block;min-width:26px;padding:1px 4px;border-radius:4px;color:#fff;font-size:11px;text-align:center}
.chip.dim,.rollout.dim{opacity:.3}
.mean{color:#57606a;font-size:12px}
#detail{flex:1;overflow:auto;padding:10px 14px}
.detail-head h2{margin:0 0 2px;font-size:16px}
.prompt{margin:6px 0 10px;padding:6px 8px;background:#fff;border-left:3px solid #0969da}
.rollouts{display:grid;gap:10px;align-items:start}
.rollout{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:8px;min-width:0}
.rollout-head{display:flex;gap:8px;align-items:center;margin-bottom:4px}
.score{color:#fff;border-radius:4px;padding:1px 6px;font-weight:600}
.badge{border-radius:10px;padding:0 7px;font-size:11px;background:#eaeef2}
.badge.outcome-scored{background:#dafbe1}.badge.outcome-model_failure{background:#fff8c5}
.badge.outcome-infra_failure,.badge.outcome-judge_failure,.badge.outcome-timeout,.badge.outcome-aborted,.badge.failed{background:#ffebe9}
.badge.dropped{background:#eaeef2;color:#57606a}
.muted{color:#57606a;font-size:12px}
.errors{color:#cf222e;font-size:12px}
.final{margin:4px 0}
button.expand{margin:6px 0;font:inherit;cursor:pointer;border:1px solid #d0d7de;background:#f6f8fa;border-radius:5px;padding:2px 8px}
.hidden{display:none}
.message{border-top:1px solid #eaeef2;padding:4px 0}
.message .role{font-size:11px;text-transform:uppercase;color:#57606a;font-weight:600}
.role-assistant .role{color:#0969da}.role-tool .role{color:#8250df}
pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:4px 6px;border-radius:4px;max-height:320px;overflow:auto}
.reasoning{font-style:italic;color:#6e7781;border-left:2px solid #d0d7de;padding-left:6px;margin:2px 0}
.tool-call b{color:#8250df}
.verdict{margin:3px 0}.rationale{color:#57606a;font-size:12px}
.badge.flagged{background:#fff1e5;color:#953800;font-weight:600}.injection-spans{color:#953800;font-size:11px;font-family:ui-monospace,monospace}
.diff .add{color:#116329;background:#dafbe1}.diff .del{color:#82071e;background:#ffebe9}.diff .hunk{color:#0550ae}.diff .meta{font-weight:600}
.tokens{margin-top:6px}.token-line{font:11px ui-monospace,monospace;line-height:1.9;display:flex;flex-wrap:wrap}
.tok{padding:0 2px;margin-right:1px;border-radius:2px}.tok.masked{background:#eaeef2;color:#6e7781}.tok.gen{background:#2da44e;color:#fff}
@media (max-width:800px){main{flex-direction:column}#list{width:100%;height:40vh;border-right:0;border-bottom:1px solid #d0d7de}}
`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

export function buildViewerHtml(
  groups: readonly ScoredGroupRecord[],
  options: BuildViewerOptions = {},
): string {
  const meta = options.meta ?? {};
  const vocab = options.decodeToken ? tokenVocabulary(groups, options.decodeToken) : undefined;
  let json = JSON.stringify(vocab ? { meta, groups, vocab } : { meta, groups });
  if (options.redact) json = options.redact(json);
  const payload = gzipSync(Buffer.from(json, 'utf8'), { level: 6 }).toString('base64');
  const title = escapeHtml(meta.title ?? 'shears trajectories');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>${title}</h1><span id="summary" class="muted">loading…</span><span id="meta" class="muted"></span></header>
<div class="filters">
  <label>score ≥ <input id="min-score" type="number" step="0.1" data-testid="min-score"></label>
  <label>≤ <input id="max-score" type="number" step="0.1" data-testid="max-score"></label>
  <label>outcome <select id="outcome" data-testid="outcome"><option value="all">all</option></select></label>
  <input id="search" type="search" placeholder="task or group id" data-testid="search">
  <label><input id="show-dropped" type="checkbox" checked> dropped groups</label>
  <span id="count" class="muted" data-testid="count"></span>
</div>
<main><div id="list" data-testid="list"><div id="spacer"><div id="rows"></div></div></div><section id="detail" data-testid="detail"></section></main>
<script type="application/octet-stream" id="shears-data" data-encoding="gzip">${payload}</script>
<script>${VIEWER_SCRIPT}</script>
</body>
</html>
`;
}
