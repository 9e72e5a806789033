// What the injection screen reads of a piece of text: the text as a reader takes it, not as it is
// spelt. Escapes are decoded (JSON and JavaScript \u0069 and \x69, printf's \151, \n, HTML
// &#105; and &amp;, URL %69 — repeatedly, so a doubly escaped tool argument is read too), then
// folded (NFKD with accents dropped, Unicode look-alikes mapped to ASCII, invisible characters
// removed, lowercase; untrusted-text.ts). The reading keeps, per unit, where it came from in the
// original text, so a match is located in what the agent wrote. A squeezed form (letters, digits
// and "/" only, no offsets) lets two texts that say the same thing spelt differently — a file's
// text as a heredoc wrote it and as `cat` showed it — compare equal (provenance.ts).
import { type FoldedText, foldedString, foldText, originEnd, originStart } from './untrusted-text.js';

/** A transformed text with, per UTF-16 unit, the original range it came from (null: the same index). */
type Mapped = FoldedText;

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  lsqb: '[',
  rsqb: ']',
  lbrack: '[',
  rbrack: ']',
  lbrace: '{',
  rbrace: '}',
  colon: ':',
  sol: '/',
  bsol: '\\',
  newline: '\n',
  tab: '\t',
};

const SIMPLE_ESCAPES: Record<string, string> = {
  n: '\n',
  r: '\n',
  t: ' ',
  f: '\n',
  v: '\n',
  b: '',
  '"': '"',
  "'": "'",
  '\\': '\\',
  '/': '/',
  '`': '`',
};

/** The escapes one decoding pass reads. */
const ESCAPE =
  /\\u\{([0-9a-fA-F]{1,6})\}|\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|\\([nrtfvb"'\\/`])|&#[xX]([0-9a-fA-F]{1,6});?|&#([0-9]{1,7});?|&([a-zA-Z]{2,8});|%([0-9a-fA-F]{2})|\\([0-3][0-7]{2})/g;
const HAS_ESCAPE = /[\\&%]/;

function fromCode(code: number): string | undefined {
  return Number.isInteger(code) && code >= 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
    ? String.fromCodePoint(code)
    : undefined;
}

/** One pass of decoding, or undefined when nothing was decoded. */
function decodeOnce(text: string): Mapped | undefined {
  if (!HAS_ESCAPE.test(text)) return undefined;
  let out = '';
  const starts: number[] = [];
  const ends: number[] = [];
  let cursor = 0;
  let changed = false;
  const keep = (from: number, to: number) => {
    for (let index = from; index < to; index++) {
      starts.push(index);
      ends.push(index + 1);
    }
    out += text.slice(from, to);
  };
  ESCAPE.lastIndex = 0;
  for (let match = ESCAPE.exec(text); match; match = ESCAPE.exec(text)) {
    const [whole, braced, unicode, hex, simple, htmlHex, htmlDecimal, named, percent, octal] = match;
    let decoded: string | undefined;
    let width = whole.length;
    if (braced !== undefined) decoded = fromCode(Number.parseInt(braced, 16));
    else if (unicode !== undefined) {
      const code = Number.parseInt(unicode, 16);
      // A surrogate pair written as two \u escapes.
      const low = /^\\u(d[c-f][0-9a-f]{2})/i.exec(text.slice(match.index + 6, match.index + 12));
      if (code >= 0xd800 && code <= 0xdbff && low) {
        decoded = String.fromCharCode(code, Number.parseInt(low[1]!, 16));
        width = 12;
      } else decoded = fromCode(code);
    } else if (hex !== undefined) decoded = fromCode(Number.parseInt(hex, 16));
    else if (simple !== undefined) decoded = SIMPLE_ESCAPES[simple];
    else if (htmlHex !== undefined) decoded = fromCode(Number.parseInt(htmlHex, 16));
    else if (htmlDecimal !== undefined) decoded = fromCode(Number.parseInt(htmlDecimal, 10));
    else if (named !== undefined) decoded = NAMED_ENTITIES[named.toLowerCase()];
    else if (octal !== undefined) {
      // printf's \151: only what prints (a stray "\100" in a path stays as it is).
      const code = Number.parseInt(octal, 8);
      decoded = code >= 0x20 && code < 0x7f ? String.fromCharCode(code) : undefined;
    } else if (percent !== undefined) {
      const code = Number.parseInt(percent, 16);
      // Only what a URL hides: printable ASCII and spaces (a stray "100%25" stays as it is).
      decoded = code >= 0x20 && code < 0x7f ? String.fromCharCode(code) : undefined;
    }
    if (decoded === undefined) continue;
    keep(cursor, match.index);
    for (let unit = 0; unit < decoded.length; unit++) {
      starts.push(match.index);
      ends.push(match.index + width);
    }
    out += decoded;
    cursor = match.index + width;
    ESCAPE.lastIndex = cursor;
    changed = true;
  }
  if (!changed) return undefined;
  keep(cursor, text.length);
  return { folded: out, start: Int32Array.from(starts), end: Int32Array.from(ends) };
}

/** `outer` (whose offsets are in `inner`'s text) with its offsets moved to `inner`'s origin. */
function compose(outer: Mapped, inner: Mapped): Mapped {
  if (!inner.start) return outer;
  const length = outer.folded.length;
  const start = new Int32Array(length);
  const end = new Int32Array(length);
  for (let index = 0; index < length; index++) {
    start[index] = originStart(inner, originStart(outer, index));
    end[index] = originEnd(inner, originEnd(outer, index) - 1);
  }
  return { folded: outer.folded, start, end };
}

/** At most this many decoding passes (a string escaped three times over is read). */
const MAX_PASSES = 3;

/** `text` with its escapes decoded (repeatedly), offsets kept. */
function decodeEscapes(text: string): Mapped {
  let current: Mapped = { folded: text, start: null, end: null };
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const next = decodeOnce(current.folded);
    if (!next) break;
    current = compose(next, current);
  }
  return current;
}

const SQUEEZE_KEEP = /[\p{L}\p{N}/]/u;
const squeezeCache = new Map<number, boolean>();

function squeezeKeeps(code: number, char: string): boolean {
  if (code < 0x80) return (code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39) || code === 0x2f;
  let keep = squeezeCache.get(code);
  if (keep === undefined) {
    keep = SQUEEZE_KEEP.test(char);
    if (squeezeCache.size < 50_000) squeezeCache.set(code, keep);
  }
  return keep;
}

/** The reading of `text` the screen's rules run over: decoded and folded, line structure kept. */
export function screenReading(text: string): FoldedText {
  const decoded = decodeEscapes(text);
  return compose(foldText(decoded.folded), decoded);
}

/**
 * The squeezed reading of `text` as a plain string (for comparing what two texts say): decoded,
 * folded, letters, digits and "/" only. Built without offsets: attribution reads whole
 * trajectories with it.
 */
export function squeezedText(text: string): string {
  const folded = foldedString(decodeEscapes(text).folded);
  let out = '';
  let from = -1;
  for (let index = 0; index < folded.length; ) {
    const code = folded.codePointAt(index)!;
    const width = code > 0xffff ? 2 : 1;
    const keep = squeezeKeeps(code, folded.slice(index, index + width));
    if (keep && from < 0) from = index;
    if (!keep && from >= 0) {
      out += folded.slice(from, index);
      from = -1;
    }
    index += width;
  }
  return from >= 0 ? out + folded.slice(from) : out;
}
