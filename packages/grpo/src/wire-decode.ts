// Decoding and validating Atropos `ScoredData` request bodies (POST /scored_data and
// /scored_data_list) the way the reference server's pydantic model does, and producing the
// bytes the queue stores. Everything lives inside ONE self-contained function so that the same
// code runs inline and, via `Function.prototype.toString`, inside decode worker threads
// (JSON.parse of a 2 MB group would otherwise block the event loop that serves /batch).
// That is also why this module parses with JSON.parse itself instead of core's parseJson: the
// worker cannot import, and a JSON error must become FastAPI's 422 `json_invalid` anyway.

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
  type Issue = { type: string; loc: (string | number)[]; msg: string; input?: unknown };

  function preview(value: unknown): unknown {
    if (Array.isArray(value)) return value.length > 8 ? '[…]' : value;
    if (typeof value === 'string' && value.length > 200) return `${value.slice(0, 200)}…`;
    if (value !== null && typeof value === 'object') return '{…}';
    return value;
  }

  // pydantic v2 lax mode: integral floats, numeric strings and booleans become ints.
  // Returns undefined when the value cannot be an int.
  function laxInt(value: unknown): number | undefined {
    if (typeof value === 'number') return Number.isInteger(value) ? value : undefined;
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (typeof value === 'string' && /^\s*[-+]?\d+\s*$/.test(value)) return Number(value);
    return undefined;
  }
  function laxFloat(value: unknown): number | undefined {
    if (typeof value === 'number') return value;
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
      return Number(value);
    return undefined;
  }

  interface Ctx {
    issues: Issue[];
    coerced: boolean;
  }

  // Validates (and coerces in place) a list nested `depth` levels deep of numbers.
  function numberList(
    value: unknown,
    depth: number,
    integer: boolean,
    loc: (string | number)[],
    ctx: Ctx,
  ): void {
    if (!Array.isArray(value)) {
      ctx.issues.push({ type: 'list_type', loc, msg: 'Input should be a valid list', input: preview(value) });
      return;
    }
    if (depth > 1) {
      for (let index = 0; index < value.length; index++)
        numberList(value[index], depth - 1, integer, [...loc, index], ctx);
      return;
    }
    for (let index = 0; index < value.length; index++) {
      const item = value[index];
      if (typeof item === 'number' && (!integer || Number.isInteger(item))) continue;
      const converted = integer ? laxInt(item) : laxFloat(item);
      if (converted === undefined) {
        ctx.issues.push(
          integer
            ? typeof item === 'number'
              ? {
                  type: 'int_from_float',
                  loc: [...loc, index],
                  msg: 'Input should be a valid integer, got a number with a fractional part',
                  input: item,
                }
              : {
                  type: 'int_type',
                  loc: [...loc, index],
                  msg: 'Input should be a valid integer',
                  input: preview(item),
                }
            : {
                type: 'float_type',
                loc: [...loc, index],
                msg: 'Input should be a valid number',
                input: preview(item),
              },
        );
        if (ctx.issues.length > 20) return;
      } else {
        value[index] = converted;
        ctx.coerced = true;
      }
    }
  }

  function isDict(value: unknown): value is Record<string, unknown> {
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  }

  function validateGroup(value: unknown, base: (string | number)[], ctx: Ctx): boolean {
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
    for (const [key, depth, integer] of [
      ['tokens', 2, true],
      ['masks', 2, true],
      ['scores', 1, false],
    ] as const) {
      if (!(key in value))
        ctx.issues.push({ type: 'missing', loc: [...base, key], msg: 'Field required', input: '{…}' });
      else numberList(value[key], depth, integer, [...base, key], ctx);
    }
    const nullable = (key: string) => value[key] === undefined || value[key] === null;
    for (const key of ['advantages', 'ref_logprobs', 'inference_logprobs']) {
      if (!nullable(key)) numberList(value[key], 2, false, [...base, key], ctx);
    }
    if (!nullable('distill_token_ids'))
      numberList(value.distill_token_ids, 3, true, [...base, 'distill_token_ids'], ctx);
    if (!nullable('distill_logprobs'))
      numberList(value.distill_logprobs, 3, false, [...base, 'distill_logprobs'], ctx);
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
      const envId = laxInt(value.env_id);
      if (envId === undefined)
        ctx.issues.push({
          type: 'int_type',
          loc: [...base, 'env_id'],
          msg: 'Input should be a valid integer',
          input: preview(value.env_id),
        });
      else if (envId !== value.env_id) {
        value.env_id = envId;
        ctx.coerced = true;
      }
    }
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

  // The stored text of a group: exactly its known keys (unknown top-level keys are dropped, as
  // pydantic does), with the missing ones supplied at serve time through `suffix`.
  function storedFrom(
    value: Record<string, unknown>,
    rawText: string | undefined,
    rawGzip: Uint8Array | undefined,
    coerced: boolean,
  ): DecodedGroup {
    const present = Object.keys(value);
    const onlyKnown = present.every((key) => KNOWN.has(key));
    let suffix = '';
    for (const key of KEYS) if (!(key in value)) suffix += `,${JSON.stringify(key)}:null`;
    const envId = value.env_id === undefined || value.env_id === null ? null : (value.env_id as number);
    const size = (value.tokens as unknown[]).length;
    if (onlyKnown && !coerced && rawText !== undefined) {
      // The body already is the stored form: keep the client's bytes (gzip when it sent gzip).
      if (rawGzip !== undefined) return { envId, size, encoding: 1, payload: rawGzip, suffix };
      return { envId, size, encoding: 0, payload: encoder.encode(rawText), suffix };
    }
    const parts: string[] = [];
    for (const key of KEYS)
      if (key in value) parts.push(`${JSON.stringify(key)}:${JSON.stringify(value[key] ?? null)}`);
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
  // The innermost list of numbers starting at `start` (a `[`), in one tight loop over locals
  // (no captured state, so V8 keeps everything in registers). Returns the index just past
  // the closing `]`, or -1. (A table-driven automaton measured no faster: each lookup waits
  // for the previous one.)
  function scanRow(b: Uint8Array, start: number, integer: boolean): number {
    let q = start + 1;
    let c = b[q] as number;
    while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++q] as number;
    if (c === 93) return q + 1;
    for (;;) {
      if (c === 45) c = b[++q] as number;
      const first = q;
      if (c === 48) c = b[++q] as number;
      else if (c >= 49 && c <= 57) {
        c = b[++q] as number;
        while (c >= 48 && c <= 57) c = b[++q] as number;
      } else return -1;
      if (integer) {
        // At most 15 digits: always a safe integer; longer ones take the general path.
        if (q - first > 15 || c === 46 || c === 101 || c === 69) return -1;
      } else {
        if (c === 46) {
          c = b[++q] as number;
          if (!(c >= 48 && c <= 57)) return -1;
          while (c >= 48 && c <= 57) c = b[++q] as number;
        }
        if (c === 101 || c === 69) {
          c = b[++q] as number;
          if (c === 43 || c === 45) c = b[++q] as number;
          if (!(c >= 48 && c <= 57)) return -1;
          while (c >= 48 && c <= 57) c = b[++q] as number;
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

  function scanGroup(
    b: Uint8Array,
    asciiOnly: boolean,
  ): { envId: number | null; size: number; present: Set<string> } | undefined {
    const n = b.length;
    let p = 0;
    const ws = () => {
      for (;;) {
        const c = b[p];
        if (c === 32 || c === 10 || c === 13 || c === 9) p++;
        else return;
      }
    };
    const row = (integer: boolean): number => {
      const end = scanRow(b, p, integer);
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
        try {
          others[key] = JSON.parse(Buffer.from(b.buffer, b.byteOffset + start, p - start).toString('utf8'));
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
    const ctx: Ctx = { issues: [], coerced: false };
    const probe: Record<string, unknown> = { tokens: [], masks: [], scores: [], ...others };
    if (!validateGroup(probe, ['body'], ctx) || ctx.coerced) return undefined;
    const envId = others.env_id === undefined || others.env_id === null ? null : (others.env_id as number);
    return { envId, size, present };
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
        return {
          ok: true,
          groups: [
            {
              envId: fast.envId,
              size: fast.size,
              encoding: request.gzip ? 1 : 0,
              payload: request.gzip ? request.body : bytes.slice(),
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
    const ctx: Ctx = { issues: [], coerced: false };
    if (request.kind === 'single') {
      if (!validateGroup(value, ['body'], ctx)) return unprocessable(ctx.issues);
      return {
        ok: true,
        groups: [
          storedFrom(
            value as Record<string, unknown>,
            text,
            request.gzip ? request.body : undefined,
            ctx.coerced,
          ),
        ],
      };
    }
    if (!Array.isArray(value)) {
      return unprocessable([
        { type: 'list_type', loc: ['body'], msg: 'Input should be a valid list', input: preview(value) },
      ]);
    }
    for (let index = 0; index < value.length; index++) validateGroup(value[index], ['body', index], ctx);
    if (ctx.issues.length > 0) return unprocessable(ctx.issues);
    return {
      ok: true,
      groups: value.map((item) => storedFrom(item as Record<string, unknown>, undefined, undefined, true)),
    };
  }

  return { decode, keys: KEYS };
}
