// The fast decode path for the common, well-formed body (one group, or a list of them): one
// byte scan of the JSON text that checks the number lists in place instead of JSON.parse
// building ~200k numbers and a schema walk over them, and collects the group's shape (row
// lengths, token and mask ids) for the cross-field checks. It takes only what the general path
// (wire-validate.ts) would store unchanged — known keys once each, ids in range written as
// plain integers, floats needing at most a respelling — and answers `undefined` on anything
// else, which sends the body through the general path; so every coercion and every type error
// gets exactly the general path's answer. A group whose types are all clean but whose shape is
// wrong is answered here (the general path would find the same issues from the same summary).
//
// Number literals are brought to Atropos's float spelling on the way: `rewrites` collects
// (start, end, replacement) triples for float literals whose text is not what json.dumps
// writes — `1` gains `.0`, exponents, trailing zeros and tiny or huge floats take Python's repr.
// A plain decimal of up to 17 significant digits is kept as written (what any shortest-repr
// printer, Python's included, writes; checking further would cost a float parse per number).
import { SCORED_DATA_KEYS } from '@shears/core';
import { checkJsonStructure } from './json-structure.js';
import { FLOAT32_MAX, type Issue, pythonFloat, TOKEN_MAX } from './wire-numbers.js';
import { checkShape, emptyShape, type GroupShape } from './wire-shape.js';
import { NUMERIC, validateLooseFields } from './wire-validate.js';

const KNOWN = new Set<string>(SCORED_DATA_KEYS);

/** One group found by the scan: its bytes, and what to rewrite in them. */
interface ScannedGroup {
  start: number;
  end: number;
  envId: number | null;
  size: number;
  present: Set<string>;
  /** (start, end, text) triples, absolute offsets, in order. */
  rewrites: (number | string)[];
}

type ScanResult = { ok: true; groups: ScannedGroup[] } | { ok: false; issues: Issue[] } | undefined;

/** A growable list of ids, reused across bodies (a 16 × 4,096 group holds 65,536 of each). */
class IdSink {
  values: Int32Array = new Int32Array(1 << 16);
  length = 0;
  /** Room for `size` ids, the ones held kept. */
  reserve(size: number): Int32Array {
    const next = new Int32Array(Math.max(size, this.values.length * 2));
    next.set(this.values.subarray(0, this.length));
    this.values = next;
    return next;
  }
}
const tokenSink = new IdSink();
const maskSink = new IdSink();
const scratchSink = new IdSink();

// The innermost list of ints starting at `start` (a `[`), in one tight loop over locals.
// Bytes are read as `(b[q] as number) | 0`: past the end that is 0, never a digit (the unsigned range
// checks below would take `undefined - 48` for one).
// Token ids are plain integer literals in 0 … 2^31 − 1 (`label`: or -100); anything else (a
// fraction, an exponent, a sign) returns -1 for the general path. Appends the ids to `sink`.
function scanIntRow(b: Uint8Array, start: number, sink: IdSink, label: boolean): number {
  let q = start + 1;
  let c = (b[q] as number) | 0;
  while (c === 32 || c === 10 || c === 13 || c === 9) c = (b[++q] as number) | 0;
  if (c === 93) return q + 1;
  let n = sink.length;
  // A row of the rest of the body holds at most one id per two bytes: room for all of them
  // once, instead of a bounds check per id.
  const room = n + ((b.length - q + 1) >> 1);
  const values = room > sink.values.length ? sink.reserve(room) : sink.values;
  for (;;) {
    let value = c - 48;
    if (value >>> 0 < 10) {
      const first = q;
      c = (b[++q] as number) | 0;
      if (value !== 0) {
        let digit = c - 48;
        while (digit >>> 0 < 10) {
          value = value * 10 + digit;
          c = (b[++q] as number) | 0;
          digit = c - 48;
        }
        if (q - first > 10 || value > TOKEN_MAX) return -1;
      }
    } else if (label && c === 45 && b[q + 1] === 49 && b[q + 2] === 48 && b[q + 3] === 48) {
      q += 4;
      c = (b[q] as number) | 0;
      value = -100;
    } else return -1;
    values[n++] = value;
    if (c === 44) {
      c = (b[++q] as number) | 0;
      if (c === 32 || c === 10 || c === 13 || c === 9) {
        while (c === 32 || c === 10 || c === 13 || c === 9) c = (b[++q] as number) | 0;
      }
      continue;
    }
    while (c === 32 || c === 10 || c === 13 || c === 9) c = (b[++q] as number) | 0;
    if (c === 44) {
      c = (b[++q] as number) | 0;
      while (c === 32 || c === 10 || c === 13 || c === 9) c = (b[++q] as number) | 0;
    } else if (c === 93) {
      sink.length = n;
      return q + 1;
    } else return -1;
  }
}

let rowCount = 0;

// The innermost list of floats starting at `start`; sets `rowCount`. Returns -1 for a literal
// it cannot convert (an overflow, a value past float32), so the general path reports it.
function scanFloatRow(b: Uint8Array, start: number, rewrites: (number | string)[]): number {
  let q = start + 1;
  let c = (b[q] as number) | 0;
  let count = 0;
  while (c === 32 || c === 10 || c === 13 || c === 9) c = (b[++q] as number) | 0;
  if (c === 93) {
    rowCount = 0;
    return q + 1;
  }
  for (;;) {
    const literal = q;
    const negative = c === 45;
    if (negative) c = (b[++q] as number) | 0;
    const first = q;
    if (c === 48) c = (b[++q] as number) | 0;
    else if ((c - 49) >>> 0 < 9) {
      c = (b[++q] as number) | 0;
      while ((c - 48) >>> 0 < 10) c = (b[++q] as number) | 0;
    } else return -1;
    const wholeDigits = q - first;
    let fraction = -1;
    let fractionEnd = -1;
    let exponent = false;
    if (c === 46) {
      c = (b[++q] as number) | 0;
      fraction = q;
      if ((c - 48) >>> 0 >= 10) return -1;
      c = (b[++q] as number) | 0;
      while ((c - 48) >>> 0 < 10) c = (b[++q] as number) | 0;
      fractionEnd = q;
    }
    if (c === 101 || c === 69) {
      exponent = true;
      c = (b[++q] as number) | 0;
      if (c === 43 || c === 45) c = (b[++q] as number) | 0;
      if ((c - 48) >>> 0 >= 10) return -1;
      while ((c - 48) >>> 0 < 10) c = (b[++q] as number) | 0;
    }
    const zero = wholeDigits === 1 && b[first] === 48;
    if (fraction < 0 && !exponent && wholeDigits <= 15) {
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
        if (!(Math.abs(value) <= FLOAT32_MAX)) return -1;
        const python = pythonFloat(value);
        if (python !== text) rewrites.push(literal, q, python);
      }
    }
    count++;
    if (c === 44) {
      c = (b[++q] as number) | 0;
      while (c === 32 || c === 10 || c === 13 || c === 9) c = (b[++q] as number) | 0;
      continue;
    }
    while (c === 32 || c === 10 || c === 13 || c === 9) c = (b[++q] as number) | 0;
    if (c === 44) {
      c = (b[++q] as number) | 0;
      while (c === 32 || c === 10 || c === 13 || c === 9) c = (b[++q] as number) | 0;
    } else if (c === 93) {
      rowCount = count;
      return q + 1;
    } else return -1;
  }
}

// `[` element (`,` element)* `]` where each element is scanned by `element` (which returns
// the index after it, or -1).
function scanList(b: Uint8Array, start: number, element: (at: number) => number): number {
  if (b[start] !== 91) return -1;
  let q = start + 1;
  let c = b[q] as number;
  while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++q] as number;
  if (c === 93) return q + 1;
  for (;;) {
    if (c !== 91) return -1;
    q = element(q);
    if (q < 0) return -1;
    c = b[q] as number;
    while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++q] as number;
    if (c === 44) {
      c = b[++q] as number;
      while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++q] as number;
    } else if (c === 93) return q + 1;
    else return -1;
  }
}

// One typed numeric field's value at `at`; records its shape. Returns the index after it, or -1.
function scanNumeric(
  b: Uint8Array,
  at: number,
  key: string,
  shape: GroupShape,
  rewrites: (number | string)[],
): number {
  const [depth, ids] = NUMERIC[key] as (typeof NUMERIC)[string];
  if (depth === 1) {
    const end = b[at] === 91 ? scanFloatRow(b, at, rewrites) : -1;
    shape.scores = rowCount;
    return end;
  }
  const rows: number[] = [];
  if (depth === 2) {
    let end: number;
    if (ids !== undefined) {
      const sink = key === 'tokens' ? tokenSink : maskSink;
      sink.length = 0;
      end = scanList(b, at, (q) => {
        const before = sink.length;
        const next = scanIntRow(b, q, sink, ids === 'label');
        rows.push(sink.length - before);
        return next;
      });
      if (key === 'tokens') {
        shape.tokens = rows;
        shape.tokenIds = sink.values;
      } else {
        shape.masks = rows;
        shape.maskIds = sink.values;
      }
    } else {
      end = scanList(b, at, (q) => {
        const next = scanFloatRow(b, q, rewrites);
        rows.push(rowCount);
        return next;
      });
      shape.perToken[key as 'advantages'] = rows;
    }
    return end;
  }
  const k: number[] = [];
  const end = scanList(b, at, (row) => {
    let positions = 0;
    const next = scanList(b, row, (q) => {
      positions++;
      if (ids !== undefined) {
        scratchSink.length = 0;
        const after = scanIntRow(b, q, scratchSink, false);
        k.push(scratchSink.length);
        return after;
      }
      const after = scanFloatRow(b, q, rewrites);
      k.push(rowCount);
      return after;
    });
    rows.push(positions);
    return next;
  });
  shape.distill[key as 'distill_token_ids'] = { rows, k };
  return end;
}

function isSpace(c: number | undefined): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

// The end of the JSON value at `at` (strings and brackets only; JSON.parse checks it), and
// whether it held a byte of 128 or more.
function valueEnd(b: Uint8Array, at: number, end: number): number {
  let p = at;
  let depth = 0;
  let inString = false;
  while (p < end) {
    const c = b[p++] as number;
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
    } else if (depth === 0 && (c === 44 || isSpace(c))) return p - 1;
  }
  return depth === 0 && !inString ? p : -1;
}

// One group object at `at`, `base` its location. Returns the group and the index after it,
// its shape issues, or undefined (the general path decides).
function scanGroup(
  b: Uint8Array,
  at: number,
  base: (string | number)[],
  groupDepth: number,
): { group: ScannedGroup; next: number } | { issues: Issue[] } | undefined {
  const n = b.length;
  let p = at;
  if (b[p] !== 123) return undefined;
  p++;
  while (isSpace(b[p])) p++;
  const present = new Set<string>();
  const loose: Record<string, unknown> = {};
  const shape = emptyShape();
  const rewrites: (number | string)[] = [];
  let envText: string | undefined;
  if (b[p] === 125) return undefined;
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
    while (isSpace(b[p])) p++;
    if (b[p] !== 58) return undefined;
    p++;
    while (isSpace(b[p])) p++;
    const spec = NUMERIC[key];
    if (spec !== undefined) {
      if (b[p] === 110) {
        if (!spec[2] || b[p + 1] !== 117 || b[p + 2] !== 108 || b[p + 3] !== 108) return undefined;
        p += 4;
      } else {
        p = scanNumeric(b, p, key, shape, rewrites);
        if (p < 0) return undefined;
      }
    } else {
      const start = p;
      const end = valueEnd(b, p, n);
      if (end <= start) return undefined;
      if (checkJsonStructure(b, start, end, { baseDepth: groupDepth }) !== undefined) return undefined;
      const raw = Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('utf8');
      if (key === 'env_id') envText = raw;
      try {
        loose[key] = JSON.parse(raw);
      } catch {
        return undefined;
      }
      p = end;
    }
    while (isSpace(b[p])) p++;
    if (b[p] === 44) {
      p++;
      while (isSpace(b[p])) p++;
    } else if (b[p] === 125) {
      p++;
      break;
    } else return undefined;
  }
  if (!present.has('tokens') || !present.has('masks') || !present.has('scores')) return undefined;
  const issues: Issue[] = [];
  const envId = validateLooseFields(loose, base, issues, shape, envText);
  // env_id as written must already be the int json.dumps writes (`0.0`, `"0"` are not).
  if (issues.length > 0 || (envText !== undefined && envId !== envText)) return undefined;
  checkShape(shape, base, issues);
  if (issues.length > 0) return { issues };
  return {
    group: {
      start: at,
      end: p,
      envId: envId === undefined || envId === 'null' ? null : Number(envId),
      size: (shape.tokens as number[]).length,
      present,
      rewrites,
    },
    next: p,
  };
}

/** Scans a /scored_data (`single`) or /scored_data_list (`list`) body. */
export function scanBody(b: Uint8Array, kind: 'single' | 'list'): ScanResult {
  const n = b.length;
  let p = 0;
  while (isSpace(b[p])) p++;
  const groups: ScannedGroup[] = [];
  if (kind === 'single') {
    const scanned = scanGroup(b, p, ['body'], 1);
    if (scanned === undefined || 'issues' in scanned) return scanned && { ok: false, issues: scanned.issues };
    groups.push(scanned.group);
    p = scanned.next;
  } else {
    if (b[p] !== 91) return undefined;
    p++;
    while (isSpace(b[p])) p++;
    if (b[p] === 93) p++;
    else
      for (let index = 0; ; index++) {
        const scanned = scanGroup(b, p, ['body', index], 2);
        if (scanned === undefined || 'issues' in scanned)
          return scanned && { ok: false, issues: scanned.issues };
        groups.push(scanned.group);
        p = scanned.next;
        while (isSpace(b[p])) p++;
        if (b[p] === 44) {
          p++;
          while (isSpace(b[p])) p++;
        } else if (b[p] === 93) {
          p++;
          break;
        } else return undefined;
      }
  }
  while (isSpace(b[p])) p++;
  return p === n ? { ok: true, groups } : undefined;
}

/** `bytes[start, end)` with each (start, end, text) of `rewrites` (absolute, in order) replaced. */
export function applyRewrites(
  b: Uint8Array,
  start: number,
  end: number,
  rewrites: (number | string)[],
): Uint8Array {
  let size = end - start;
  for (let index = 0; index < rewrites.length; index += 3)
    size +=
      (rewrites[index + 2] as string).length -
      ((rewrites[index + 1] as number) - (rewrites[index] as number));
  const out = Buffer.allocUnsafe(size);
  let from = start;
  let to = 0;
  for (let index = 0; index < rewrites.length; index += 3) {
    const at = rewrites[index] as number;
    to += Buffer.from(b.buffer, b.byteOffset + from, at - from).copy(out, to);
    to += out.write(rewrites[index + 2] as string, to, 'latin1');
    from = rewrites[index + 1] as number;
  }
  Buffer.from(b.buffer, b.byteOffset + from, end - from).copy(out, to);
  return out;
}
