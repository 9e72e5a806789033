// Decoding and validating Atropos `ScoredData` request bodies (POST /scored_data and
// /scored_data_list) and producing the bytes the queue stores. Runs in the decode workers
// (decode-worker.ts) and, with `decodeWorkers: 0`, inline.
//
// The pipeline: gunzip (bounded), then the byte scan of wire-scan.ts for the common body, or,
// for anything it does not take, the general path: the structure check (nesting depth, repeated
// keys, UTF-8; json-structure.ts), JSON.parse, and pydantic's lax-mode validation plus the
// group's shape (wire-validate.ts). Either way a group is acknowledged only if a trainer can read
// it. A well-formed gzip group whose numbers already have Atropos's spelling is stored as the
// client's own gzip bytes; other groups as their (respelled) JSON text.
import { constants, createGunzip, gunzipSync } from 'node:zlib';
import { SCORED_DATA_KEYS } from '@shears/core';
import { checkJsonStructure, MAX_JSON_DEPTH } from './json-structure.js';
import { type Issue, preview } from './wire-numbers.js';
import { applyRewrites, scanBody } from './wire-scan.js';
import { elementStarts, memberSpans, skipSpace } from './wire-text.js';
import { type DecodedGroup, storedFrom, validateGroup } from './wire-validate.js';

export type { DecodedGroup };

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

function unprocessable(issues: Issue[]): DecodeResult {
  return {
    ok: false,
    status: 422,
    contentType: 'application/json',
    body: JSON.stringify({ detail: issues.slice(0, 20) }),
  };
}

// FastAPI answers a body it cannot parse (bytes that are not UTF-8, nesting that makes
// json.loads raise RecursionError) with 400 and this detail; shears says what was wrong.
function unparseable(reason: string): DecodeResult {
  return {
    ok: false,
    status: 400,
    contentType: 'application/json',
    body: JSON.stringify({ detail: `There was an error parsing the body: ${reason}` }),
  };
}

// Inflating into one buffer kept across bodies (per thread) instead of a new ~2 MB buffer per
// body: a fresh buffer of that size is fresh pages from the OS each time, and garbage after;
// measured 5.6 → 4.0 ms of CPU to inflate a 16 × 4,096-token group. Node's zlib has no public
// call that writes into a given buffer, so this drives a Gunzip object's handle the way Node's
// own gunzipSync does (`_handle.writeSync`, `_writeState`: unchanged from Node 12 to 24). Any
// surprise (a missing method, an error, more output than the gzip trailer declares, input left
// over) returns undefined and the body goes through gunzipSync, which gives the answer.
interface GunzipInternals {
  destroyed: boolean;
  _handle?: {
    reset(): void;
    writeSync(
      flush: number,
      input: Uint8Array,
      inOffset: number,
      inLength: number,
      output: Uint8Array,
      outOffset: number,
      outLength: number,
    ): void;
  } | null;
  _writeState?: Uint32Array;
}
/** Bodies whose trailer declares more than this are inflated by gunzipSync into their own buffer. */
const SCRATCH_MAX = 32 * 1024 * 1024;
let scratch: Buffer = Buffer.alloc(0);
let engine: (ReturnType<typeof createGunzip> & GunzipInternals) | undefined;

/** Whether `bytes` lies in the reused inflate buffer (and must be copied before it leaves). */
function inScratch(bytes: Uint8Array): boolean {
  return bytes.buffer === scratch.buffer;
}

function inflateReused(body: Uint8Array, declared: number, maxBytes: number): Uint8Array | undefined {
  // Room past the declared size, so a trailer that understates the output is noticed.
  const room = declared + 64;
  if (room > SCRATCH_MAX || declared > maxBytes) return undefined;
  if (engine === undefined || engine.destroyed || !engine._handle) {
    engine = createGunzip() as ReturnType<typeof createGunzip> & GunzipInternals;
    // An inflate error also destroys the stream, which emits it: the fallback reports it.
    engine.on('error', () => {});
  }
  const handle = engine._handle;
  const state = engine._writeState;
  if (typeof handle?.writeSync !== 'function' || !(state instanceof Uint32Array)) return undefined;
  if (scratch.length < room)
    scratch = Buffer.allocUnsafe(Math.min(SCRATCH_MAX, Math.max(room, scratch.length * 2)));
  handle.reset();
  handle.writeSync(constants.Z_FINISH, body, 0, body.length, scratch, 0, scratch.length);
  if (engine.destroyed) return undefined;
  const [outLeft = 0, inLeft = 1] = state;
  if (outLeft === 0 || inLeft !== 0) return undefined;
  const produced = scratch.length - outLeft;
  return produced > maxBytes ? undefined : scratch.subarray(0, produced);
}

function inflate(request: DecodeRequest): Uint8Array | DecodeResult {
  const bytes = request.body;
  if (!request.gzip || bytes.length === 0) return bytes;
  if (bytes.length >= 18) {
    const declared = Buffer.from(bytes.buffer, bytes.byteOffset + bytes.length - 4, 4).readUInt32LE(0);
    const reused = inflateReused(bytes, declared, request.maxBytes);
    if (reused !== undefined) return reused;
  }
  try {
    // The gzip trailer's ISIZE (client-supplied, so only a capped hint) sizes the output
    // buffer: one allocation instead of 16 KiB chunks concatenated at the end.
    const hint =
      bytes.length >= 18
        ? Buffer.from(bytes.buffer, bytes.byteOffset + bytes.length - 4, 4).readUInt32LE(0)
        : 0;
    const chunkSize = Math.max(16 * 1024, Math.min(hint + 64, request.maxBytes + 64, 64 * 1024 * 1024));
    return gunzipSync(bytes, { maxOutputLength: request.maxBytes, chunkSize });
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
    return { ok: false, status: 400, contentType: 'text/plain; charset=utf-8', body: 'Invalid gzip payload' };
  }
}

function missingSuffix(present: (key: string) => boolean): string {
  let suffix = '';
  for (const key of SCORED_DATA_KEYS) if (!present(key)) suffix += `,${JSON.stringify(key)}:null`;
  return suffix;
}

export function decode(request: DecodeRequest): DecodeResult {
  const inflated = inflate(request);
  if (!(inflated instanceof Uint8Array)) return inflated;
  const bytes = inflated;
  if (request.generalOnly !== true) {
    const scanned = scanBody(bytes, request.kind);
    if (scanned !== undefined) {
      if (!scanned.ok) return unprocessable(scanned.issues);
      const single = request.kind === 'single';
      return {
        ok: true,
        groups: scanned.groups.map((group) => {
          const rewritten = group.rewrites.length > 0;
          // A single gzip group without respelling is stored as the client's gzip bytes; the
          // rest as text (no second gzip on the hot path).
          const keepGzip = single && request.gzip && !rewritten;
          const text = bytes.subarray(group.start, group.end);
          return {
            envId: group.envId,
            size: group.size,
            encoding: keepGzip ? 1 : 0,
            payload: keepGzip
              ? request.body
              : rewritten
                ? applyRewrites(bytes, group.start, group.end, group.rewrites)
                : inScratch(text)
                  ? Buffer.from(text)
                  : text,
            suffix: missingSuffix((key) => group.present.has(key)),
          };
        }),
      };
    }
  }
  return decodeGeneral(bytes, request.kind);
}

function decodeGeneral(bytes: Uint8Array, kind: 'single' | 'list'): DecodeResult {
  const problem = checkJsonStructure(bytes, 0, bytes.length, { path: ['body'] });
  if (problem?.kind === 'utf8') return unparseable(`invalid UTF-8 at byte ${problem.at}`);
  if (problem?.kind === 'depth')
    return unparseable(`JSON nested deeper than ${MAX_JSON_DEPTH} levels at byte ${problem.at}`);
  if (problem?.kind === 'duplicate')
    return unprocessable([
      {
        type: 'duplicate_key',
        loc: problem.path,
        msg: 'Key given twice in one object (JSON readers disagree on which value counts)',
        input: problem.path.at(-1),
      },
    ]);
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
  const issues: Issue[] = [];
  const start = skipSpace(text, 0);
  const spansAt = (at: number) => (text.charCodeAt(at) === 123 ? memberSpans(text, at) : new Map());
  if (kind === 'single') {
    const spans = spansAt(start);
    const typed = validateGroup(value, ['body'], issues, { text, spans });
    if (typed === undefined) return unprocessable(issues);
    return { ok: true, groups: [storedFrom(value as Record<string, unknown>, text, spans, typed)] };
  }
  if (!Array.isArray(value)) {
    return unprocessable([
      { type: 'list_type', loc: ['body'], msg: 'Input should be a valid list', input: preview(value) },
    ]);
  }
  // All or nothing, as pydantic validates List[ScoredData]: one bad group refuses the body.
  const spans = elementStarts(text, start).map(spansAt);
  const typed = value.map((item, index) =>
    validateGroup(item, ['body', index], issues, { text, spans: spans[index] ?? new Map() }),
  );
  if (issues.length > 0) return unprocessable(issues);
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
