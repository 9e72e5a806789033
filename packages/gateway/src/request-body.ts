// The gateway's body reader: a harness's request body, read whole (decompressed, at most
// `maxBytes`), decoded as strict UTF-8 and parsed as JSON, then held to the limits of a request
// the gateway will serve: nesting depth, array length and well-formed Unicode in every string and
// key. Whatever breaks them is refused here, before a dialect reads the body, so nothing that
// cannot be rendered, tokenized or serialised again reaches a thread, a backend or a record.
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { AbortedError } from '@shears/core';
import { BodyReadError, readBody } from '@shears/core/http';
import { type ApiStyle, apiParam, GatewayApiError } from './api-error.js';

/**
 * Nesting depth of a body (the body itself is level 1). Real requests stay far below it (a coding
 * CLI's deepest part is a tool's JSON Schema, 10–20 levels); a deeper body would overflow the
 * recursive code that follows (JSON.stringify, template rendering, a Python `json.load`).
 */
const MAX_BODY_DEPTH = 128;
/**
 * JSON.parse spends about a microsecond per nesting level (a 64 MiB body of brackets would block
 * the event loop for half a minute), so a body larger than this is scanned for its depth before it
 * is parsed. A smaller one is parsed first and its depth checked on the parsed value: the worst
 * JSON.parse can then meet is some 32,000 levels (tens of milliseconds), and the scan, about a
 * third of JSON.parse's own time, is not paid on every small request.
 */
const SCAN_ABOVE_BYTES = 64 * 1024;
/** Items of any one array (Anthropic's own limit on `messages`). */
const MAX_ARRAY_ITEMS = 100_000;

/**
 * Reads a request body (decompressed, at most `limit` bytes, as sent and once decoded) through
 * core's one body reader; its failures become the gateway's API errors (a 413 for a body over the
 * limit, a 400 for an encoding it cannot undo or a harness that went away mid-body).
 */
async function readRequestBody(
  request: IncomingMessage,
  limit: number,
  signal: AbortSignal,
): Promise<Buffer> {
  try {
    return await readBody(request, {
      maxBytes: limit,
      encoding: request.headers['content-encoding'],
      declaredLength: request.headers['content-length'],
      signal,
      // The gateway still answers the request (a 413 or 400 in the API's shape) on this connection.
      rest: 'drain',
      what: 'Request body',
    });
  } catch (error) {
    if (BodyReadError.isInstance(error)) {
      if (error.reason === 'too_large')
        throw new GatewayApiError({
          kind: 'request_too_large',
          message: `Request body is larger than the gateway's limit of ${limit} bytes.`,
          cause: error,
        });
      throw new GatewayApiError({
        kind: 'invalid_request',
        message:
          error.reason === 'incomplete'
            ? 'The harness closed the connection before sending the whole body.'
            : error.reason === 'unsupported_encoding'
              ? `Unsupported content-encoding "${String(request.headers['content-encoding'])}" (supported: identity, gzip, deflate, br).`
              : `Could not read the request body: ${error.message}`,
        cause: error,
      });
    }
    if (AbortedError.isInstance(error))
      throw new GatewayApiError({
        kind: 'invalid_request',
        message: 'The harness closed the connection before sending the whole body.',
        cause: error,
      });
    throw error;
  }
}

// The wording OpenAI and Anthropic use for a body that is not JSON.
const NOT_JSON =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)";

/** The offset of the first byte that is not part of a valid UTF-8 sequence (error path only). */
function firstInvalidByte(bytes: Buffer): number {
  // A valid prefix decodes and re-encodes to the same bytes; the first difference lies inside the
  // first invalid sequence (a replacement character's bytes may match its first bytes), so step
  // back to that sequence's lead byte.
  const again = Buffer.from(bytes.toString('utf8'), 'utf8');
  let index = 0;
  while (index < bytes.length && bytes[index] === again[index]) index++;
  while (index > 0 && ((bytes[index] ?? 0) & 0xc0) === 0x80 && ((bytes[index - 1] ?? 0) & 0x80) !== 0)
    index--;
  return index;
}

/** `scanStructure`'s answer when the body nests within the limit but holds an array that may be too long. */
const LONG_ARRAY = -2;

/**
 * One pass over the JSON text's bytes before it is parsed: the byte offset where it opens a level
 * deeper than MAX_BODY_DEPTH; else LONG_ARRAY when an array may hold more than MAX_ARRAY_ITEMS
 * items (its commas are counted; the walk over the parsed body then names it); else -1. Strings are skipped with
 * `indexOf` (their brackets and commas are text), so the loop touches little but the structural
 * bytes; a body that is not JSON is left to JSON.parse to refuse.
 */
function scanStructure(bytes: Buffer): number {
  let depth = 0;
  let long = false;
  // Per open level: its commas so far, or -1 for an object.
  const commas = new Int32Array(MAX_BODY_DEPTH + 1);
  const length = bytes.length;
  for (let index = 0; index < length; index++) {
    const byte = bytes[index];
    if (byte === 0x22) {
      // To the closing quote: the next one not escaped by an odd run of backslashes.
      let end = index;
      for (;;) {
        end = bytes.indexOf(0x22, end + 1);
        if (end < 0) return -1;
        let before = end - 1;
        while (bytes[before] === 0x5c) before--;
        if ((end - 1 - before) % 2 === 0) break;
      }
      index = end;
    } else if (byte === 0x2c) {
      if (depth > 0 && commas[depth] !== -1 && ++(commas[depth] as number) >= MAX_ARRAY_ITEMS) long = true;
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > MAX_BODY_DEPTH) return index;
      commas[depth] = byte === 0x5b ? 0 : -1;
    } else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return long ? LONG_ARRAY : -1;
}

/** A `\uD800`–`\uDFFF` escape: the only way a surrogate gets into a body that is valid UTF-8. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** The body as text: strict UTF-8, refused (not replaced) where a byte sequence is invalid. */
function decodeBody(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  const offset = firstInvalidByte(bytes);
  const before = bytes.subarray(Math.max(0, offset - 40), offset).toString('utf8');
  throw new GatewayApiError({
    kind: 'invalid_request',
    message: `${NOT_JSON} The body is not valid UTF-8: byte 0x${(bytes[offset] ?? 0).toString(16).padStart(2, '0')} at offset ${offset} (after ${JSON.stringify(before)}) does not begin a valid UTF-8 sequence. Invalid bytes are refused, not replaced.`,
    apiCode: 'invalid_utf8',
  });
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new GatewayApiError({
      kind: 'invalid_request',
      message: `${NOT_JSON} ${(error as Error).message}`,
      cause: error,
    });
  }
}

type Path = Array<string | number>;

// ES2024's String.prototype.isWellFormed (Node 20 has it; the repository's TypeScript lib is ES2023).
const isWellFormed = (String.prototype as unknown as { isWellFormed(this: string): boolean }).isWellFormed;

function structureError(message: string, path: Path, style: ApiStyle, apiCode: string): GatewayApiError {
  const param = path.length > 0 ? apiParam(path, style) : null;
  return new GatewayApiError({
    kind: 'invalid_request',
    message:
      style === 'anthropic' ? `${param ?? 'body'}: ${message}` : `Invalid '${param ?? 'body'}': ${message}`,
    param,
    apiCode,
  });
}

function loneSurrogate(text: string): string {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0xd800 || code > 0xdfff) continue;
    const next = text.charCodeAt(index + 1);
    if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      index++;
      continue;
    }
    return `\\u${code.toString(16)} at character ${index}`;
  }
  return '';
}

function surrogateError(text: string, path: Path, style: ApiStyle, what: string): GatewayApiError {
  return structureError(
    `${what} holds a lone UTF-16 surrogate (${loneSurrogate(text)}): it is not valid Unicode and has no UTF-8 encoding, so it could not be tokenized as sent. Write the character itself or a complete surrogate pair.`,
    path,
    style,
    'invalid_unicode',
  );
}

/**
 * Whether a parsed body keeps the limits: nesting depth, array length and (with `unicode`)
 * well-formed strings and keys. The hot path of every request, so it keeps no path; `findFault`
 * walks again to name the place. Recursive only as deep as the limit allows.
 */
function withinLimits(value: unknown, depth: number, unicode: boolean): boolean {
  if (typeof value !== 'object' || value === null)
    return !unicode || typeof value !== 'string' || isWellFormed.call(value);
  if (depth > MAX_BODY_DEPTH) return false;
  if (Array.isArray(value)) {
    if (value.length > MAX_ARRAY_ITEMS) return false;
    for (let index = 0; index < value.length; index++)
      if (!withinLimits(value[index], depth + 1, unicode)) return false;
    return true;
  }
  for (const key in value) {
    if (unicode && !isWellFormed.call(key)) return false;
    if (!withinLimits((value as Record<string, unknown>)[key], depth + 1, unicode)) return false;
  }
  return true;
}

/** The API's 400 naming the first place where a body breaks the limits (after `withinLimits` said it does). */
function findFault(body: unknown, style: ApiStyle, unicode: boolean): GatewayApiError {
  const path: Path = [];
  const visit = (value: unknown, depth: number): GatewayApiError | undefined => {
    if (typeof value === 'string')
      return unicode && !isWellFormed.call(value)
        ? surrogateError(value, path, style, 'the string')
        : undefined;
    if (typeof value !== 'object' || value === null) return undefined;
    if (depth > MAX_BODY_DEPTH)
      // Named by its first levels: the whole path is as long as the limit.
      return structureError(
        `the request nests deeper than the shears gateway's limit of ${MAX_BODY_DEPTH} levels.`,
        path.length > 8 ? [...path.slice(0, 8), '…'] : path,
        style,
        'nesting_too_deep',
      );
    if (Array.isArray(value) && value.length > MAX_ARRAY_ITEMS)
      return structureError(
        `array too long. Expected an array with maximum length ${MAX_ARRAY_ITEMS}, but got an array with length ${value.length} instead.`,
        path,
        style,
        'array_above_max_length',
      );
    for (const key of Array.isArray(value) ? value.keys() : Object.keys(value)) {
      if (typeof key === 'string' && unicode && !isWellFormed.call(key))
        return surrogateError(key, path, style, `the key ${JSON.stringify(key)}`);
      path.push(key);
      const fault = visit((value as Record<PropertyKey, unknown>)[key], depth + 1);
      path.pop();
      if (fault) return fault;
    }
    return undefined;
  };
  return (
    visit(body, 1) ??
    new GatewayApiError({
      kind: 'server',
      message: 'shears gateway internal error: a body limit broken, not found',
    })
  );
}

/** A body's bytes → strict UTF-8 → JSON → the structural limits; throws the API's 400. */
export function parseJsonBody(bytes: Buffer, style: ApiStyle): unknown {
  const text = decodeBody(bytes);
  const scanned = bytes.length > SCAN_ABOVE_BYTES;
  const scan = scanned ? scanStructure(bytes) : -1;
  if (scan >= 0)
    throw new GatewayApiError({
      kind: 'invalid_request',
      message: `The request nests deeper than the shears gateway's limit of ${MAX_BODY_DEPTH} levels (level ${MAX_BODY_DEPTH + 1} opens at byte ${scan}, after ${JSON.stringify(bytes.subarray(Math.max(0, scan - 40), scan).toString('utf8'))}).`,
      apiCode: 'nesting_too_deep',
    });
  const body = parseBody(text);
  // A surrogate can only have come in as a `\uD8xx`-style escape: without one, strings need no look.
  const unicode = SURROGATE_ESCAPE.test(text);
  if ((!scanned || scan === LONG_ARRAY || unicode) && !withinLimits(body, 1, unicode))
    throw findFault(body, style, unicode);
  return body;
}

/** The whole border: the request's body read, decoded, parsed and held to the limits. */
export async function readJsonBody(
  request: IncomingMessage,
  options: { maxBytes: number; style: ApiStyle; signal: AbortSignal },
): Promise<unknown> {
  return parseJsonBody(await readRequestBody(request, options.maxBytes, options.signal), options.style);
}
