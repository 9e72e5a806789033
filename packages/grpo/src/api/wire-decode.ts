// Decoding and validating Atropos `ScoredData` request bodies (POST /scored_data and
// /scored_data_list) the way the reference server's pydantic model does, and producing the
// bytes the queue stores. Everything lives inside ONE self-contained function so that the same
// code runs inline and, via `Function.prototype.toString`, inside decode worker threads
// (JSON.parse of a 2 MB group would otherwise block the event loop that serves /batch).
// That is also why this module parses with JSON.parse itself instead of core's parseJson: the
// worker cannot import, and a JSON error must become FastAPI's 422 `json_invalid` anyway.
//
// Number types on the wire are Atropos's, not the client's spelling: pydantic turns every
// element of `tokens`, `masks`, `distill_token_ids` and `env_id` into a Python int and every
// element of `scores`, `advantages`, `ref_logprobs`, `inference_logprobs` and `distill_logprobs`
// into a Python float, and json.dumps writes them as `3` and `1.0`. The stored text is
// rewritten here, once, at ingest (`1` → `1.0` in a float field, `3.0` / `1e3` → `3` / `1000`
// in an int field, floats in Python's repr), so /batch serves stored bytes unchanged. Fields
// typed `Any` (messages, generation_params, overrides, group_overrides, images) keep the
// client's text: Python reads the same value and type from it (`1` stays an int, `1.0` a float).
// Non-finite numbers (NaN, Infinity, 1e400, "nan") are refused with 422 `finite_number`:
// Atropos accepts them and then fails every /batch and /latest_example with a 500.

/** One decoded group, ready to store. */
export interface DecodedGroup {
  envId: number | null;
  /** Number of sequences (`tokens.length`). */
  size: number;
  /** 1 = `payload` is gzip, 0 = UTF-8 JSON text. */
  encoding: 0 | 1;
  /** The group object as JSON (possibly gzip-compressed), without the missing-key suffix. */
  payload: Uint8Array;
  /** `,"key":null` entries for the wire keys the body left out, spliced in before the final `}`. */
  suffix: string;
}

export type DecodeResult =
  | { ok: true; groups: DecodedGroup[] }
  | { ok: false; status: number; contentType: string; body: string };

export interface DecodeRequest {
  kind: 'single' | 'list';
  body: Uint8Array;
  gzip: boolean;
  /** Maximum size of the decompressed body in bytes. */
  maxBytes: number;
  /** Skip the byte-scan fast path (tests compare both paths). */
  generalOnly?: boolean;
}

export interface WireDecoder {
  decode(request: DecodeRequest): DecodeResult;
  /** The 14 keys of a stored group, in wire order. */
  keys: readonly string[];
  /** Python's repr of a float (`1.0`, `1e-05`), as json.dumps writes it. */
  pythonFloat(value: number): string;
  /** A stored group's text cut after `at` sequences: [head, tail], every number spelled as stored. */
  splitGroupText(text: string, at: number): [string, string];
}

/**
 * Builds the decoder. Self-contained on purpose (see the module comment): it may only use
 * its own locals and `require('node:zlib')`, which the caller passes in.
 */
export function wireDecoderSource(zlib: typeof import('node:zlib')): WireDecoder {
  const KEYS = [
    'tokens',
    'masks',
    'scores',
    'advantages',
    'ref_logprobs',
    'messages',
    'generation_params',
    'inference_logprobs',
    'overrides',
    'group_overrides',
    'images',
    'env_id',
    'distill_token_ids',
    'distill_logprobs',
  ];
  const KNOWN = new Set(KEYS);
  // Per-sequence fields: when a group is split these are cut; the others are group-level.
  const PER_SEQUENCE = new Set([
    'tokens',
    'masks',
    'scores',
    'advantages',
    'ref_logprobs',
    'messages',
    'inference_logprobs',
    'overrides',
    'distill_token_ids',
    'distill_logprobs',
  ]);
  const NUMERIC: Record<string, readonly [number, boolean, boolean]> = {
    // key: [nesting depth, integers only, may be null]
    tokens: [2, true, false],
    masks: [2, true, false],
    scores: [1, false, false],
    advantages: [2, false, true],
    ref_logprobs: [2, false, true],
    inference_logprobs: [2, false, true],
    distill_token_ids: [3, true, true],
    distill_logprobs: [3, false, true],
  };
  type Issue = { type: string; loc: (string | number)[]; msg: string; input?: unknown };

  function preview(value: unknown): unknown {
    if (Array.isArray(value)) return value.length > 8 ? '[…]' : value;
    if (typeof value === 'string' && value.length > 200) return `${value.slice(0, 200)}…`;
    if (value !== null && typeof value === 'object') return '{…}';
    return value;
  }

  /** Python's repr of a float, which json.dumps writes: `1.0`, `-0.0`, `1e-05`, `1.5e+16`. */
  function pythonFloat(value: number): string {
    if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
    // toExponential() without digits gives the shortest round-trip digits, as repr does.
    const text = value.toExponential();
    const at = text.indexOf('e');
    const exponent = Number(text.slice(at + 1));
    const digits = text.slice(value < 0 ? 1 : 0, at).replace('.', '');
    const sign = value < 0 ? '-' : '';
    if (exponent < -4 || exponent >= 16) {
      const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
      const magnitude = Math.abs(exponent);
      return `${sign}${body}e${exponent < 0 ? '-' : '+'}${magnitude < 10 ? '0' : ''}${magnitude}`;
    }
    if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
    const whole =
      digits.length > exponent + 1 ? digits.slice(0, exponent + 1) : digits.padEnd(exponent + 1, '0');
    return `${sign}${whole}.${digits.length > exponent + 1 ? digits.slice(exponent + 1) : '0'}`;
  }

  /** The decimal digits of an integral double (`-0` → `0`). */
  function integerText(value: number): string {
    if (value === 0) return '0';
    return Number.isSafeInteger(value) ? String(value) : BigInt(value).toString();
  }

  const INT_STRING = /^[+-]?\d+(?:_\d+)*(?:\.0+)?$/;
  const FLOAT_STRING =
    /^[+-]?(?:(?:\d+(?:_\d+)*)(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+(?:_\d+)*)?$/;
  const NON_FINITE_STRING = /^[+-]?(?:inf|infinity|nan)$/i;
  const INT_LIMIT = 2 ** 63;

  type Converted = { text: string } | { issue: Omit<Issue, 'loc'> };

  // pydantic v2 lax mode, Python input (what FastAPI validates): the canonical JSON text of one
  // element of an int field, or pydantic's error for it.
  function toInt(value: unknown): Converted {
    if (typeof value === 'number') {
      if (!Number.isFinite(value))
        return {
          issue: { type: 'finite_number', msg: 'Input should be a finite number', input: String(value) },
        };
      if (!Number.isInteger(value))
        return {
          issue: {
            type: 'int_from_float',
            msg: 'Input should be a valid integer, got a number with a fractional part',
            input: value,
          },
        };
      if (Math.abs(value) >= INT_LIMIT)
        return {
          issue: {
            type: 'int_parsing_size',
            msg: 'Unable to parse input string as an integer, exceeded maximum size',
            input: value,
          },
        };
      return { text: integerText(value) };
    }
    if (typeof value === 'boolean') return { text: value ? '1' : '0' };
    if (typeof value === 'string') {
      const trimmed = value.trim();
      if (INT_STRING.test(trimmed)) {
        const point = trimmed.indexOf('.');
        return {
          text: BigInt((point < 0 ? trimmed : trimmed.slice(0, point)).replaceAll('_', '')).toString(),
        };
      }
      return {
        issue: {
          type: 'int_parsing',
          msg: 'Input should be a valid integer, unable to parse string as an integer',
          input: preview(value),
        },
      };
    }
    return { issue: { type: 'int_type', msg: 'Input should be a valid integer', input: preview(value) } };
  }

  // The same for a float field. NaN and infinities are refused (see the module comment).
  function toFloat(value: unknown): Converted {
    let number: number;
    if (typeof value === 'number') number = value;
    else if (typeof value === 'boolean') number = value ? 1 : 0;
    else if (typeof value === 'string') {
      const trimmed = value.trim();
      if (NON_FINITE_STRING.test(trimmed)) number = Number.NaN;
      else if (FLOAT_STRING.test(trimmed)) number = Number(trimmed.replaceAll('_', ''));
      else
        return {
          issue: {
            type: 'float_parsing',
            msg: 'Input should be a valid number, unable to parse string as a number',
            input: preview(value),
          },
        };
    } else
      return { issue: { type: 'float_type', msg: 'Input should be a valid number', input: preview(value) } };
    if (!Number.isFinite(number))
      return {
        issue: {
          type: 'finite_number',
          msg: 'Input should be a finite number',
          input: typeof value === 'number' ? String(value) : value,
        },
      };
    return { text: pythonFloat(number) };
  }

  interface Ctx {
    issues: Issue[];
    /** Canonical JSON text of the typed fields of the group being validated. */
    typed: Map<string, string>;
  }

  // One number as the client spelled it: JSON.parse has already lost `-0` (the int 0) and the
  // digits of integers past 2^53, which Python keeps.
  function fromLiteral(raw: string, integer: boolean): Converted {
    if (/^-?\d+$/.test(raw)) {
      if (integer) return { text: raw === '-0' ? '0' : raw };
      if (raw === '-0') return { text: '0.0' };
      const value = Number(raw);
      // Python's float() of an int too large for a double raises OverflowError: float_type.
      if (!Number.isFinite(value))
        return { issue: { type: 'float_type', msg: 'Input should be a valid number', input: preview(raw) } };
      return { text: pythonFloat(value) };
    }
    return integer ? toInt(Number(raw)) : toFloat(Number(raw));
  }

  // Validates a list nested `depth` levels deep of numbers; returns its canonical text. With
  // `raw` (the body text and where this list starts in it), numbers are read as written.
  function numberList(
    value: unknown,
    depth: number,
    integer: boolean,
    loc: (string | number)[],
    ctx: Ctx,
    raw?: { text: string; at: number },
  ): string {
    if (!Array.isArray(value)) {
      ctx.issues.push({ type: 'list_type', loc, msg: 'Input should be a valid list', input: preview(value) });
      return '';
    }
    const starts = raw ? elementStarts(raw.text, raw.at) : undefined;
    const parts: string[] = new Array(value.length);
    for (let index = 0; index < value.length; index++) {
      const at = starts?.[index];
      if (depth > 1) {
        parts[index] = numberList(
          value[index],
          depth - 1,
          integer,
          [...loc, index],
          ctx,
          raw && at !== undefined ? { text: raw.text, at } : undefined,
        );
        continue;
      }
      const item = value[index];
      const converted =
        raw && at !== undefined && typeof item === 'number'
          ? fromLiteral(raw.text.slice(at, valueEnd(raw.text, at)), integer)
          : integer
            ? toInt(item)
            : toFloat(item);
      if ('text' in converted) parts[index] = converted.text;
      else {
        if (ctx.issues.length <= 20) ctx.issues.push({ ...converted.issue, loc: [...loc, index] } as Issue);
        parts[index] = '';
      }
    }
    return `[${parts.join(',')}]`;
  }

  function isDict(value: unknown): value is Record<string, unknown> {
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  }

  function validateGroup(
    value: unknown,
    base: (string | number)[],
    ctx: Ctx,
    raw?: { text: string; spans: Map<string, [number, number]> },
  ): boolean {
    if (!isDict(value)) {
      ctx.issues.push({
        type: 'model_attributes_type',
        loc: base,
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: preview(value),
      });
      return false;
    }
    const before = ctx.issues.length;
    ctx.typed = new Map();
    const nullable = (key: string) => value[key] === undefined || value[key] === null;
    for (const [key, [depth, integer, optional]] of Object.entries(NUMERIC)) {
      if (!(key in value)) {
        if (!optional)
          ctx.issues.push({ type: 'missing', loc: [...base, key], msg: 'Field required', input: '{…}' });
      } else if (optional && value[key] === null) ctx.typed.set(key, 'null');
      else {
        const span = raw?.spans.get(key);
        const at = raw && span ? { text: raw.text, at: span[0] } : undefined;
        ctx.typed.set(key, numberList(value[key], depth, integer, [...base, key], ctx, at));
      }
    }
    for (const key of ['generation_params', 'group_overrides']) {
      if (!nullable(key) && !isDict(value[key])) {
        ctx.issues.push({
          type: 'dict_type',
          loc: [...base, key],
          msg: 'Input should be a valid dictionary',
          input: preview(value[key]),
        });
      }
    }
    if (!nullable('overrides')) {
      const overrides = value.overrides;
      if (!Array.isArray(overrides))
        ctx.issues.push({
          type: 'list_type',
          loc: [...base, 'overrides'],
          msg: 'Input should be a valid list',
          input: preview(overrides),
        });
      else
        overrides.forEach((item, index) => {
          if (!isDict(item))
            ctx.issues.push({
              type: 'dict_type',
              loc: [...base, 'overrides', index],
              msg: 'Input should be a valid dictionary',
              input: preview(item),
            });
        });
    }
    if (!nullable('env_id')) {
      const span = raw?.spans.get('env_id');
      const envId =
        raw && span && typeof value.env_id === 'number'
          ? fromLiteral(raw.text.slice(span[0], span[1]), true)
          : toInt(value.env_id);
      if ('issue' in envId) ctx.issues.push({ ...envId.issue, loc: [...base, 'env_id'] } as Issue);
      else ctx.typed.set('env_id', envId.text);
    } else if (value.env_id === null) ctx.typed.set('env_id', 'null');
    if (!nullable('messages')) {
      const messages = value.messages;
      if (!Array.isArray(messages))
        ctx.issues.push({
          type: 'list_type',
          loc: [...base, 'messages'],
          msg: 'Input should be a valid list',
          input: preview(messages),
        });
      else
        messages.forEach((conversation, index) => {
          if (!Array.isArray(conversation)) {
            ctx.issues.push({
              type: 'list_type',
              loc: [...base, 'messages', index],
              msg: 'Input should be a valid list',
              input: preview(conversation),
            });
            return;
          }
          conversation.forEach((message, position) => {
            const loc = [...base, 'messages', index, position];
            if (!isDict(message)) {
              ctx.issues.push({
                type: 'dict_type',
                loc,
                msg: 'Input should be a valid dictionary',
                input: preview(message),
              });
              return;
            }
            if (!('role' in message))
              ctx.issues.push({
                type: 'missing',
                loc: [...loc, 'role'],
                msg: 'Field required',
                input: '{…}',
              });
            else if (typeof message.role !== 'string')
              ctx.issues.push({
                type: 'string_type',
                loc: [...loc, 'role'],
                msg: 'Input should be a valid string',
                input: preview(message.role),
              });
            if (!('content' in message))
              ctx.issues.push({
                type: 'missing',
                loc: [...loc, 'content'],
                msg: 'Field required',
                input: '{…}',
              });
          });
        });
    }
    return ctx.issues.length === before;
  }

  const encoder = new TextEncoder();

  // Raw spans of values in JSON text that JSON.parse has accepted (so no error checks here).
  function skipSpace(t: string, p: number): number {
    for (;;) {
      const c = t.charCodeAt(p);
      if (c === 32 || c === 10 || c === 13 || c === 9) p++;
      else return p;
    }
  }
  function valueEnd(t: string, p: number): number {
    let depth = 0;
    let inString = false;
    for (;;) {
      const c = t.charCodeAt(p++);
      if (Number.isNaN(c)) return p - 1;
      if (inString) {
        if (c === 92) p++;
        else if (c === 34) {
          inString = false;
          if (depth === 0) return p;
        }
      } else if (c === 34) inString = true;
      else if (c === 91 || c === 123) depth++;
      else if (c === 93 || c === 125) {
        if (depth === 0) return p - 1;
        if (--depth === 0) return p;
      } else if (depth === 0 && (c === 44 || c === 32 || c === 10 || c === 13 || c === 9)) return p - 1;
    }
  }
  /** Members of the object at `p` (a `{`): key → value span; a repeated key keeps its first place and last value, as JSON.parse and Python do. */
  function memberSpans(t: string, p: number): { spans: Map<string, [number, number]>; end: number } {
    const spans = new Map<string, [number, number]>();
    p = skipSpace(t, p + 1);
    if (t.charCodeAt(p) === 125) return { spans, end: p + 1 };
    for (;;) {
      const keyEnd = valueEnd(t, p);
      const key = JSON.parse(t.slice(p, keyEnd)) as string;
      p = skipSpace(t, skipSpace(t, keyEnd) + 1);
      const end = valueEnd(t, p);
      spans.set(key, [p, end]);
      p = skipSpace(t, end);
      if (t.charCodeAt(p) !== 44) return { spans, end: p + 1 };
      p = skipSpace(t, p + 1);
    }
  }
  /** Start offsets of the elements of the array at `p` (a `[`). */
  function elementStarts(t: string, p: number): number[] {
    const starts: number[] = [];
    p = skipSpace(t, p + 1);
    if (t.charCodeAt(p) === 93) return starts;
    for (;;) {
      starts.push(p);
      p = skipSpace(t, valueEnd(t, p));
      if (t.charCodeAt(p) !== 44) return starts;
      p = skipSpace(t, p + 1);
    }
  }

  // The stored text of a group from the general path: its known keys in the client's order
  // (unknown top-level keys are dropped, as pydantic does), typed fields in canonical form,
  // `Any` fields as the client wrote them; missing keys are supplied at serve time (`suffix`).
  function storedFrom(
    value: Record<string, unknown>,
    text: string,
    spans: Map<string, [number, number]>,
    typed: Map<string, string>,
  ): DecodedGroup {
    const parts: string[] = [];
    for (const [key, [from, to]] of spans) {
      if (!KNOWN.has(key)) continue;
      parts.push(`${JSON.stringify(key)}:${typed.get(key) ?? text.slice(from, to)}`);
    }
    let suffix = '';
    for (const key of KEYS) if (!spans.has(key)) suffix += `,${JSON.stringify(key)}:null`;
    const envText = typed.get('env_id');
    const envId = envText === undefined || envText === 'null' ? null : Number(envText);
    const size = (value.tokens as unknown[]).length;
    return { envId, size, encoding: 0, payload: encoder.encode(`{${parts.join(',')}}`), suffix };
  }

  function unprocessable(issues: Issue[]): DecodeResult {
    return {
      ok: false,
      status: 422,
      contentType: 'application/json',
      body: JSON.stringify({ detail: issues.slice(0, 20) }),
    };
  }

  // Fast path for the common, well-formed body: one byte scan of the JSON text that checks the
  // number lists in place instead of JSON.parse building ~200k numbers and a schema walk over
  // them. It accepts only what the general path would store unchanged (known keys, no
  // duplicates, plain integer literals where ints are due, nothing to coerce) and answers
  // `undefined` on anything else, which sends the body through the general path below; so
  // every error, coercion and edge case still gets exactly the general path's answer.
  // The innermost list of numbers starting at `start` (a `[`), in one tight loop over locals
  // (no captured state, so V8 keeps everything in registers). Returns the index just past
  // the closing `]`, or -1. (A table-driven automaton measured no faster: each lookup waits
  // for the previous one.)
  //
  // Number literals are brought to Atropos's types on the way: `rewrites` collects
  // (start, end, replacement) triples for literals whose text is not what json.dumps would
  // write for the field's type — `1` in a float field gains `.0`, `3.0` or `1e3` in an int field
  // becomes `3` / `1000`, exponents, trailing zeros and tiny or huge floats take Python's repr.
  // A plain decimal float of up to 17 significant digits is kept as written (what any
  // shortest-repr printer, Python's included, writes; checking further would cost a float parse
  // per number). A literal it cannot convert (a fraction in an int field, an overflow) returns
  // -1, so the general path reports it.
  function scanRow(b: Uint8Array, start: number, integer: boolean, rewrites: (number | string)[]): number {
    let q = start + 1;
    let c = b[q] as number;
    while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++q] as number;
    if (c === 93) return q + 1;
    for (;;) {
      const literal = q;
      const negative = c === 45;
      if (negative) c = b[++q] as number;
      const first = q;
      if (c === 48) c = b[++q] as number;
      else if (c >= 49 && c <= 57) {
        c = b[++q] as number;
        while (c >= 48 && c <= 57) c = b[++q] as number;
      } else return -1;
      const wholeDigits = q - first;
      let fraction = -1;
      let fractionEnd = -1;
      let exponent = false;
      if (c === 46) {
        c = b[++q] as number;
        fraction = q;
        if (!(c >= 48 && c <= 57)) return -1;
        while (c >= 48 && c <= 57) c = b[++q] as number;
        fractionEnd = q;
      }
      if (c === 101 || c === 69) {
        exponent = true;
        c = b[++q] as number;
        if (c === 43 || c === 45) c = b[++q] as number;
        if (!(c >= 48 && c <= 57)) return -1;
        while (c >= 48 && c <= 57) c = b[++q] as number;
      }
      const zero = wholeDigits === 1 && b[first] === 48;
      if (integer) {
        if (fraction >= 0 || exponent) {
          const value = Number(Buffer.from(b.buffer, b.byteOffset + literal, q - literal).toString('latin1'));
          if (!Number.isInteger(value) || Math.abs(value) >= INT_LIMIT) return -1;
          rewrites.push(literal, q, integerText(value));
        } else if (negative && zero) rewrites.push(literal, q, '0');
      } else if (fraction < 0 && !exponent && wholeDigits <= 15) {
        // An int literal: Python's float of it. (`-0` is the int 0, so `0.0`.)
        if (negative && zero) rewrites.push(literal, q, '0.0');
        else rewrites.push(q, q, '.0');
      } else {
        let canonical = fraction >= 0 && !exponent && wholeDigits <= 16;
        if (canonical) {
          const fractionDigits = fractionEnd - fraction;
          if (fractionDigits > 1 && b[fractionEnd - 1] === 48) canonical = false;
          else if (zero) {
            let zeros = 0;
            while (zeros < fractionDigits && b[fraction + zeros] === 48) zeros++;
            // Below 1e-4 Python writes an exponent.
            if (zeros < fractionDigits && (zeros >= 4 || fractionDigits - zeros > 17)) canonical = false;
          } else if (wholeDigits + fractionDigits > 17) canonical = false;
        }
        if (!canonical) {
          const text = Buffer.from(b.buffer, b.byteOffset + literal, q - literal).toString('latin1');
          const value = Number(text);
          if (!Number.isFinite(value)) return -1;
          const python = pythonFloat(value);
          if (python !== text) rewrites.push(literal, q, python);
        }
      }
      while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++q] as number;
      if (c === 44) {
        c = b[++q] as number;
        while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++q] as number;
      } else if (c === 93) return q + 1;
      else return -1;
    }
  }

  /** The bytes with each (start, end, text) of `rewrites` (in order) replaced. */
  function applyRewrites(b: Uint8Array, rewrites: (number | string)[]): Uint8Array {
    let size = b.length;
    for (let index = 0; index < rewrites.length; index += 3)
      size +=
        (rewrites[index + 2] as string).length -
        ((rewrites[index + 1] as number) - (rewrites[index] as number));
    const out = Buffer.allocUnsafe(size);
    let from = 0;
    let to = 0;
    for (let index = 0; index < rewrites.length; index += 3) {
      const start = rewrites[index] as number;
      to += Buffer.from(b.buffer, b.byteOffset + from, start - from).copy(out, to);
      to += out.write(rewrites[index + 2] as string, to, 'latin1');
      from = rewrites[index + 1] as number;
    }
    Buffer.from(b.buffer, b.byteOffset + from, b.length - from).copy(out, to);
    return out;
  }

  function scanGroup(
    b: Uint8Array,
    asciiOnly: boolean,
  ): { envId: number | null; size: number; present: Set<string>; rewrites: (number | string)[] } | undefined {
    const n = b.length;
    let p = 0;
    const rewrites: (number | string)[] = [];
    let envText: string | undefined;
    const ws = () => {
      for (;;) {
        const c = b[p];
        if (c === 32 || c === 10 || c === 13 || c === 9) p++;
        else return;
      }
    };
    const row = (integer: boolean): number => {
      const end = scanRow(b, p, integer, rewrites);
      if (end < 0) return -1;
      p = end;
      return 0;
    };
    // A list nested `depth` deep of numbers; returns its length or -1.
    const list = (depth: number, integer: boolean): number => {
      if (b[p] !== 91) return -1;
      if (depth === 1) return row(integer);
      p++;
      ws();
      if (b[p] === 93) {
        p++;
        return 0;
      }
      let count = 0;
      for (;;) {
        if (list(depth - 1, integer) < 0) return -1;
        count++;
        ws();
        const c = b[p];
        if (c === 44) {
          p++;
          ws();
        } else if (c === 93) {
          p++;
          return count;
        } else return -1;
      }
    };
    // Finds the end of any JSON value (JSON.parse of the slice then checks it strictly).
    let high = false;
    const skip = (): boolean => {
      let depth = 0;
      let inString = false;
      while (p < n) {
        const c = b[p++] as number;
        if (c >= 128) high = true;
        if (inString) {
          if (c === 92) p++;
          else if (c === 34) {
            inString = false;
            if (depth === 0) return true;
          }
        } else if (c === 34) inString = true;
        else if (c === 91 || c === 123) depth++;
        else if (c === 93 || c === 125) {
          if (depth === 0) {
            p--;
            return true;
          }
          if (--depth === 0) return true;
        } else if (depth === 0 && (c === 44 || c === 32 || c === 10 || c === 13 || c === 9)) {
          p--;
          return true;
        }
      }
      return depth === 0 && !inString;
    };
    ws();
    if (b[p] !== 123) return undefined;
    p++;
    ws();
    const present = new Set<string>();
    const others: Record<string, unknown> = {};
    let size = -1;
    for (;;) {
      if (b[p] !== 34) return undefined;
      const keyStart = ++p;
      while (p < n && b[p] !== 34) {
        const c = b[p] as number;
        if (c === 92 || c < 32 || c >= 128) return undefined;
        p++;
      }
      const key = Buffer.from(b.buffer, b.byteOffset + keyStart, p - keyStart).toString('latin1');
      p++;
      if (!KNOWN.has(key) || present.has(key)) return undefined;
      present.add(key);
      ws();
      if (b[p] !== 58) return undefined;
      p++;
      ws();
      const spec = NUMERIC[key];
      if (spec !== undefined) {
        if (b[p] === 110) {
          if (!spec[2] || b[p + 1] !== 117 || b[p + 2] !== 108 || b[p + 3] !== 108) return undefined;
          p += 4;
        } else {
          const count = list(spec[0], spec[1]);
          if (count < 0) return undefined;
          if (key === 'tokens') size = count;
        }
      } else {
        const start = p;
        if (!skip() || p === start) return undefined;
        const raw = Buffer.from(b.buffer, b.byteOffset + start, p - start).toString('utf8');
        if (key === 'env_id') envText = raw;
        try {
          others[key] = JSON.parse(raw);
        } catch {
          return undefined;
        }
      }
      ws();
      if (b[p] === 44) {
        p++;
        ws();
      } else if (b[p] === 125) {
        p++;
        break;
      } else return undefined;
    }
    ws();
    if (p !== n || size < 0 || !present.has('masks') || !present.has('scores')) return undefined;
    if (asciiOnly && high) return undefined;
    // The non-numeric fields (messages, env_id, overrides...) get the general checks.
    const ctx: Ctx = { issues: [], typed: new Map() };
    const probe: Record<string, unknown> = { tokens: [], masks: [], scores: [], ...others };
    if (!validateGroup(probe, ['body'], ctx)) return undefined;
    // env_id as written must already be the int json.dumps writes (`0.0`, `"0"` are not).
    if (envText !== undefined && ctx.typed.get('env_id') !== envText) return undefined;
    const envId = others.env_id === undefined || others.env_id === null ? null : (others.env_id as number);
    return { envId, size, present, rewrites };
  }

  function decode(request: DecodeRequest): DecodeResult {
    let bytes = request.body;
    if (request.gzip && bytes.length > 0) {
      try {
        // The gzip trailer's ISIZE (client-supplied, so only a capped hint) sizes the output
        // buffer: one allocation instead of 16 KiB chunks concatenated at the end.
        const hint =
          bytes.length >= 18
            ? Buffer.from(bytes.buffer, bytes.byteOffset + bytes.length - 4, 4).readUInt32LE(0)
            : 0;
        const chunkSize = Math.max(16 * 1024, Math.min(hint + 64, request.maxBytes + 64, 64 * 1024 * 1024));
        bytes = zlib.gunzipSync(bytes, { maxOutputLength: request.maxBytes, chunkSize });
      } catch (error) {
        if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) {
          return {
            ok: false,
            status: 413,
            contentType: 'application/json',
            body: JSON.stringify({
              detail: `Request body larger than ${request.maxBytes} bytes after decompression`,
            }),
          };
        }
        return {
          ok: false,
          status: 400,
          contentType: 'text/plain; charset=utf-8',
          body: 'Invalid gzip payload',
        };
      }
    }
    if (request.kind === 'single' && request.generalOnly !== true) {
      // Non-gzip bodies are stored as their UTF-8 text, which equals the bytes only when no
      // byte needed replacing; skipped fields with non-ASCII bytes take the general path.
      const fast = scanGroup(bytes, !request.gzip);
      if (fast !== undefined) {
        let suffix = '';
        for (const key of KEYS) if (!fast.present.has(key)) suffix += `,${JSON.stringify(key)}:null`;
        // Numbers rewritten: the new text is stored uncompressed (no second gzip on the hot path).
        const rewritten = fast.rewrites.length > 0;
        return {
          ok: true,
          groups: [
            {
              envId: fast.envId,
              size: fast.size,
              encoding: request.gzip && !rewritten ? 1 : 0,
              payload: rewritten
                ? applyRewrites(bytes, fast.rewrites)
                : request.gzip
                  ? request.body
                  : bytes.slice(),
              suffix,
            },
          ],
        };
      }
    }
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    if (text.trim() === '')
      return unprocessable([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const match = /position (\d+)/.exec(String((error as Error).message));
      return unprocessable([
        {
          type: 'json_invalid',
          loc: ['body', match ? Number(match[1]) : 0],
          msg: 'JSON decode error',
          input: {},
        },
      ]);
    }
    const ctx: Ctx = { issues: [], typed: new Map() };
    const start = skipSpace(text, 0);
    const spansAt = (at: number) => (text.charCodeAt(at) === 123 ? memberSpans(text, at).spans : new Map());
    if (request.kind === 'single') {
      const spans = spansAt(start);
      if (!validateGroup(value, ['body'], ctx, { text, spans })) return unprocessable(ctx.issues);
      return { ok: true, groups: [storedFrom(value as Record<string, unknown>, text, spans, ctx.typed)] };
    }
    if (!Array.isArray(value)) {
      return unprocessable([
        { type: 'list_type', loc: ['body'], msg: 'Input should be a valid list', input: preview(value) },
      ]);
    }
    const typed: Map<string, string>[] = [];
    const spans = elementStarts(text, start).map(spansAt);
    for (let index = 0; index < value.length; index++) {
      validateGroup(value[index], ['body', index], ctx, { text, spans: spans[index] ?? new Map() });
      typed.push(ctx.typed);
    }
    if (ctx.issues.length > 0) return unprocessable(ctx.issues);
    return {
      ok: true,
      groups: value.map((item, index) =>
        storedFrom(
          item as Record<string, unknown>,
          text,
          spans[index] ?? new Map(),
          typed[index] as Map<string, string>,
        ),
      ),
    };
  }

  /**
   * Cuts a stored group's text (all keys present) in two after `at` sequences, at the text
   * level so every number keeps its spelling: per-sequence lists are cut, the other fields
   * copied to both halves.
   */
  function splitGroupText(text: string, at: number): [string, string] {
    const { spans } = memberSpans(text, skipSpace(text, 0));
    const head: string[] = [];
    const tail: string[] = [];
    for (const [key, [from, to]] of spans) {
      const name = JSON.stringify(key);
      const raw = text.slice(from, to);
      if (PER_SEQUENCE.has(key) && text.charCodeAt(from) === 91) {
        const starts = elementStarts(text, from);
        const cut = at < starts.length ? (starts[at] as number) : -1;
        if (cut < 0) {
          head.push(`${name}:${raw}`);
          tail.push(`${name}:[]`);
        } else {
          // The element before the cut ends at the last non-space character before its comma.
          let end = cut - 1;
          while (text.charCodeAt(end) !== 44) end--;
          head.push(`${name}:${at === 0 ? '[]' : `${text.slice(from, end)}]`}`);
          tail.push(`${name}:[${text.slice(cut, to)}`);
        }
      } else {
        head.push(`${name}:${raw}`);
        tail.push(`${name}:${raw}`);
      }
    }
    return [`{${head.join(',')}}`, `{${tail.join(',')}}`];
  }

  return { decode, keys: KEYS, pythonFloat, splitGroupText };
}
