// qwen3_coder: Qwen3-Coder / Qwen3.5 XML calls
// `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>`.
// Values are raw text typed by the tool schema; a value may itself hold parameter markup, so
// its end is found by structure (findValueEnd). Tolerates a missing `<tool_call>` wrapper,
// missing close tags (a value ends at the next parameter or function end) and drifted
// `</parameter…>` markers.
import type { RenderInput } from '@shears/core';
import { argumentsObject, jinjaString } from '../engine/arguments.js';
import {
  couldBeMarker,
  type FormatContext,
  failedRegion,
  findFirst,
  isStep,
  issueRaw,
  nextStart,
  type Step,
  type ToolCallFormat,
} from '../engine/format.js';
import {
  declaredNames,
  heuristicValue,
  isWordIgnoringCase,
  parameterSchemas,
  typedValue,
} from '../engine/schema-values.js';
import { type PyValue, pyDumps, skipWhitespace } from '../json/python-json.js';

const TOOL_CALL = '<tool_call>';
const TOOL_CALL_END = '</tool_call>';
const FUNCTION = '<function=';
const FUNCTION_END = '</function>';
const PARAMETER = '<parameter=';
const PARAMETER_END = '</parameter';
/** Markers that start a call (or its section), searched together. */
const STARTS = [TOOL_CALL, FUNCTION];
/** Markers that end a value whose close tag is missing, in the order a tie would be resolved. */
const BOUNDARY_MARKERS = [FUNCTION_END, TOOL_CALL_END, TOOL_CALL, FUNCTION];
/** What may follow a call's last close tag: another call or the end of the turn. */
const AFTER_CALL = [TOOL_CALL, FUNCTION, '<|im_end|>', '<|endoftext|>'];
/** How many open/close tags one value's search looks at before settling for a weaker end. */
const MAX_EVENTS = 1024;
/** After the first close tag outside pairs, how many more tags are looked at for a better end. */
const MAX_EVENTS_AFTER_CLOSE = 64;

/** The parameter being read: what makes a following `<parameter=NAME>` the real next one. */
interface OpenCall {
  key: string;
  args: Map<string, PyValue>;
  /** Parameter names the schema declares; undefined when any name is possible. */
  names: Set<string> | undefined;
}

/** A `<parameter=NAME>` that can begin the next parameter: declared, not yet given, not this one. */
function isFreshName(name: string, call: OpenCall): boolean {
  return name !== call.key && !call.args.has(name) && (call.names === undefined || call.names.has(name));
}

/**
 * The value between `start` and `end` without one leading and one trailing newline (`\n` or
 * `\r\n`), cut out with a single slice.
 */
function valueText(text: string, start: number, end: number): string {
  let from = start;
  let to = end;
  if (text.charCodeAt(from) === 10 && from < to) from += 1;
  else if (to - from >= 2 && text.charCodeAt(from) === 13 && text.charCodeAt(from + 1) === 10) from += 2;
  if (to - from >= 2 && text.charCodeAt(to - 2) === 13 && text.charCodeAt(to - 1) === 10) to -= 2;
  else if (to > from && text.charCodeAt(to - 1) === 10) to -= 1;
  return text.slice(from, to);
}

/**
 * Where the close tag starting at `at` (`</parameter`) ends: after its `>`, also for a drifted
 * `</parameter1>` / `</parameter_x>`, or right after `</parameter` when no `>` comes before the
 * next `<`. -1: the text may still complete it.
 */
function closeTagEnd(text: string, at: number, eof: boolean): number {
  const windowEnd = Math.min(text.length, at + 24);
  for (let index = at + PARAMETER_END.length; index < windowEnd; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 62) return index + 1;
    if (code === 60) return at + PARAMETER_END.length;
  }
  if (!eof && windowEnd === text.length) return -1;
  return at + PARAMETER_END.length;
}

/** True when the text from `at` to its end is a proper prefix of one of `markers`. */
function couldBeAny(text: string, at: number, markers: readonly string[]): boolean {
  for (const marker of markers) if (couldBeMarker(text, at, marker)) return true;
  return false;
}

/** 'end' and 'strong' are sure ends ('end': the call's end follows); 'weak' only a possible one. */
type Continuation = 'end' | 'strong' | 'weak' | 'none' | 'more';

/** After a call's `</tool_call>`: the end, or another call, makes it certain. */
function afterCallEnd(text: string, at: number, eof: boolean): Continuation {
  if (at >= text.length) return eof ? 'end' : 'more';
  for (const marker of AFTER_CALL) if (text.startsWith(marker, at)) return 'end';
  return !eof && couldBeAny(text, at, AFTER_CALL) ? 'more' : 'weak';
}

/**
 * How surely a close tag ending at `at` ends the value, judged by what follows it: the next
 * parameter (a declared, fresh name), or `</function>` / `</tool_call>` followed by the end or
 * another call, is strong; an undeclared name, or those tags followed by other text, is weak;
 * anything else (including a name already given) makes the close tag part of the value.
 */
function continuation(
  text: string,
  at: number,
  eof: boolean,
  call: OpenCall,
  context: FormatContext,
): Continuation {
  const next = skipWhitespace(text, at);
  if (next >= text.length) return eof ? 'end' : 'more';
  if (text.startsWith(PARAMETER, next)) {
    const nameEnd = context.find(text, '>', next + PARAMETER.length);
    if (nameEnd < 0) return eof ? 'weak' : 'more';
    const name = text.slice(next + PARAMETER.length, nameEnd).trim();
    // A name already given cannot follow: taking it would let text in a value replace an
    // argument. An undeclared name may (callers rename fields) but is less sure.
    if (name === call.key || call.args.has(name)) return 'none';
    return isFreshName(name, call) ? 'strong' : 'weak';
  }
  if (text.startsWith(FUNCTION_END, next)) {
    const after = skipWhitespace(text, next + FUNCTION_END.length);
    if (text.startsWith(TOOL_CALL_END, after))
      return afterCallEnd(text, skipWhitespace(text, after + TOOL_CALL_END.length), eof);
    if (!eof && (after >= text.length || couldBeMarker(text, after, TOOL_CALL_END))) return 'more';
    return afterCallEnd(text, after, eof);
  }
  if (text.startsWith(TOOL_CALL_END, next))
    return afterCallEnd(text, skipWhitespace(text, next + TOOL_CALL_END.length), eof);
  if (!eof && couldBeAny(text, next, [PARAMETER, FUNCTION_END, TOOL_CALL_END])) return 'more';
  return 'none';
}

/** Where the call goes on after the value findValueEnd last found (its close tag's end). */
let valueResume = 0;

/** The value's text ends at `end`; the call goes on at `resume`. Returns `end`. */
function valueEnd(end: number, resume: number): number {
  valueResume = resume;
  return end;
}

/**
 * Finds where the value starting at `start` ends (-1: more text is needed; the call goes on at
 * `valueResume`), by structure rather than at the first
 * `</parameter>`: a value may itself hold parameter markup (a file documenting the format).
 *  1. The first close tag outside any `<parameter=` ... `</parameter>` pair written inside the
 *     value (on lines of their own), whose continuation is strong (see `continuation`).
 *  2. With the whole text only (while streaming, anything short of 1 waits for more text):
 *     else the first such close tag with a weak continuation (a later strong one is looked for
 *     only up to the next call's start);
 *  3. else, when a fresh `<parameter=NAME>` comes first, the value's close tag is missing and
 *     it ends there;
 *  4. else the first close tag a pair inside the value took that could end it (the value holds
 *     an unpaired `<parameter=`, as in `"<parameter=x>"` inside JSON);
 *  5. else the close tag is missing: the value runs to the function's or call's end, or the end
 *     of the text (less a close tag right before it).
 */
function findValueEnd(
  text: string,
  start: number,
  eof: boolean,
  call: OpenCall,
  context: FormatContext,
): number {
  let depth = 0;
  let events = 0;
  let firstCloseAt = -1;
  let weak = -1;
  let weakResume = 0;
  let paired = -1;
  let pairedResume = 0;
  let fresh = -1;
  let stopAt = Number.POSITIVE_INFINITY;
  let open = context.find(text, PARAMETER, start);
  let close = context.find(text, PARAMETER_END, start);
  while (
    close >= 0 &&
    close < stopAt &&
    events < MAX_EVENTS &&
    (firstCloseAt < 0 || events - firstCloseAt < MAX_EVENTS_AFTER_CLOSE)
  ) {
    events += 1;
    if (open >= 0 && open < close) {
      // A `<parameter=NAME>` starting a line inside the value opens a pair, as in an example of
      // the format; its close tag is text, not the end. One inside a line (`"<parameter=x>"` in
      // code or JSON) pairs with nothing.
      if (isLineStart(text, open, start)) {
        depth += 1;
        if (eof && fresh < 0 && paired < 0 && opensFreshParameter(text, open, call, context)) fresh = open;
      }
      open = context.find(text, PARAMETER, open + PARAMETER.length);
      continue;
    }
    const closeEnd = closeTagEnd(text, close, eof);
    if (closeEnd < 0) return -1;
    if (depth > 0) {
      depth -= 1;
      if (eof && paired < 0 && continuation(text, closeEnd, eof, call, context) !== 'none') {
        paired = close;
        pairedResume = closeEnd;
      }
    } else {
      if (firstCloseAt < 0) firstCloseAt = events;
      const verdict = continuation(text, closeEnd, eof, call, context);
      if (verdict === 'more') return -1;
      if (verdict === 'strong' || verdict === 'end') return valueEnd(close, closeEnd);
      if (verdict === 'weak' && weak < 0) {
        weak = close;
        weakResume = closeEnd;
        // Past the next call's start, a better end would swallow that call: stop there.
        const nextCall = findFirst(text, STARTS, closeEnd, context)[0];
        if (nextCall >= 0) stopAt = nextCall;
      }
    }
    close = context.find(text, PARAMETER_END, close + PARAMETER_END.length);
  }
  if (!eof) return -1;
  if (weak >= 0) return valueEnd(weak, weakResume);
  if (fresh >= 0) return trimCloseTag(text, start, fresh);
  if (paired >= 0) return valueEnd(paired, pairedResume);
  return implicitValueEnd(text, start, call);
}

/** True when only spaces or tabs stand between `at` and the line's start or the value's start. */
function isLineStart(text: string, at: number, start: number): boolean {
  let back = at;
  while (back > start) {
    const code = text.charCodeAt(back - 1);
    if (code === 10) return true;
    if (code !== 32 && code !== 9) return false;
    back -= 1;
  }
  return true;
}

/** True when the `<parameter=` at `at` names a parameter that could come next. */
function opensFreshParameter(text: string, at: number, call: OpenCall, context: FormatContext): boolean {
  const nameEnd = context.find(text, '>', at + PARAMETER.length);
  return nameEnd >= 0 && isFreshName(text.slice(at + PARAMETER.length, nameEnd).trim(), call);
}

/** Step 5 of findValueEnd: the value whose close tag is missing (only with the whole text). */
function implicitValueEnd(text: string, start: number, call: OpenCall): number {
  let end = text.length;
  for (let at = text.indexOf('<', start); at >= 0; at = text.indexOf('<', at + 1)) {
    if (text.startsWith(PARAMETER, at)) {
      const nameEnd = text.indexOf('>', at + PARAMETER.length);
      if (nameEnd >= 0 && isFreshName(text.slice(at + PARAMETER.length, nameEnd).trim(), call)) {
        end = at;
        break;
      }
    } else if (BOUNDARY_MARKERS.some((marker) => text.startsWith(marker, at))) {
      end = at;
      break;
    }
  }
  return trimCloseTag(text, start, end);
}

/**
 * A value that ends at `end` without its own close tag: a close tag right before `end` (one a
 * `<parameter=` in the value paired off) is still markup, not value.
 */
function trimCloseTag(text: string, start: number, end: number): number {
  let trimmed = end;
  while (trimmed > start && isSpace(text.charCodeAt(trimmed - 1))) trimmed -= 1;
  // The close tag (possibly drifted) ends within 24 characters of where it starts.
  for (let close = trimmed - PARAMETER_END.length; close >= Math.max(start, trimmed - 24); close -= 1) {
    if (text.startsWith(PARAMETER_END, close) && closeTagEnd(text, close, true) === trimmed)
      return valueEnd(close, end);
  }
  return valueEnd(end, end);
}

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

function callStep(text: string, start: number, end: number, name: string, args: Map<string, PyValue>): Step {
  return {
    kind: 'region',
    start,
    end,
    items: [{ call: { name, arguments: pyDumps(args) }, raw: issueRaw(text, start, end) }],
  };
}

function next(text: string, pos: number, eof: boolean, context: FormatContext): Step {
  const found = nextStart(text, STARTS, pos, eof, context);
  if (isStep(found)) return found;
  const start = found.index;
  const more: Step = { kind: 'more', skip: start };
  let cursor = start;
  if (found.marker === TOOL_CALL) {
    cursor = skipWhitespace(text, start + TOOL_CALL.length);
    if (cursor >= text.length || (!eof && FUNCTION.startsWith(text.slice(cursor))))
      return eof ? failedRegion(text, start, 80, 'empty <tool_call>', text.length) : more;
    if (!text.startsWith(FUNCTION, cursor))
      return failedRegion(text, start, 80, 'no <function=...> after <tool_call>', start + TOOL_CALL.length);
  }
  const nameStart = cursor + FUNCTION.length;
  const nameEnd = context.find(text, '>', nameStart);
  if (nameEnd < 0) return eof ? failedRegion(text, start, 80, 'unterminated <function=', text.length) : more;
  const name = text.slice(nameStart, nameEnd).trim();
  if (name === '' || name.includes('<') || name.includes('\n'))
    return failedRegion(text, start, 80, 'malformed <function=NAME>', nameStart);
  const schemas = parameterSchemas(context.tools, name);
  const args = new Map<string, PyValue>();
  const call: OpenCall = { key: '', args, names: declaredNames(schemas) };
  cursor = nameEnd + 1;
  for (;;) {
    cursor = skipWhitespace(text, cursor);
    if (cursor >= text.length) {
      if (!eof) return more;
      return callStep(text, start, text.length, name, args);
    }
    if (text.startsWith(PARAMETER, cursor)) {
      const keyStart = cursor + PARAMETER.length;
      const keyEnd = context.find(text, '>', keyStart);
      if (keyEnd < 0) return eof ? callStep(text, start, text.length, name, args) : more;
      call.key = text.slice(keyStart, keyEnd).trim();
      const valueStart = keyEnd + 1;
      const end = findValueEnd(text, valueStart, eof, call, context);
      if (end < 0) return more;
      const resume = valueResume;
      if (args.has(call.key)) {
        // Only reachable through malformed markup; which value is meant cannot be known.
        return failedRegion(
          text,
          start,
          0,
          `parameter "${call.key}" given twice`,
          Math.max(resume, keyEnd + 1),
        );
      }
      args.set(call.key, convert(valueText(text, valueStart, end), call.key, schemas));
      cursor = resume;
      continue;
    }
    if (text.startsWith(FUNCTION_END, cursor)) {
      let end = cursor + FUNCTION_END.length;
      const after = skipWhitespace(text, end);
      if (
        !eof &&
        (after >= text.length ||
          (text.length - after < TOOL_CALL_END.length && TOOL_CALL_END.startsWith(text.slice(after))))
      )
        return more;
      if (text.startsWith(TOOL_CALL_END, after)) end = after + TOOL_CALL_END.length;
      return callStep(text, start, end, name, args);
    }
    if (text.startsWith(TOOL_CALL_END, cursor))
      return callStep(text, start, cursor + TOOL_CALL_END.length, name, args);
    if (text.startsWith(TOOL_CALL, cursor) || text.startsWith(FUNCTION, cursor))
      return callStep(text, start, cursor, name, args);
    // Stray text between parameters is ignored up to the next tag.
    const nextTag = context.find(text, '<', cursor + 1);
    if (nextTag < 0) {
      if (!eof) return { kind: 'more', skip: start };
      return callStep(text, start, text.length, name, args);
    }
    cursor = nextTag;
  }
}

function convert(raw: string, key: string, schemas: Record<string, unknown> | undefined): PyValue {
  // With the function's schema: vLLM's typed conversion, and a parameter the schema does not
  // declare stays the text it is. Without one: the schema-less heuristic SGLang and
  // hermes-agent use.
  if (schemas === undefined) return isWordIgnoringCase(raw, 'null') ? null : heuristicValue(raw);
  const schema = schemas[key];
  if (schema === undefined) return raw;
  return typedValue(raw, schema);
}

export const qwen3CoderFormat: ToolCallFormat = {
  id: 'qwen3_coder',
  aliases: ['qwen3coder', 'qwen3_xml', 'qwen35', 'qwen3.5'],
  description: 'Qwen3-Coder / Qwen3.5 XML <function=NAME><parameter=KEY> calls',
  keepInvalidArgumentsByDefault: false,
  closingMarkers: [TOOL_CALL_END],
  next,
  render(input: RenderInput): string {
    // vLLM's tool_chat_template_qwen3coder.jinja assistant branch, without the turn markers.
    let out = input.content ? `${input.content.trim()}\n` : '';
    for (const call of input.toolCalls) {
      out += `\n<tool_call>\n<function=${call.name}>\n`;
      for (const [key, value] of argumentsObject(call.arguments)) {
        const text = value instanceof Map || Array.isArray(value) ? pyDumps(value) : jinjaString(value);
        out += `<parameter=${key}>\n${text}\n</parameter>\n`;
      }
      out += '</function>\n</tool_call>';
    }
    return input.content ? out : out.replace(/^\n/, '');
  },
};
