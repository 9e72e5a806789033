// Turns a format's step function into a ToolCallParserV1: the whole-text parse, the stream,
// the shared policy (content, name validation, trailing text), and the guarantee that no
// input makes a parser throw.
import type {
  ParsedToolCall,
  ParseIssue,
  ParseOptions,
  ParseResult,
  RenderInput,
  ToolCallParserV1,
  ToolCallStreamV1,
  ToolSchema,
} from '@shears/core';
import { createFormatContext, type FormatContext, type StepItem, type ToolCallFormat } from './format.js';

/** End-of-turn tokens that may trail a completion when special tokens were kept. */
const END_TOKENS = [
  '<|im_end|>',
  '<|eot_id|>',
  '<|eom_id|>',
  '</s>',
  '<｜end▁of▁sentence｜>',
  '<|endoftext|>',
  '<|im_end|>',
  '<|user|>',
  '<|observation|>',
];

/**
 * The same text as a string of its own. V8 returns a cut (`slice`) of 13 or more characters as a
 * view into the string it was cut from, and every `charCodeAt` through a view pays an
 * indirection (~1.4x per read): the JSON formats parse a cut text ~1.5x slower than a copy of
 * it, far more than this one copy costs (bench/README.md, fourth round). A join of two parts
 * makes a flat string (`slice`, `repeat(1)`, `padEnd` return views, `concat` a rope).
 */
function ownCopy(text: string): string {
  return text.length < 13 ? text : [text.slice(0, 1), text.slice(1)].join('');
}

/** Removes end-of-turn tokens (and the whitespace around them) from the end of the text. */
export function stripEndTokens(text: string): string {
  let current = text;
  for (;;) {
    // Every token ends in `>`: text whose last character is neither that nor possibly
    // whitespace (trimEnd's, which includes non-ASCII spaces) ends in no token.
    const last = current.charCodeAt(current.length - 1);
    if (last !== 62 && last > 32 && last < 128) return current === text ? text : ownCopy(current);
    const trimmed = current.trimEnd();
    let token: string | undefined;
    for (const candidate of END_TOKENS)
      if (trimmed.endsWith(candidate)) {
        token = candidate;
        break;
      }
    if (token === undefined) return current === text ? text : ownCopy(current);
    current = trimmed.slice(0, trimmed.length - token.length);
  }
}

function blankToNull(text: string | null): string | null {
  return text === null || text.trim() === '' ? null : text;
}

interface ResolvedOptions {
  context: FormatContext;
  allowedNames: Set<string> | null;
}

/**
 * One context per format for whole-text parses, reset for each: a parse runs to the end
 * synchronously, so two never overlap, and a fresh reader and search cache per output were a
 * steady share of the time on short outputs. Streams get their own (they interleave).
 */
const parseContexts = new WeakMap<ToolCallFormat, FormatContext>();

function parseContext(
  format: ToolCallFormat,
  tools: ToolSchema[] | undefined,
  keepInvalid: boolean,
): FormatContext {
  const context = parseContexts.get(format);
  if (context === undefined) {
    const created = createFormatContext(tools, keepInvalid);
    parseContexts.set(format, created);
    return created;
  }
  context.tools = tools;
  context.keepInvalidArguments = keepInvalid;
  context.state = {};
  context.offset = 0;
  // Cached marker searches belong to the previous text: a new version invalidates them.
  context.version += 1;
  return context;
}

function resolveOptions(
  format: ToolCallFormat,
  options: ParseOptions | undefined,
  whole = false,
): ResolvedOptions {
  const tools = Array.isArray(options?.tools) ? options.tools : undefined;
  const validate = options?.validateNames ?? (tools !== undefined && tools.length > 0);
  let allowedNames: Set<string> | null = null;
  if (validate && tools) {
    // A plain loop: this runs on every parse, and map/filter made two arrays each time.
    allowedNames = new Set();
    for (const tool of tools) {
      const name = tool?.function?.name;
      if (typeof name === 'string') allowedNames.add(name);
    }
  }
  const keepInvalid = options?.keepInvalidArguments ?? format.keepInvalidArgumentsByDefault;
  const context = whole ? parseContext(format, tools, keepInvalid) : createFormatContext(tools, keepInvalid);
  return { context, allowedNames };
}

/** Applies name validation to one item: the call to keep, or the reason it was skipped. */
function judgeItem(
  item: StepItem,
  allowedNames: Set<string> | null,
): { call: ParsedToolCall } | { issue: string } {
  if (!item.call) return { issue: item.issue ?? 'malformed call' };
  if (item.call.name === '') return { issue: 'empty function name' };
  if (allowedNames && !allowedNames.has(item.call.name)) {
    const offered = [...allowedNames].join(', ') || 'none';
    return { issue: `unknown function "${item.call.name}" (offered: ${offered})` };
  }
  const call: ParsedToolCall = { name: item.call.name, arguments: item.call.arguments };
  if (item.call.id !== undefined) call.id = item.call.id;
  return { call };
}

function parseWith(format: ToolCallFormat, input: string, options: ParseOptions | undefined): ParseResult {
  const text = stripEndTokens(input);
  const { context, allowedNames } = resolveOptions(format, options, true);
  const toolCalls: ParsedToolCall[] = [];
  const issues: ParseIssue[] = [];
  let firstContentEnd: number | null | undefined;
  let lastEnd = 0;
  let itemIndex = 0;
  let pos = 0;
  for (;;) {
    const step = format.next(text, pos, true, context);
    if (step.kind !== 'region' || step.end <= pos) break;
    if (firstContentEnd === undefined)
      firstContentEnd = step.contentEnd === undefined ? step.start : step.contentEnd;
    for (const item of step.items) {
      const verdict = judgeItem(item, allowedNames);
      if ('call' in verdict) toolCalls.push(verdict.call);
      else issues.push({ index: itemIndex, reason: verdict.issue, raw: item.raw });
      itemIndex += 1;
    }
    pos = step.end;
    lastEnd = step.end;
  }
  // With no call at all the whole output is the answer; otherwise only the text before the
  // first call is content (what every reference does, and all a template can render).
  const content =
    toolCalls.length === 0 ? text : firstContentEnd == null ? null : text.slice(0, firstContentEnd);
  const result: ParseResult = { content: blankToNull(content), toolCalls, issues };
  if (options?.keepTrailingText) {
    result.trailingText =
      toolCalls.length === 0
        ? null
        : blankToNull(stripClosingMarkers(text.slice(lastEnd), format.closingMarkers));
  }
  return result;
}

function stripClosingMarkers(text: string, markers: readonly string[]): string {
  let current = text.trimStart();
  for (;;) {
    const marker = markers.find((candidate) => current.startsWith(candidate));
    if (!marker) return current;
    current = current.slice(marker.length).trimStart();
  }
}

function safeParse(format: ToolCallFormat, text: unknown, options: ParseOptions | undefined): ParseResult {
  const input = typeof text === 'string' ? text : text == null ? '' : String(text);
  try {
    return parseWith(format, input, options);
  } catch (error) {
    // Unreachable by design (the fuzz tests hunt for it); a parser must still never throw.
    return {
      content: blankToNull(input),
      toolCalls: [],
      issues: [{ index: 0, reason: `internal parser error: ${String(error)}`, raw: '' }],
    };
  }
}

/** Credit granted per character fed: total scanning work stays within this multiple of the input. */
const WORK_PER_CHAR = 4;
const WORK_PER_FEED = 64;
/** Every format's calls end on one of these characters (a JSON close or a tag's `>`). */
const COMPLETERS = /[}\]>]/;

function createStream(format: ToolCallFormat, options: ParseOptions | undefined): ToolCallStreamV1 {
  // The whole text is kept as pieces (joined once, by finish); the format sees only the
  // undecided tail. Appending to one growing string would make V8 flatten it on every feed.
  const pieces: string[] = [];
  let window = '';
  let credit = 0;
  let waiting = false;
  let triedAt = 0;
  let finished: ParseResult | null = null;
  const resolved = resolveOptions(format, options);
  const context = resolved.context;
  // For JSON-bodied formats: bracket depth over the undecided window (string-aware), so a
  // pending call is re-scanned only once its brackets balance, not on every inner `}`.
  const skim = { at: 0, depth: 0, inString: false, escaped: false, opened: false };
  const balanced = (): boolean => {
    const text = window;
    for (let index = skim.at; index < text.length; index += 1) {
      const code = text.charCodeAt(index);
      if (skim.inString) {
        if (skim.escaped) skim.escaped = false;
        else if (code === 92) skim.escaped = true;
        else if (code === 34) skim.inString = false;
      } else if (code === 34) skim.inString = true;
      else if (code === 123 || code === 91) {
        skim.depth += 1;
        skim.opened = true;
      } else if (code === 125 || code === 93) skim.depth -= 1;
    }
    skim.at = text.length;
    return !skim.opened || skim.depth <= 0;
  };
  const advance = (by: number): void => {
    if (by <= 0) return;
    skim.at = 0;
    skim.depth = 0;
    skim.inString = false;
    skim.escaped = false;
    skim.opened = false;
    window = window.slice(by);
    context.offset += by;
  };
  return {
    feed(delta: string): ParsedToolCall[] {
      if (finished || typeof delta !== 'string' || delta.length === 0) return [];
      pieces.push(delta);
      window += delta;
      credit += delta.length * WORK_PER_CHAR + WORK_PER_FEED;
      const out: ParsedToolCall[] = [];
      try {
        for (;;) {
          // An undecided region is re-scanned only when the new text could complete it (its
          // brackets balance, or a closing character arrived, within the work budget) or the
          // region grew geometrically since the last try; both keep the total work linear
          // however small the deltas are.
          if (
            waiting &&
            !(window.length <= credit && (format.jsonBodied ? balanced() : COMPLETERS.test(delta))) &&
            window.length < triedAt * (format.jsonBodied ? 2 : 1.25)
          )
            break;
          context.version += 1;
          const step = format.next(window, 0, false, context);
          if (step.kind === 'more') {
            credit = Math.max(0, credit - window.length);
            waiting = true;
            triedAt = window.length - Math.max(0, step.skip);
            advance(step.skip);
            break;
          }
          if (step.kind !== 'region' || step.end <= 0) break;
          credit -= step.end;
          waiting = false;
          for (const item of step.items) {
            const verdict = judgeItem(item, resolved.allowedNames);
            if ('call' in verdict) out.push(verdict.call);
          }
          advance(step.end);
        }
      } catch {
        // Never throw from feed: finish() re-parses the whole text anyway.
      }
      return out;
    },
    finish(): ParseResult {
      finished ??= safeParse(format, pieces.join(''), options);
      return finished;
    },
  };
}

/** Tolerates loosely typed input (missing fields, non-string arguments) instead of throwing. */
function normalizeRenderInput(input: RenderInput | undefined): RenderInput {
  const content = typeof input?.content === 'string' ? input.content : null;
  const calls = Array.isArray(input?.toolCalls) ? input.toolCalls : [];
  return {
    content,
    toolCalls: calls.map((call) => {
      const args = call?.arguments as unknown;
      const normalized: RenderInput['toolCalls'][number] = {
        name: String(call?.name ?? ''),
        arguments: typeof args === 'string' ? args : args == null ? '{}' : JSON.stringify(args),
      };
      if (typeof call?.id === 'string') normalized.id = call.id;
      return normalized;
    }),
  };
}

/** Builds a ToolCallParserV1 from a format. */
export function createParserFromFormat(format: ToolCallFormat): ToolCallParserV1 {
  return {
    specificationVersion: 'v1',
    id: format.id,
    aliases: format.aliases,
    parse: (text, options) => safeParse(format, text, options),
    createStream: (options) => createStream(format, options),
    render: (input: RenderInput) => format.render(normalizeRenderInput(input)),
  };
}
