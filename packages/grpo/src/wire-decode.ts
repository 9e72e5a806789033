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

  function decode(request: DecodeRequest): DecodeResult {
    let bytes = request.body;
    if (request.gzip && bytes.length > 0) {
      try {
        bytes = zlib.gunzipSync(bytes, { maxOutputLength: request.maxBytes });
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
