// The shape every format implements, and small scanning helpers they share. A format is a
// step function: from a position in the text it finds the next call region, or says it needs
// more text. The whole-text parser and the stream drive the same step function, which is why
// any chunking gives the whole-text result.
import type { RenderInput, ToolSchema } from '@shears/core';
import {
  canonicalCallObject,
  canonicalJsonEnd,
  JsonReader,
  transcodeCallObject,
  transcodedEnd,
  transcodeJson,
} from '../json/python-json.js';

/** One call (or failed call) inside a region. */
export interface StepItem {
  call?: { name: string; arguments: string; id?: string };
  /** Why the call was skipped; set when `call` is absent. */
  issue?: string;
  raw: string;
}

export type Step =
  /** No call starts at or after the position (only when the text is final). */
  | { kind: 'done' }
  /** The text so far cannot decide; no call can start before `skip`. Only when not final. */
  | { kind: 'more'; skip: number }
  | {
      kind: 'region';
      start: number;
      end: number;
      items: StepItem[];
      /** Where the content ends when this is the first region; null = no content (default: start). */
      contentEnd?: number | null;
    };

export interface FormatContext {
  tools: ToolSchema[] | undefined;
  keepInvalidArguments: boolean;
  reader: JsonReader;
  /** Per-run scratch space a format may use (the same object for one parse or one stream). */
  state: Record<string, unknown>;
  /** Absolute position of `text[0]` (the stream hands formats a window of its buffer). */
  offset: number;
  /** Bumped whenever the text handed to `next` changes, so cached searches are dropped. */
  version: number;
  /**
   * `text.indexOf(marker, from)` remembered per marker: the next occurrence after a position
   * only moves forward, so repeated searches for a missing marker do not rescan the text.
   */
  find(text: string, marker: string, from: number): number;
}

export interface ToolCallFormat {
  id: string;
  aliases: readonly string[];
  description: string;
  /** Formats whose reference implementations pass argument text through keep invalid JSON by default. */
  keepInvalidArgumentsByDefault: boolean;
  /** Calls carry their arguments as JSON: the stream waits for balanced brackets before re-scanning. */
  jsonBodied?: boolean;
  /** Markers that may follow the last call and are not trailing text (section ends, end tags). */
  closingMarkers: readonly string[];
  next(text: string, pos: number, eof: boolean, context: FormatContext): Step;
  render(input: RenderInput): string;
}

export function createFormatContext(
  tools: ToolSchema[] | undefined,
  keepInvalidArguments: boolean,
): FormatContext {
  const cache = new Map<string, { version: number; from: number; index: number }>();
  const context: FormatContext = {
    tools,
    keepInvalidArguments,
    reader: Object.assign(new JsonReader(), { rawArguments: true }),
    state: {},
    offset: 0,
    version: 0,
    find(text, marker, from) {
      const entry = cache.get(marker);
      if (
        entry &&
        entry.version === context.version &&
        from >= entry.from &&
        (entry.index < 0 || entry.index >= from)
      )
        return entry.index;
      const index = text.indexOf(marker, from);
      // Updated in place: a fresh entry per search was a steady source of garbage.
      if (entry) {
        entry.version = context.version;
        entry.from = from;
        entry.index = index;
      } else cache.set(marker, { version: context.version, from, index });
      return index;
    },
  };
  return context;
}

/**
 * Where a search for `markers` may resume when none was found: the first position from which
 * the rest of the text is a proper prefix of a marker (it could still become one).
 */
export function holdback(text: string, markers: readonly string[], pos: number): number {
  let longest = 0;
  for (const marker of markers) longest = Math.max(longest, marker.length);
  for (let start = Math.max(pos, text.length - longest + 1); start < text.length; start += 1) {
    const tail = text.slice(start);
    for (const marker of markers) if (marker.startsWith(tail)) return start;
  }
  return Math.max(pos, text.length);
}

/** The earliest occurrence of any marker at or after `pos`: [index, marker] or [-1, '']. */
export function findFirst(
  text: string,
  markers: readonly string[],
  pos: number,
  context: FormatContext,
): [number, string] {
  let best = -1;
  let found = '';
  for (const marker of markers) {
    const index = context.find(text, marker, pos);
    if (index >= 0 && (best < 0 || index < best)) {
      best = index;
      found = marker;
    }
  }
  return [best, found];
}

/** Search result for the next start marker, in step terms. */
export function nextStart(
  text: string,
  markers: readonly string[],
  pos: number,
  eof: boolean,
  context: FormatContext,
): { index: number; marker: string } | Step {
  const [index, marker] = findFirst(text, markers, pos, context);
  if (index >= 0) return { index, marker };
  return eof ? { kind: 'done' } : { kind: 'more', skip: holdback(text, markers, pos) };
}

export function isStep(value: unknown): value is Step {
  return typeof value === 'object' && value !== null && 'kind' in value;
}

/** True when `text` ends inside a possible occurrence of `marker` starting at `at`. */
export function couldBeMarker(text: string, at: number, marker: string): boolean {
  const tail = text.slice(at, at + marker.length);
  return tail.length < marker.length && marker.startsWith(tail);
}

const ISSUE_RAW_LIMIT = 400;

/** The text of a failed call, shortened for the issue list. */
export function issueRaw(text: string, start: number, end: number): string {
  const stop = Math.min(end, text.length, start + ISSUE_RAW_LIMIT);
  return text.slice(start, stop);
}

/**
 * A region holding one failed call from `start` to `end`; its raw text runs `extra` characters
 * past the end so the issue shows what followed. A module function rather than a closure made
 * per step, which the step functions would otherwise allocate on every call.
 */
export function failedRegion(text: string, start: number, extra: number, issue: string, end: number): Step {
  return { kind: 'region', start, end, items: [{ issue, raw: issueRaw(text, start, end + extra) }] };
}

/** Deterministic 9-character alphanumeric id (Mistral requires exactly this shape). */
export function nineCharId(seed: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let hash = 2166136261;
  let out = '';
  for (let round = 0; round < 9; round += 1) {
    for (let index = 0; index < seed.length; index += 1) {
      hash ^= seed.charCodeAt(index) + round;
      hash = Math.imul(hash, 16777619) >>> 0;
    }
    out += alphabet[hash % alphabet.length];
  }
  return out;
}

/**
 * End of the JSON value at `start`, or the reader's failure kind. When the value could be
 * printed the way `json.dumps` does without decoding it (already canonical, or transcoded in one
 * pass), that text is left in `context.state.lastValueText` for the caller; else it is undefined.
 */
export function jsonValueEnd(
  context: FormatContext,
  text: string,
  start: number,
): number | 'incomplete' | 'invalid' {
  const end = canonicalJsonEnd(text, start);
  if (end > 0) {
    context.state.lastValueText = text.slice(start, end);
    return end;
  }
  const transcoded = transcodeJson(text, start);
  context.state.lastValueText = transcoded;
  if (transcoded !== undefined) return transcodedEnd;
  const reader = context.reader;
  if (reader.read(text, start) !== undefined) return reader.pos;
  return reader.failure ?? 'invalid';
}

/** A call read by fastCallObject, as a step item. */
export function fastItem(fast: { name: string; argumentsText: string; id?: string }, raw: string): StepItem {
  const item: StepItem = { call: { name: fast.name, arguments: fast.argumentsText }, raw };
  if (fast.id !== undefined && item.call) item.call.id = fast.id;
  return item;
}

/** `canonicalCallObject`, else `transcodeCallObject`: a call object read without decoding it. */
export function fastCallObject(
  text: string,
  start: number,
): { name: string; argumentsText: string; id?: string; end: number } | undefined {
  return canonicalCallObject(text, start) ?? transcodeCallObject(text, start);
}
