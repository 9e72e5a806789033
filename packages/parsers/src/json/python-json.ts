// A JSON reader that keeps the meaning Python's `json.loads` gives a document (ints stay exact,
// floats are doubles, key order and duplicate-key rules of a dict) and a writer that prints the
// result exactly like `json.dumps(obj, ensure_ascii=False)`. Trainers, chat templates and vLLM
// all see Python's text, so the arguments we hand on must be byte-identical to it.

/** A number as Python holds it, stored as the text `json.dumps` prints for it. */
export class PyNumber {
  constructor(readonly text: string) {}
}

/** A decoded value: dicts are Maps (insertion order, last duplicate wins, first position kept). */
export type PyValue = null | boolean | string | PyNumber | RawJson | PyValue[] | Map<string, PyValue>;

/** How a read ended: `incomplete` means the text ran out while the value could still be valid. */
type JsonReadFailure = 'incomplete' | 'invalid';

/**
 * Python's float repr: the shortest digits that round-trip, positional notation when the
 * decimal exponent is in [-4, 16), otherwise `d.ddde+XX` with at least two exponent digits.
 */
export function pyFloatRepr(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return 'Infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const negative = value < 0;
  // toExponential() without an argument gives the shortest round-trip digits, like Python.
  const exponential = Math.abs(value).toExponential();
  const eIndex = exponential.indexOf('e');
  const digits = exponential.slice(0, eIndex).replace('.', '');
  const exponent = Number(exponential.slice(eIndex + 1));
  const decimalPoint = exponent + 1; // digits are 0.d1d2... * 10^decimalPoint
  let body: string;
  if (decimalPoint > -4 && decimalPoint <= 16) {
    if (decimalPoint <= 0) body = `0.${'0'.repeat(-decimalPoint)}${digits}`;
    else if (decimalPoint >= digits.length) body = `${digits}${'0'.repeat(decimalPoint - digits.length)}.0`;
    else body = `${digits.slice(0, decimalPoint)}.${digits.slice(decimalPoint)}`;
  } else {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = decimalPoint - 1;
    const sign = e < 0 ? '-' : '+';
    const magnitude = Math.abs(e);
    body = `${mantissa}e${sign}${magnitude < 10 ? `0${magnitude}` : magnitude}`;
  }
  return negative ? `-${body}` : body;
}

/** Python's text for an int given by decimal digits (exact, any size; `-0` is `0`). */
export function pyIntText(digits: string): string {
  let start = digits[0] === '-' || digits[0] === '+' ? 1 : 0;
  const negative = digits[0] === '-';
  while (start < digits.length - 1 && digits[start] === '0') start += 1;
  const magnitude = digits.slice(start);
  if (magnitude === '0') return '0';
  return negative ? `-${magnitude}` : magnitude;
}

/** The number a JSON number lexeme means in Python: int when it has no fraction or exponent. */
function pyNumberFromJson(lexeme: string): PyNumber {
  for (let index = 0; index < lexeme.length; index += 1) {
    const code = lexeme.charCodeAt(index);
    if (code === 46 || code === 101 || code === 69) return new PyNumber(pyFloatRepr(Number(lexeme)));
  }
  return new PyNumber(pyIntText(lexeme));
}

const ESCAPES: Record<number, string> = {
  8: '\\b',
  9: '\\t',
  10: '\\n',
  12: '\\f',
  13: '\\r',
  34: '\\"',
  92: '\\\\',
};
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

/** A string literal as `json.dumps(..., ensure_ascii=False)` writes it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const ANY_SURROGATE = /[\ud800-\udfff]/;

/** No lone surrogates (String.prototype.isWellFormed where the runtime has it). */
function isWellFormed(text: string): boolean {
  const native = (text as { isWellFormed?: () => boolean }).isWellFormed;
  if (typeof native === 'function') return native.call(text);
  return !ANY_SURROGATE.test(text) || !LONE_SURROGATE.test(text);
}

export function pyQuote(text: string): string {
  // JSON.stringify escapes exactly like Python except for lone surrogates (it writes \udXXX
  // where Python keeps the code unit), so it is used whenever there are none: one native pass
  // instead of a search for characters to escape followed by the escaping.
  if (isWellFormed(text)) return JSON.stringify(text);
  if (!NEEDS_ESCAPE.test(text)) return `"${text}"`;
  let out = '"';
  let runStart = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 32 || code === 34 || code === 92) {
      out += text.slice(runStart, index);
      out += ESCAPES[code] ?? `\\u00${code < 16 ? '0' : ''}${code.toString(16)}`;
      runStart = index + 1;
    }
  }
  return `${out + text.slice(runStart)}"`;
}

/** `json.dumps(value, ensure_ascii=False)`. */
export function pyDumps(value: PyValue): string {
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'string') return pyQuote(value);
  if (value instanceof PyNumber || value instanceof RawJson) return value.text;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    let out = '[';
    for (let index = 0; index < value.length; index += 1) {
      if (index > 0) out += ', ';
      out += pyDumps(value[index] as PyValue);
    }
    return `${out}]`;
  }
  if (value.size === 0) return '{}';
  let out = '{';
  let first = true;
  for (const [key, item] of value) {
    if (!first) out += ', ';
    first = false;
    out += `${pyQuote(key)}: ${pyDumps(item)}`;
  }
  return `${out}}`;
}

/** Converts a plain JavaScript value (from JSON.parse or user code) into a PyValue. */
export function toPyValue(value: unknown): PyValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number')
    return new PyNumber(
      Number.isInteger(value) && Math.abs(value) < 2 ** 53 ? String(value) : pyFloatRepr(value),
    );
  if (typeof value === 'bigint') return new PyNumber(value.toString());
  if (value instanceof PyNumber) return value;
  if (Array.isArray(value)) return value.map(toPyValue);
  if (value instanceof Map) return new Map([...value].map(([key, item]) => [String(key), toPyValue(item)]));
  if (typeof value === 'object')
    return new Map(
      Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, toPyValue(item)]),
    );
  return String(value);
}

function isWhitespace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

/** Index of the first non-JSON-whitespace character at or after `from`. */
export function skipJsonWhitespace(text: string, from: number): number {
  let index = from;
  while (index < text.length && isWhitespace(text.charCodeAt(index))) index += 1;
  return index;
}

/** Index of the first character at or after `from` that is not Unicode whitespace. */
export function skipWhitespace(text: string, from: number): number {
  let index = from;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (code === 32 || (code >= 9 && code <= 13) || (code > 127 && /\s/.test(text[index] as string)))
      index += 1;
    else break;
  }
  return index;
}

const HEX = /^[0-9a-fA-F]{4}$/;
// CPython raises RecursionError near this depth too.
const MAX_DEPTH = 1000;

/**
 * Reads one JSON value starting exactly at `start`. Lenient in one way only: raw control
 * characters inside strings are taken as themselves (models emit real newlines in code).
 * Also accepts Python's `NaN`, `Infinity` and `-Infinity`, as `json.loads` does.
 */
export class JsonReader {
  text = '';
  pos = 0;
  failure: JsonReadFailure | null = null;
  failedAt = 0;
  /** Starts of objects still open when the read failed (outermost first). */
  openObjects: number[] = [];
  /** Read the values of `arguments`/`parameters` keys through the canonical fast path. */
  rawArguments = false;
  private depth = 0;

  read(text: string, start: number): PyValue | undefined {
    this.text = text;
    this.pos = start;
    this.failure = null;
    this.openObjects = [];
    this.depth = 0;
    const value = this.value();
    return this.failure ? undefined : value;
  }

  private fail(kind: JsonReadFailure, at: number): undefined {
    if (this.failure === null) {
      this.failure = kind;
      this.failedAt = at;
    }
    return undefined;
  }

  private ws(): void {
    const text = this.text;
    let index = this.pos;
    while (index < text.length) {
      const code = text.charCodeAt(index);
      if (code === 32 || code === 10 || code === 13 || code === 9) index += 1;
      else break;
    }
    this.pos = index;
  }

  private value(): PyValue | undefined {
    const text = this.text;
    if (this.pos >= text.length) return this.fail('incomplete', this.pos);
    const code = text.charCodeAt(this.pos);
    if (code === 34) return this.string();
    if (code === 123) return this.object();
    if (code === 91) return this.array();
    if (code === 45 || (code >= 48 && code <= 57)) return this.number();
    if (code === 116) return this.word('true', true);
    if (code === 102) return this.word('false', false);
    if (code === 110) return this.word('null', null);
    if (code === 78) return this.word('NaN', new PyNumber('NaN'));
    if (code === 73) return this.word('Infinity', new PyNumber('Infinity'));
    return this.fail('invalid', this.pos);
  }

  private word(word: string, result: PyValue): PyValue | undefined {
    const text = this.text;
    for (let index = 0; index < word.length; index += 1) {
      const at = this.pos + index;
      if (at >= text.length) return this.fail('incomplete', at);
      if (text.charCodeAt(at) !== word.charCodeAt(index)) return this.fail('invalid', at);
    }
    this.pos += word.length;
    return result;
  }

  private number(): PyValue | undefined {
    const text = this.text;
    const start = this.pos;
    let index = start;
    if (text.charCodeAt(index) === 45) {
      index += 1;
      if (index >= text.length) return this.fail('incomplete', index);
      if (text.charCodeAt(index) === 73) {
        this.pos = index;
        return this.word('Infinity', new PyNumber('-Infinity'));
      }
    }
    const first = text.charCodeAt(index);
    if (first === 48) index += 1;
    else if (first >= 49 && first <= 57) {
      while (index < text.length && isDigit(text.charCodeAt(index))) index += 1;
    } else return this.fail('invalid', index);
    // Python's scanner stops at the longest valid prefix: `1.` is the int 1 followed by `.`.
    if (index < text.length && text.charCodeAt(index) === 46) {
      if (index + 1 >= text.length) return this.fail('incomplete', index + 1);
      if (isDigit(text.charCodeAt(index + 1))) {
        index += 2;
        while (index < text.length && isDigit(text.charCodeAt(index))) index += 1;
      }
    }
    if (index < text.length && (text.charCodeAt(index) === 101 || text.charCodeAt(index) === 69)) {
      let probe = index + 1;
      if (probe < text.length && (text.charCodeAt(probe) === 43 || text.charCodeAt(probe) === 45)) probe += 1;
      if (probe >= text.length) return this.fail('incomplete', probe);
      if (isDigit(text.charCodeAt(probe))) {
        index = probe;
        while (index < text.length && isDigit(text.charCodeAt(index))) index += 1;
      }
    }
    // A number that touches the end of the text may still grow.
    if (index >= text.length) return this.fail('incomplete', index);
    this.pos = index;
    return pyNumberFromJson(text.slice(start, index));
  }

  private string(): string | undefined {
    const text = this.text;
    let index = this.pos + 1;
    let runStart = index;
    let out = '';
    // The quote search only moves forward and backslashes are looked for only before the
    // quote, so many strings or many escapes stay linear.
    let quote = text.indexOf('"', index);
    for (;;) {
      if (quote >= 0 && quote < index) quote = text.indexOf('"', index);
      if (quote < 0) return this.fail('incomplete', text.length);
      let slash = index;
      while (slash < quote && text.charCodeAt(slash) !== 92) slash += 1;
      if (slash === quote) {
        this.pos = quote + 1;
        return out + text.slice(runStart, quote);
      }
      out += text.slice(runStart, slash);
      if (slash + 1 >= text.length) return this.fail('incomplete', text.length);
      const escaped = text.charCodeAt(slash + 1);
      index = slash + 2;
      switch (escaped) {
        case 34:
          out += '"';
          break;
        case 92:
          out += '\\';
          break;
        case 47:
          out += '/';
          break;
        case 98:
          out += '\b';
          break;
        case 102:
          out += '\f';
          break;
        case 110:
          out += '\n';
          break;
        case 114:
          out += '\r';
          break;
        case 116:
          out += '\t';
          break;
        case 117: {
          const hex = text.slice(slash + 2, slash + 6);
          if (!HEX.test(hex)) {
            if (hex.length < 4 && /^[0-9a-fA-F]*$/.test(hex)) return this.fail('incomplete', text.length);
            return this.fail('invalid', slash);
          }
          out += String.fromCharCode(Number.parseInt(hex, 16));
          index = slash + 6;
          break;
        }
        default:
          return this.fail('invalid', slash);
      }
      runStart = index;
    }
  }

  private array(): PyValue[] | undefined {
    if (++this.depth > MAX_DEPTH) return this.fail('invalid', this.pos);
    const text = this.text;
    this.pos += 1;
    const items: PyValue[] = [];
    this.ws();
    if (this.pos >= text.length) return this.fail('incomplete', this.pos);
    if (text.charCodeAt(this.pos) === 93) {
      this.pos += 1;
      this.depth -= 1;
      return items;
    }
    for (;;) {
      this.ws();
      const item = this.value();
      if (item === undefined) return undefined;
      items.push(item);
      this.ws();
      if (this.pos >= text.length) return this.fail('incomplete', this.pos);
      const code = text.charCodeAt(this.pos);
      this.pos += 1;
      if (code === 93) {
        this.depth -= 1;
        return items;
      }
      if (code !== 44) return this.fail('invalid', this.pos - 1);
    }
  }

  private object(): Map<string, PyValue> | undefined {
    if (++this.depth > MAX_DEPTH) return this.fail('invalid', this.pos);
    const text = this.text;
    const start = this.pos;
    this.openObjects.push(start);
    this.pos += 1;
    const entries = new Map<string, PyValue>();
    this.ws();
    if (this.pos >= text.length) return this.fail('incomplete', this.pos);
    if (text.charCodeAt(this.pos) === 125) {
      this.pos += 1;
      this.openObjects.pop();
      this.depth -= 1;
      return entries;
    }
    for (;;) {
      this.ws();
      if (this.pos >= text.length) return this.fail('incomplete', this.pos);
      if (text.charCodeAt(this.pos) !== 34) return this.fail('invalid', this.pos);
      const key = this.string();
      if (key === undefined) return undefined;
      this.ws();
      if (this.pos >= text.length) return this.fail('incomplete', this.pos);
      if (text.charCodeAt(this.pos) !== 58) return this.fail('invalid', this.pos);
      this.pos += 1;
      this.ws();
      let item: PyValue | undefined;
      const rawEnd =
        this.rawArguments && (key === 'arguments' || key === 'parameters')
          ? canonicalJsonEnd(text, this.pos)
          : -1;
      if (rawEnd > 0 && (text.charCodeAt(this.pos) === 123 || text.charCodeAt(this.pos) === 91)) {
        item = new RawJson(text.slice(this.pos, rawEnd));
        this.pos = rawEnd;
      } else item = this.value();
      if (item === undefined) return undefined;
      entries.set(key, item);
      this.ws();
      if (this.pos >= text.length) return this.fail('incomplete', this.pos);
      const code = text.charCodeAt(this.pos);
      this.pos += 1;
      if (code === 125) {
        this.openObjects.pop();
        this.depth -= 1;
        return entries;
      }
      if (code !== 44) return this.fail('invalid', this.pos - 1);
    }
  }
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

const sharedReader = new JsonReader();

/** True for a decoded JSON object (a dict), whether decoded fully or kept as canonical text. */
export function isPyObject(value: PyValue | undefined): boolean {
  return value instanceof Map || (value instanceof RawJson && value.text.charCodeAt(0) === 123);
}

/**
 * `json.loads(text)`: the whole text (surrounding whitespace allowed) must be one value.
 * Canonical objects and arrays come back as RawJson unless `tree` is set.
 */
export function pyJsonLoads(text: string, tree = false): { ok: true; value: PyValue } | { ok: false } {
  const start = skipJsonWhitespace(text, 0);
  const code = text.charCodeAt(start);
  if (!tree && (code === 123 || code === 91)) {
    const end = canonicalJsonEnd(text, start);
    if (end > 0 && skipJsonWhitespace(text, end) === text.length)
      return { ok: true, value: new RawJson(text.slice(start, end)) };
  }
  // Pad so a trailing number is known to be finished: the whole text is given.
  const padded = `${text} `;
  sharedReader.rawArguments = !tree;
  const value = sharedReader.read(padded, start);
  if (value === undefined) return { ok: false };
  if (skipJsonWhitespace(padded, sharedReader.pos) !== padded.length) return { ok: false };
  return { ok: true, value };
}

/** Plain JavaScript view of a PyValue (numbers become JS numbers), for tests and callers. */
export function fromPyValue(value: PyValue): unknown {
  if (value instanceof PyNumber) return Number(value.text);
  if (value instanceof RawJson) return JSON.parse(value.text);
  if (Array.isArray(value)) return value.map(fromPyValue);
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of value) {
      Object.defineProperty(out, key, {
        value: fromPyValue(item),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** JSON text that is already exactly what `json.dumps` would print; dumped as is. */
export class RawJson {
  constructor(readonly text: string) {}
}

/**
 * Fast path: if the value at `start` is valid JSON already written exactly as Python's
 * `json.dumps(ensure_ascii=False)` would write it (`, `/`: ` separators, canonical escapes and
 * numbers, no duplicate keys), returns its end; otherwise -1 and the caller decodes it fully.
 * Model output copied from `tojson` templates is nearly always in this form, and checking it
 * allocates nothing, which is what makes parsing fast.
 */
export function canonicalJsonEnd(text: string, start: number): number {
  keyTop = 0;
  return canonicalValue(text, start, 0);
}

/** Key ranges of the objects being checked (see canonicalValue); reset on every check. */
const keyStack: number[] = [];
let keyTop = 0;

function sameRange(text: string, aStart: number, aEnd: number, bStart: number, bEnd: number): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false;
  for (let offset = 0; offset < aEnd - aStart; offset += 1)
    if (text.charCodeAt(aStart + offset) !== text.charCodeAt(bStart + offset)) return false;
  return true;
}

function canonicalValue(text: string, start: number, depth: number): number {
  if (depth > 200) return -1;
  const code = text.charCodeAt(start);
  if (code === 34) return canonicalString(text, start);
  if (code === 123) {
    let index = start + 1;
    if (text.charCodeAt(index) === 125) return index + 1;
    // Keys seen so far, as [start, end) pairs on a shared stack (no strings cut out); a Set of
    // key texts once an object has many keys.
    const base = keyTop;
    let keys: Set<string> | null = null;
    for (;;) {
      if (text.charCodeAt(index) !== 34) return -1;
      const keyEnd = canonicalString(text, index);
      if (keyEnd < 0) return -1;
      // Canonical escaping is unique, so equal keys have equal text.
      if (keys === null) {
        for (let at = base; at < keyTop; at += 2)
          if (sameRange(text, keyStack[at] as number, keyStack[at + 1] as number, index, keyEnd)) return -1;
        keyStack[keyTop] = index;
        keyStack[keyTop + 1] = keyEnd;
        keyTop += 2;
        if (keyTop - base > 32) {
          keys = new Set();
          for (let at = base; at < keyTop; at += 2)
            keys.add(text.slice(keyStack[at] as number, keyStack[at + 1] as number));
          keyTop = base;
        }
      } else {
        const key = text.slice(index, keyEnd);
        if (keys.has(key)) return -1;
        keys.add(key);
      }
      if (text.charCodeAt(keyEnd) !== 58 || text.charCodeAt(keyEnd + 1) !== 32) return -1;
      index = canonicalValue(text, keyEnd + 2, depth + 1);
      if (index < 0) return -1;
      const next = text.charCodeAt(index);
      if (next === 125) {
        keyTop = base;
        return index + 1;
      }
      if (next !== 44 || text.charCodeAt(index + 1) !== 32) return -1;
      index += 2;
    }
  }
  if (code === 91) {
    let index = start + 1;
    if (text.charCodeAt(index) === 93) return index + 1;
    for (;;) {
      index = canonicalValue(text, index, depth + 1);
      if (index < 0) return -1;
      const next = text.charCodeAt(index);
      if (next === 93) return index + 1;
      if (next !== 44 || text.charCodeAt(index + 1) !== 32) return -1;
      index += 2;
    }
  }
  if (code === 116) return text.startsWith('true', start) ? start + 4 : -1;
  if (code === 102) return text.startsWith('false', start) ? start + 5 : -1;
  if (code === 110) return text.startsWith('null', start) ? start + 4 : -1;
  if (code === 45 || (code >= 48 && code <= 57)) return canonicalNumber(text, start);
  return -1;
}

// A whole canonical string in one native scan: plain runs, then escapes Python writes (short
// forms, and `\u00xx` only for control characters without one), each followed by a plain run.
// Unrolled so the engine keeps one backtrack entry per escape, not one per character.
const CANONICAL_STRING =
  /"[^"\\\u0000-\u001f]*(?:\\(?:["\\bfnrt]|u00(?:0[0-7bef]|1[0-9a-f]))[^"\\\u0000-\u001f]*)*"/y;
// Above this many remaining characters the regex could exhaust its backtrack stack on a
// string made mostly of escapes; the plain loop below takes over.
const REGEX_SCAN_LIMIT = 1 << 20;

function canonicalString(text: string, start: number): number {
  if (text.length - start <= REGEX_SCAN_LIMIT) {
    CANONICAL_STRING.lastIndex = start;
    return CANONICAL_STRING.test(text) ? CANONICAL_STRING.lastIndex : -1;
  }
  return canonicalStringLoop(text, start);
}

function canonicalStringLoop(text: string, start: number): number {
  let index = start + 1;
  const length = text.length;
  for (;;) {
    let code = text.charCodeAt(index);
    while (code >= 32 && code !== 34 && code !== 92) code = text.charCodeAt(++index);
    if (code === 34) return index + 1;
    if (code !== 92 || index >= length) return -1; // a raw control character, or the end
    const escaped = text.charCodeAt(index + 1);
    if (
      escaped === 34 ||
      escaped === 92 ||
      escaped === 98 ||
      escaped === 102 ||
      escaped === 110 ||
      escaped === 114 ||
      escaped === 116
    )
      index += 2;
    else if (escaped === 117) {
      // Only control characters without a short form are written as \u00xx.
      const hex = text.slice(index + 2, index + 6);
      const value = /^00[01][0-9a-f]$/.test(hex) ? Number.parseInt(hex, 16) : -1;
      if (value < 0 || value === 8 || value === 9 || value === 10 || value === 12 || value === 13) return -1;
      index += 6;
    } else return -1;
  }
}

/**
 * Fast path for the usual call object `{"name": "N", "arguments": {...}}` (or `"parameters"`),
 * optionally followed by `"id": "..."` (Mistral's pre-v11 calls), written canonically: returns
 * the name, the argument text, the id and the end, or undefined.
 */
export function canonicalCallObject(
  text: string,
  start: number,
): { name: string; argumentsText: string; id?: string; end: number } | undefined {
  if (!text.startsWith('{"name": "', start)) return undefined;
  const nameStart = start + 9;
  const nameEnd = canonicalString(text, nameStart);
  if (nameEnd < 0) return undefined;
  const name = text.slice(nameStart + 1, nameEnd - 1);
  if (name.includes('\\')) return undefined;
  let argsStart: number;
  if (text.startsWith(', "arguments": ', nameEnd)) argsStart = nameEnd + 15;
  else if (text.startsWith(', "parameters": ', nameEnd)) argsStart = nameEnd + 16;
  else return undefined;
  if (text.charCodeAt(argsStart) !== 123) return undefined;
  const argsEnd = canonicalJsonEnd(text, argsStart);
  if (argsEnd < 0) return undefined;
  if (text.charCodeAt(argsEnd) === 125)
    return { name, argumentsText: text.slice(argsStart, argsEnd), end: argsEnd + 1 };
  // A model-written id after the arguments; read here, not by transcodeCallObject from the start.
  if (!text.startsWith(', "id": "', argsEnd)) return undefined;
  const idStart = argsEnd + 8;
  const idEnd = canonicalString(text, idStart);
  if (idEnd < 0 || text.charCodeAt(idEnd) !== 125) return undefined;
  const id = text.slice(idStart + 1, idEnd - 1);
  if (id.includes('\\')) return undefined;
  return { name, argumentsText: text.slice(argsStart, argsEnd), id, end: idEnd + 1 };
}

function canonicalNumber(text: string, start: number): number {
  let index = start;
  if (text.charCodeAt(index) === 45) index += 1;
  const intStart = index;
  const first = text.charCodeAt(index);
  if (first === 48) index += 1;
  else if (first >= 49 && first <= 57) {
    while (isDigit(text.charCodeAt(index))) index += 1;
  } else return -1;
  const intEnd = index;
  let isFloat = false;
  if (text.charCodeAt(index) === 46) {
    if (!isDigit(text.charCodeAt(index + 1))) return -1;
    index += 2;
    while (isDigit(text.charCodeAt(index))) index += 1;
    isFloat = true;
  }
  const e = text.charCodeAt(index);
  if (isFloat && e !== 101 && e !== 69 && index < text.length) {
    const verdict = canonicalPositionalFloat(text, intStart, intEnd, index);
    if (verdict !== 0) return verdict > 0 ? index : -1;
  }
  if (e === 101 || e === 69) {
    let probe = index + 1;
    const sign = text.charCodeAt(probe);
    if (sign === 43 || sign === 45) probe += 1;
    if (!isDigit(text.charCodeAt(probe))) return -1;
    index = probe;
    while (isDigit(text.charCodeAt(index))) index += 1;
    isFloat = true;
  }
  if (index >= text.length) return -1; // may still grow
  if (!isFloat) return index - start === 2 && text.charCodeAt(start) === 45 && first === 48 ? -1 : index;
  const lexeme = text.slice(start, index);
  const value = Number(lexeme);
  const magnitude = Math.abs(value);
  if (magnitude >= 1e-4 && magnitude < 1e16 && e !== 101 && e !== 69) {
    // Both languages print this range positionally with the same shortest digits; Python
    // adds `.0` to integral floats. String() is much cheaper than pyFloatRepr.
    const js = String(value);
    return (Number.isInteger(value) ? `${js}.0` : js) === lexeme ? index : -1;
  }
  return pyFloatRepr(value) === lexeme ? index : -1;
}

/**
 * Decides without converting whether the positional float `int.frac` (digits at
 * [intStart, intEnd) and [intEnd + 1, end)) is what Python's repr prints: 1 yes, -1 no, 0 when
 * only a conversion can tell. With at most 15 significant digits a decimal is the shortest
 * text that round-trips to its double (doubles keep 15 digits exactly), so the repr is the
 * same digits without trailing fraction zeros (one `0` kept for integral values), positional
 * when the decimal exponent is in [-4, 16).
 */
function canonicalPositionalFloat(text: string, intStart: number, intEnd: number, end: number): number {
  const fracStart = intEnd + 1;
  const last = text.charCodeAt(end - 1);
  const intIsZero = intEnd - intStart === 1 && text.charCodeAt(intStart) === 48;
  if (last === 48) {
    // Only `X.0` (an integral value) may end in zero, and `0.0` is zero itself.
    if (end - fracStart !== 1) return -1;
    if (intIsZero) return 1;
    return intEnd - intStart <= 15 ? 1 : 0;
  }
  let significant: number;
  if (intIsZero) {
    let firstNonZero = fracStart;
    while (text.charCodeAt(firstNonZero) === 48) firstNonZero += 1;
    // 0.0001 is the smallest positional magnitude (decimal exponent -4).
    if (firstNonZero - fracStart > 3) return -1;
    significant = end - firstNonZero;
  } else significant = intEnd - intStart + (end - fracStart);
  return significant <= 15 ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// Transcoding: `json.dumps(json.loads(value))` in one pass, without building the value. Model
// output is often valid JSON written another way (compact or pretty-printed, `\uXXXX` or `\/`
// escapes); re-spacing and re-escaping it directly costs a fraction of decoding it into a tree
// and printing that. Anything unusual (duplicate keys, escaped keys, numbers not written the way
// Python prints them, raw control characters, lone surrogates, text that may still grow) makes
// it give up, and the caller takes the full reader, which is exact for every input.

/** A string with only the escapes JSON allows (what JSON.parse accepts). */
const STANDARD_STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;

let tText = '';
let tOut = '';
let tCopyFrom = 0;
const tKeys: number[] = [];
let tKeyTop = 0;
/** End of the value the last successful transcodeJson / transcodeCallObject read. */
export let transcodedEnd = 0;

function tFlush(to: number): void {
  if (to > tCopyFrom) tOut += tText.slice(tCopyFrom, to);
}

function tWs(index: number): number {
  const text = tText;
  let at = index;
  for (;;) {
    const code = text.charCodeAt(at);
    if (code === 32 || code === 10 || code === 13 || code === 9) at += 1;
    else return at;
  }
}

/**
 * End of the plain string (no escapes, no control characters) at `index` when it closes within
 * 64 characters, else -1. For the keys, names and ids of call objects, whose text is needed.
 * (Strings and keys inside values are matched by the regex straight away: running this loop
 * first was slower, even for short keys; see bench/README.md.)
 */
function plainShortString(text: string, index: number): number {
  const limit = Math.min(text.length, index + 65);
  for (let at = index + 1; at < limit; at += 1) {
    const code = text.charCodeAt(at);
    if (code === 34) return at + 1;
    if (code === 92 || code < 32) return -1;
  }
  return -1;
}

/** Writes `replacement` for the text in [from, resume) (everything before `from` is copied as is). */
function tEdit(from: number, replacement: string, resume: number): void {
  tOut += from > tCopyFrom ? tText.slice(tCopyFrom, from) + replacement : replacement;
  tCopyFrom = resume;
}

function tString(index: number): number {
  const text = tText;
  if (text.length - index > REGEX_SCAN_LIMIT) return -1;
  CANONICAL_STRING.lastIndex = index;
  if (CANONICAL_STRING.test(text)) return CANONICAL_STRING.lastIndex;
  return tReencodeString(index);
}

/** Value of the four hex digits at `at`, or -1. */
function hex4(text: string, at: number): number {
  let value = 0;
  for (let index = at; index < at + 4; index += 1) {
    const code = text.charCodeAt(index);
    let digit: number;
    if (code >= 48 && code <= 57) digit = code - 48;
    else if (code >= 97 && code <= 102) digit = code - 87;
    else if (code >= 65 && code <= 70) digit = code - 55;
    else return -1;
    value = value * 16 + digit;
  }
  return value;
}

/**
 * A string with escapes Python writes otherwise (`\/`, `\u00e9`, `\u000A`, ...): each such
 * escape is re-spelt in place, the rest copied, in one loop over the literal. Before, the
 * literal was matched by a second regex, decoded by JSON.parse, checked for lone surrogates and
 * printed by JSON.stringify: five scans, ~2 µs per string. Anything about surrogates but a
 * clean pair (escaped or raw) goes to the full reader, as before.
 */
function tReencodeString(index: number): number {
  const text = tText;
  const length = text.length;
  let at = index + 1;
  for (;;) {
    if (at >= length) return -1;
    const code = text.charCodeAt(at);
    if (code === 34) return at + 1;
    if (code !== 92) {
      if (code < 32) return -1;
      if (code >= 0xd800 && code <= 0xdfff) {
        // A raw high surrogate must be followed by a low one, raw or escaped; anything else
        // (a lone half) goes to the full reader.
        if (code > 0xdbff) return -1;
        const low = text.charCodeAt(at + 1);
        if (low >= 0xdc00 && low <= 0xdfff) at += 2;
        else {
          const escapedLow = low === 92 && text.charCodeAt(at + 2) === 117 ? hex4(text, at + 3) : -1;
          if (!(escapedLow >= 0xdc00 && escapedLow <= 0xdfff)) return -1;
          tEdit(at + 1, String.fromCharCode(escapedLow), at + 7);
          at += 7;
        }
      } else at += 1;
      continue;
    }
    const escaped = text.charCodeAt(at + 1);
    if (
      escaped === 34 ||
      escaped === 92 ||
      escaped === 98 ||
      escaped === 102 ||
      escaped === 110 ||
      escaped === 114 ||
      escaped === 116
    ) {
      at += 2;
      continue;
    }
    if (escaped === 47) {
      tEdit(at, '/', at + 2);
      at += 2;
      continue;
    }
    if (escaped !== 117) return -1;
    const value = hex4(text, at + 2);
    if (value < 0) return -1;
    if (value >= 0xd800 && value <= 0xdfff) {
      // An escaped high surrogate followed by a low one (escaped or raw) becomes the
      // character; a lone half goes to the full reader.
      if (value > 0xdbff) return -1;
      const next = text.charCodeAt(at + 6);
      if (next >= 0xdc00 && next <= 0xdfff) {
        tEdit(at, String.fromCharCode(value), at + 6);
        at += 7;
        continue;
      }
      const low = next === 92 && text.charCodeAt(at + 7) === 117 ? hex4(text, at + 8) : -1;
      if (!(low >= 0xdc00 && low <= 0xdfff)) return -1;
      tEdit(at, String.fromCharCode(value, low), at + 12);
      at += 12;
      continue;
    }
    let spelt: string;
    if (value < 32) spelt = ESCAPES[value] ?? `\\u00${value < 16 ? '0' : ''}${value.toString(16)}`;
    else if (value === 34) spelt = '\\"';
    else if (value === 92) spelt = '\\\\';
    else spelt = String.fromCharCode(value);
    // `\u001f` is already how Python writes it; `\u001F` and `\u000a` are not.
    if (!(value < 32 && spelt.length === 6 && text.startsWith(spelt, at))) tEdit(at, spelt, at + 6);
    at += 6;
  }
}

/** End of the canonically escaped key at `index`, or -1 (other keys go to the full reader). */
function tKey(text: string, index: number): number {
  if (text.length - index > REGEX_SCAN_LIMIT) return -1;
  CANONICAL_STRING.lastIndex = index;
  return CANONICAL_STRING.test(text) ? CANONICAL_STRING.lastIndex : -1;
}

function isJsonSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

/**
 * One value, its spacing rewritten in place: a separator written `", "` / `": "` followed by a
 * token is kept, anything else (compact, pretty, spaced) is replaced; whitespace after an
 * opening or before a closing bracket is dropped. One function for both containers so the hot
 * path is one loop with no calls but the recursion.
 */
function tValue(index: number, depth: number): number {
  if (depth > 200) return -1;
  const text = tText;
  const code = text.charCodeAt(index);
  if (code === 34) return tString(index);
  if (code === 123 || code === 91) {
    const isObject = code === 123;
    const close = isObject ? 125 : 93;
    let at = index + 1;
    let next = text.charCodeAt(at);
    if (isJsonSpace(next)) {
      const token = tWs(at);
      tEdit(at, '', token);
      at = token;
      next = text.charCodeAt(at);
    }
    if (next === close) return at + 1;
    const base = tKeyTop;
    for (;;) {
      if (isObject) {
        // Keys must be canonical already: then equal keys have equal text and duplicates (which
        // Python resolves by keeping the last value) are found by comparing ranges.
        if (next !== 34) return -1;
        const keyEnd = tKey(text, at);
        if (keyEnd < 0) return -1;
        for (let key = base; key < tKeyTop; key += 2)
          if (sameRange(text, tKeys[key] as number, tKeys[key + 1] as number, at, keyEnd)) return -1;
        if (tKeyTop - base > 64) return -1;
        tKeys[tKeyTop] = at;
        tKeys[tKeyTop + 1] = keyEnd;
        tKeyTop += 2;
        if (
          text.charCodeAt(keyEnd) === 58 &&
          text.charCodeAt(keyEnd + 1) === 32 &&
          !isJsonSpace(text.charCodeAt(keyEnd + 2))
        )
          at = keyEnd + 2;
        else {
          const colon = tWs(keyEnd);
          if (text.charCodeAt(colon) !== 58) return -1;
          at = tWs(colon + 1);
          tEdit(keyEnd, ': ', at);
        }
      }
      const end = tValue(at, depth + 1);
      if (end < 0) return -1;
      const after = text.charCodeAt(end);
      if (after === close) {
        tKeyTop = base;
        return end + 1;
      }
      if (after === 44 && text.charCodeAt(end + 1) === 32 && !isJsonSpace(text.charCodeAt(end + 2)))
        at = end + 2;
      else {
        const token = tWs(end);
        const separator = text.charCodeAt(token);
        if (separator === close) {
          tEdit(end, '', token);
          tKeyTop = base;
          return token + 1;
        }
        if (separator !== 44) return -1;
        at = tWs(token + 1);
        tEdit(end, ', ', at);
      }
      next = text.charCodeAt(at);
    }
  }
  if (code === 116) return text.startsWith('true', index) ? index + 4 : -1;
  if (code === 102) return text.startsWith('false', index) ? index + 5 : -1;
  if (code === 110) return text.startsWith('null', index) ? index + 4 : -1;
  if (code === 45 || (code >= 48 && code <= 57)) return canonicalNumber(text, index);
  return -1;
}

function tBegin(text: string, start: number): void {
  tText = text;
  tOut = '';
  tCopyFrom = start;
  tKeyTop = 0;
}

/**
 * `json.dumps(json.loads(v), ensure_ascii=False)` for the JSON value `v` at `start`, or
 * undefined when the full reader must decide (see above). Sets `transcodedEnd`.
 */
export function transcodeJson(text: string, start: number): string | undefined {
  tBegin(text, start);
  const end = tValue(start, 0);
  if (end < 0) {
    tText = '';
    return undefined;
  }
  tFlush(end);
  transcodedEnd = end;
  const out = tOut;
  tText = '';
  tOut = '';
  return out;
}

/**
 * Fast path for a call object written any way (`{"arguments": ..., "name": ...}`, compact,
 * pretty, escaped): its name, argument text as `json.dumps` prints it, model-written id and end.
 * Undefined when the full reader must decide (also when the name is not a plain string, there
 * are no arguments, or they are a string).
 */
export function transcodeCallObject(
  text: string,
  start: number,
): { name: string; argumentsText: string; id?: string; end: number } | undefined {
  if (text.charCodeAt(start) !== 123) return undefined;
  let name: string | undefined;
  let args: string | undefined;
  let params: string | undefined;
  let id: string | undefined;
  let at = skipJsonWhitespace(text, start + 1);
  for (;;) {
    if (text.charCodeAt(at) !== 34) return undefined;
    // Only short plain keys can be the ones looked for; anything else goes to the full reader.
    const keyEnd = plainShortString(text, at);
    if (keyEnd < 0) return undefined;
    const key = keyEnd - at <= 12 ? text.slice(at + 1, keyEnd - 1) : '';
    at = skipJsonWhitespace(text, keyEnd);
    if (text.charCodeAt(at) !== 58) return undefined;
    at = skipJsonWhitespace(text, at + 1);
    const code = text.charCodeAt(at);
    if (key === 'name' || key === 'id') {
      if (code !== 34 || (key === 'name' ? name : id) !== undefined) return undefined;
      const plain = plainShortString(text, at);
      let end = plain;
      if (plain < 0) {
        STANDARD_STRING.lastIndex = at;
        if (text.length - at > REGEX_SCAN_LIMIT || !STANDARD_STRING.test(text)) return undefined;
        end = STANDARD_STRING.lastIndex;
      }
      const value = plain > 0 ? text.slice(at + 1, end - 1) : (JSON.parse(text.slice(at, end)) as string);
      if (!isWellFormed(value)) return undefined;
      if (key === 'name') name = value;
      else id = value;
      at = end;
    } else {
      // Any other value is transcoded too: that also checks it is valid JSON.
      if ((key === 'arguments' || key === 'parameters') && code !== 123 && code !== 91) return undefined;
      const out = transcodeJson(text, at);
      if (out === undefined) return undefined;
      if (key === 'arguments') {
        if (args !== undefined) return undefined;
        args = out;
      } else if (key === 'parameters') {
        if (params !== undefined) return undefined;
        params = out;
      }
      at = transcodedEnd;
    }
    at = skipJsonWhitespace(text, at);
    const next = text.charCodeAt(at);
    if (next === 125) {
      const argumentsText = args ?? params;
      if (name === undefined || argumentsText === undefined) return undefined;
      transcodedEnd = at + 1;
      const call: { name: string; argumentsText: string; id?: string; end: number } = {
        name,
        argumentsText,
        end: at + 1,
      };
      if (id !== undefined) call.id = id;
      return call;
    }
    if (next !== 44) return undefined;
    at = skipJsonWhitespace(text, at + 1);
  }
}
