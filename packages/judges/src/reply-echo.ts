// A judge reply that cannot be read because the judge repeated the agent's text. Judges quote,
// and an agent can write text that breaks a reply when it is quoted (braces, quotes, a key that
// would duplicate the judge's own, a flood that runs the judge out of tokens). Such a failure is
// the agent's doing, so it must count against the agent — never be a judge failure the group runner
// retries and leaves out of the statistics. A reply is blamed on the agent when the judge repeated
// the agent's text (runs of at least MIN_RUN characters, whitespace and the transcript's "│" marks
// ignored) and either its verdict is readable once those runs are cut out, or most of the reply is
// the agent's text. Any other unreadable reply (a judge that answers garbage on its own, an
// empty or cut-off reply without the agent's text) stays a judge failure.

import type { TranscriptView } from './format-trajectory.js';
import { agentSource } from './provenance.js';
import { neutraliseUntrustedText } from './untrusted-text.js';
import { nonceRegions } from './verdict-parsing.js';

/** Windows of the agent's text are indexed at this length and stride: runs of WINDOW + STRIDE - 1 are always found. */
const WINDOW = 16;
const STRIDE = 8;
/** A repeated run shorter than this is not counted (judges quote a few words of any answer). */
const MIN_RUN = 20;
/** A reply that repeats at least this many characters of the agent's text, making up half of it, is the agent's. */
const MOSTLY_ECHO_CHARS = 64;

/** A text the judge may have repeated, and whose it is (a candidate's position, or 0). */
interface EchoSource {
  owner: number;
  text: string;
}

export interface ReplyEcho {
  /** Characters of the reply that repeat the agent's text (whitespace not counted). */
  chars: number;
  /** Their share of the reply (whitespace not counted). */
  share: number;
  /** The first repeated run, as the reply has it (at most 200 characters). */
  excerpt: string;
  /** Why the failure is the agent's. */
  reason: string;
}

/**
 * The agent's text a judge was shown in `view`, as echo sources of `owner`: as written, and (with
 * `shown`) as the prompt showed it, imitations of structure in «guillemets».
 */
export function agentEchoSources(view: TranscriptView, owner = 0, shown = true): EchoSource[] {
  const sources: EchoSource[] = [];
  for (const segment of view.segments) {
    if (!agentSource(segment.source)) continue;
    const written = segment.replacement ?? segment.text;
    sources.push({ owner, text: written });
    if (!shown) continue;
    const quoted = neutraliseUntrustedText(written, { nonces: [view.nonce] }).text;
    if (quoted !== written) sources.push({ owner, text: quoted });
  }
  return sources;
}

const SKIPPED = /[\s│]/;

/** `text` without whitespace and "│", with the original index of each kept unit. */
function compact(text: string): { text: string; at: number[] } {
  let out = '';
  const at: number[] = [];
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (SKIPPED.test(char)) continue;
    out += char;
    at.push(index);
  }
  return { text: out, at };
}

/** The runs of `reply` (original offsets, end exclusive) that repeat any of `sources`, with their owners. */
function repeatedRuns(
  reply: string,
  sources: readonly EchoSource[],
): Array<{ start: number; end: number; owners: Set<number> }> {
  const index = new Map<string, { source: string; offset: number; owner: number }>();
  const add = (source: string, offset: number, owner: number) => {
    const key = source.slice(offset, offset + WINDOW);
    if (!index.has(key)) index.set(key, { source, offset, owner });
  };
  for (const { owner, text: raw } of sources) {
    const source = compact(raw).text;
    for (let offset = 0; offset + WINDOW <= source.length; offset += STRIDE) add(source, offset, owner);
    // The tail window, so the end of a text is indexed too.
    if (source.length >= MIN_RUN) add(source, source.length - WINDOW, owner);
  }
  if (index.size === 0) return [];
  const { text, at } = compact(reply);
  const runs: Array<{ start: number; end: number; owners: Set<number> }> = [];
  for (let position = 0; position + WINDOW <= text.length; ) {
    const hit = index.get(text.slice(position, position + WINDOW));
    if (!hit) {
      position++;
      continue;
    }
    let end = position + WINDOW;
    for (let from = hit.offset + WINDOW; end < text.length && text[end] === hit.source[from]; end++, from++);
    let start = position;
    for (
      let from = hit.offset - 1;
      start > 0 && from >= 0 && text[start - 1] === hit.source[from];
      start--, from--
    );
    if (end - start >= MIN_RUN) {
      const last = runs.at(-1);
      const run = { start: at[start]!, end: at[end - 1]! + 1, owners: new Set([hit.owner]) };
      if (last && run.start <= last.end) {
        last.end = Math.max(last.end, run.end);
        last.owners.add(hit.owner);
      } else runs.push(run);
    }
    position = end;
  }
  return runs;
}

/** JSON syntax: a repeated run holding it can break the object it was copied into. */
const JSON_SYNTAX = /[{}[\]":,\\]/;

/** A quote that is not escaped: copied raw into a JSON string, it ends the string. */
function rawQuote(text: string, start: number, end: number): boolean {
  for (
    let index = text.indexOf('"', start);
    index >= 0 && index < end;
    index = text.indexOf('"', index + 1)
  ) {
    let backslashes = 0;
    for (let at = index - 1; at >= 0 && text[at] === '\\'; at--) backslashes++;
    if (backslashes % 2 === 0) return true;
  }
  return false;
}

/**
 * Whether a run holds prose, not only JSON structure: an agent that imitates the verdict's own
 * shape ("dimensions": {"task_completion": ...) shares runs with any honest verdict, and that alone
 * says nothing about who wrote what was read.
 */
function prose(run: string): boolean {
  const letters = run.replace(/"[^"\n]{0,40}"\s*:/g, '').match(/\p{L}/gu);
  return (letters?.length ?? 0) >= 12;
}

/**
 * Whether a verdict that did read was written around the agent's text: its object (the one naming
 * `nonce`) holds a repeated run of the agent's text with a raw quote in it. The judge copied the
 * agent's text into its JSON unescaped, so the agent's text may have ended the judge's string, or
 * the object, or set a key ("}, "winner": "tie"): what was read cannot be trusted to be the judge's.
 * Undefined when the verdict is clean.
 */
export function echoInVerdict(
  reply: string,
  sources: readonly EchoSource[],
  nonce: string,
): (ReplyEcho & { owners: number[] }) | undefined {
  const regions = nonceRegions(reply, nonce);
  if (regions.length === 0 || !reply.includes('"')) return undefined;
  const runs = repeatedRuns(reply, sources).filter(
    (run) =>
      regions.some((region) => run.start < region.end && run.end > region.start) &&
      rawQuote(reply, run.start, run.end) &&
      prose(reply.slice(run.start, run.end)),
  );
  if (runs.length === 0) return undefined;
  const chars = runs.reduce((total, run) => total + compact(reply.slice(run.start, run.end)).text.length, 0);
  const total = compact(reply).text.length;
  return {
    chars,
    share: total === 0 ? 0 : Math.round((chars / total) * 1000) / 1000,
    excerpt: reply.slice(runs[0]!.start, Math.min(runs[0]!.end, runs[0]!.start + 200)),
    owners: [...new Set(runs.flatMap((run) => [...run.owners]))].sort((a, b) => a - b),
    reason:
      "the judge's verdict object holds the agent's text with its quotes unescaped: what was read may be the agent's",
  };
}

/**
 * Whether an unreadable `reply` is the agent's doing. The judge repeated the agents' texts
 * (`sources`: as the judge was shown them, and as written; runs of MIN_RUN characters or more)
 * and: its verdict object (the one naming `nonce`) holds a repeated run with JSON syntax in it, or
 * the reply reads once the repeats are cut out (`readable`), or the repeats are most of the reply.
 * Undefined when it is a judge failure; else the echo and the owners of the repeated text (the
 * candidates to blame).
 */
export function blameEcho(
  reply: string,
  sources: readonly EchoSource[],
  readable: (text: string) => boolean,
  nonce?: string,
): (ReplyEcho & { owners: number[] }) | undefined {
  const runs = repeatedRuns(reply, sources);
  if (runs.length === 0) return undefined;
  let cut = '';
  let cursor = 0;
  let chars = 0;
  const owners = new Set<number>();
  for (const run of runs) {
    cut += reply.slice(cursor, run.start);
    chars += compact(reply.slice(run.start, run.end)).text.length;
    cursor = run.end;
    for (const owner of run.owners) owners.add(owner);
  }
  cut += reply.slice(cursor);
  const total = compact(reply).text.length;
  const share = total === 0 ? 0 : Math.round((chars / total) * 1000) / 1000;
  const echo = (run: (typeof runs)[number], reason: string, blamed: Iterable<number>) => ({
    chars,
    share,
    excerpt: reply.slice(run.start, Math.min(run.end, run.start + 200)),
    owners: [...new Set(blamed)].sort((a, b) => a - b),
    reason,
  });
  const regions = nonce ? nonceRegions(reply, nonce) : [];
  const inside = runs.filter(
    (run) =>
      JSON_SYNTAX.test(reply.slice(run.start, run.end)) &&
      regions.some((region) => run.start < region.end && run.end > region.start),
  );
  if (inside.length > 0)
    return echo(
      inside[0]!,
      "the judge's verdict object holds the agent's text, JSON syntax and all, and cannot be read",
      inside.flatMap((run) => [...run.owners]),
    );
  if (readable(cut))
    return echo(runs[0]!, "the judge's verdict reads once the agent's text it repeated is cut out", owners);
  if (chars >= MOSTLY_ECHO_CHARS && share >= 0.5)
    return echo(runs[0]!, "most of the judge's reply repeats the agent's text", owners);
  return undefined;
}
