// Text the policy wrote, made safe to show a judge. A judge prompt quotes agent and tool text; a
// policy under RL learns to write text that imitates the prompt around it (a turn marker, a
// "Final response:" header, a chat-template token, the boundary itself). This module finds such
// imitations after folding away the tricks that hide them from a plain string match (Unicode
// look-alikes, compatibility forms, zero-width and other invisible characters, combining marks,
// tag characters) and rewrites each one as a visibly quoted ⟨...⟩ form that no longer reads as
// structure. The same folding backs the injection screen (injection-screen.ts).
import { createRequire } from 'node:module';

/** The mark every line of untrusted text starts with in a judge prompt. */
const DATA_LINE_PREFIX = '│ ';
/** The mark an empty line of untrusted text is shown as. */
const EMPTY_DATA_LINE = '│';

// Invisible characters (Default_Ignorable_Code_Point covers zero-width spaces and joiners, bidi
// controls, word joiners, variation selectors, soft hyphens and the tag block) and combining marks:
// none of them changes what a reader takes a word to be, so matching ignores them.
const IGNORABLE = /[\p{Default_Ignorable_Code_Point}\p{M}]/u;
const TAG_FIRST = 0xe0020;
const TAG_LAST = 0xe007e;
/** Line breaks a tokenizer or a reader may honour besides \n. */
const LINE_BREAKS = /\r\n|[\r\v\f\u0085\u2028\u2029]/g;

let confusables: Record<string, string> | undefined;

/**
 * Shapes Unicode's confusables table maps to another non-ASCII letter (or not at all) that a
 * reader still takes for an ASCII letter: small capitals, and the table's own non-ASCII targets
 * (Cyrillic н → ʜ, т → ᴛ, в → ʙ are followed on to h, t, b).
 */
const EXTRA_LOOKALIKES: Record<string, string> = {
  ᴀ: 'a',
  ʙ: 'b',
  ᴅ: 'd',
  ᴇ: 'e',
  ꜰ: 'f',
  ɢ: 'g',
  ʜ: 'h',
  ᴊ: 'j',
  ᴋ: 'k',
  ĸ: 'k',
  ʟ: 'l',
  ᴍ: 'm',
  ɴ: 'n',
  ᴘ: 'p',
  ǫ: 'q',
  ʀ: 'r',
  ᴛ: 't',
  ᴎ: 'n',
  ʍ: 'm',
};

/**
 * Unicode's confusables (UTS #39, via unhomoglyph's table): character → the ASCII it imitates,
 * following a mapping to another look-alike one step further, plus the small capitals above.
 * Loaded on first use (about 100 kB). Only mappings of non-ASCII characters are used: ASCII
 * look-alikes (0/o, 1/l/I/|) are handled in the patterns, so digits stay digits.
 */
function confusableTable(): Record<string, string> {
  if (!confusables) {
    const table = createRequire(import.meta.url)('unhomoglyph/data.json') as Record<string, string>;
    confusables = { ...EXTRA_LOOKALIKES };
    for (const [from, to] of Object.entries(table)) {
      const code = from.codePointAt(0)!;
      if (code <= 0x7f || [...from].length !== 1 || from in EXTRA_LOOKALIKES) continue;
      const target = /^[\x20-\x7e]+$/.test(to) ? to : (EXTRA_LOOKALIKES[to] ?? table[to]);
      if (target !== undefined && /^[\x20-\x7e]+$/.test(target)) confusables[from] = target;
    }
  }
  return confusables;
}

const foldCache = new Map<number, string>();
const ASCII_ONLY = /^[\x00-\x7f]*$/;

/**
 * What one code point folds to: lowercase ASCII where it imitates ASCII, '' where invisible.
 * Compatibility forms and accents go (NFKD, then combining marks dropped: "Ｆïnal" reads "final"),
 * then look-alikes are mapped.
 */
function foldCodePoint(code: number, char: string): string {
  if (code < 0x80) return code >= 0x41 && code <= 0x5a ? String.fromCharCode(code + 32) : char;
  const cached = foldCache.get(code);
  if (cached !== undefined) return cached;
  let folded: string;
  // Tag characters spell ASCII invisibly ("ASCII smuggling"): fold them to what they spell.
  if (code >= TAG_FIRST && code <= TAG_LAST) folded = String.fromCharCode(code - 0xe0000).toLowerCase();
  else if (IGNORABLE.test(char)) folded = '';
  else {
    const table = confusableTable();
    folded = '';
    // The character itself first (some look-alikes decompose into a base and a mark), then its parts.
    const whole = table[char] ?? table[char.toLowerCase()];
    if (whole !== undefined) folded = whole;
    else
      for (const part of char.normalize('NFKD').toLowerCase()) {
        if (IGNORABLE.test(part)) continue;
        folded += table[part] ?? part;
      }
    folded = folded.toLowerCase();
  }
  if (foldCache.size < 50_000) foldCache.set(code, folded);
  return folded;
}

export interface FoldedText {
  /** The folded text: lowercase, look-alikes mapped to ASCII, invisible characters removed. */
  folded: string;
  /** For each UTF-16 unit of `folded`, the index in the original where its code point starts (null: the same index). */
  start: Int32Array | null;
  /** For each UTF-16 unit of `folded`, the index in the original just after its code point (null: the index + 1). */
  end: Int32Array | null;
}

/** Where folded unit `index` starts in the original. */
export function originStart(folded: FoldedText, index: number): number {
  return folded.start ? folded.start[index]! : index;
}

/** Where folded unit `index` ends in the original. */
export function originEnd(folded: FoldedText, index: number): number {
  return folded.end ? folded.end[index]! : index + 1;
}

/** Folds text for matching, keeping where each folded character came from. */
export function foldText(text: string): FoldedText {
  // Most agent text is ASCII: then folding is lowercasing, one unit for one unit.
  if (ASCII_ONLY.test(text)) return { folded: text.toLowerCase(), start: null, end: null };
  const parts: string[] = [];
  let starts: Int32Array = new Int32Array(text.length + 16);
  let ends: Int32Array = new Int32Array(text.length + 16);
  let length = 0;
  for (let index = 0; index < text.length; ) {
    const code = text.charCodeAt(index);
    // ASCII needs no table: lowercased, one unit for one.
    if (code < 0x80) {
      parts.push(code >= 0x41 && code <= 0x5a ? String.fromCharCode(code + 32) : text[index]!);
      if (length + 1 > starts.length) [starts, ends] = [grow(starts), grow(ends)];
      starts[length] = index;
      ends[length] = index + 1;
      length++;
      index++;
      continue;
    }
    const point = text.codePointAt(index)!;
    const width = point > 0xffff ? 2 : 1;
    const part = foldCodePoint(point, text.slice(index, index + width));
    if (length + part.length > starts.length)
      [starts, ends] = [grow(starts, part.length), grow(ends, part.length)];
    for (let unit = 0; unit < part.length; unit++) {
      starts[length] = index;
      ends[length] = index + width;
      length++;
    }
    parts.push(part);
    index += width;
  }
  return { folded: parts.join(''), start: starts.subarray(0, length), end: ends.subarray(0, length) };
}

/** A larger copy of `array` (at least `extra` more). */
function grow(array: Int32Array, extra = 1): Int32Array {
  const bigger = new Int32Array(Math.max(array.length * 2, array.length + extra + 16));
  bigger.set(array);
  return bigger;
}

/** `text` folded, without the offsets (for comparing what two texts say). */
export function foldedString(text: string): string {
  if (ASCII_ONLY.test(text)) return text.toLowerCase();
  let folded = '';
  for (let index = 0; index < text.length; ) {
    const code = text.codePointAt(index)!;
    const width = code > 0xffff ? 2 : 1;
    folded +=
      code < 0x80 ? text[index]!.toLowerCase() : foldCodePoint(code, text.slice(index, index + width));
    index += width;
  }
  return folded;
}

/**
 * A regex source matching `word` in folded text, tolerating the ASCII look-alikes 0/o, 1/l/i/| and
 * rn/m. The word is folded first, so a pattern written in any script (accents, Cyrillic, CJK)
 * matches text folded the same way. The source is valid with and without the `u` flag.
 */
export function foldedWord(word: string): string {
  let source = '';
  for (const char of foldText(word).folded) {
    if (char === 'o') source += '[o0]';
    else if (char === 'i' || char === 'l') source += '[il1|!]';
    else if (char === 'm') source += '(?:m|rn)';
    else if (char === ' ') source += '[\\s_\\-.]*';
    else if (char === '-') source += '\\x2d';
    else source += char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return source;
}

const words = (...list: string[]) => list.map(foldedWord).join('|');

/**
 * A line start in folded text: the start, a newline, or an escaped \n or \r (tool arguments are
 * JSON, and a reader takes "\n" in them as a line break). It is part of the match (consuming it
 * is several times faster than a lookbehind); `linePrefixLength` says how much of a match it is.
 */
export const LINE_START = '(?:^|\\n|\\\\[nr])';

/** How many leading units of a match are the line start it consumed (0, 1 or 2). */
export function linePrefixLength(match: string): number {
  if (match.startsWith('\n')) return 1;
  return /^\\[nr]/.test(match) ? 2 : 0;
}

/**
 * What a judge prompt uses as structure, in folded form. Agent text that matches one of these is
 * neutralised before a judge sees it; the screen (injection-screen.ts) reads the same list.
 */
const STRUCTURE_PATTERNS: ReadonlyArray<{ name: string; pattern: RegExp }> = [
  {
    // Turn markers: [assistant], [tool result call_1], [tool call x], [system], [final response], ...
    name: 'turn_marker',
    pattern: new RegExp(
      `[\\[(⟦❬<]\\s*(?:${words('assistant', 'user', 'system', 'developer', 'tool', 'function', 'ipython', 'final response', 'final answer', 'reference answer', 'task', 'instructions', 'candidate', 'attempt')})\\b[^\\]\\n)⟧❭>]{0,120}[\\])⟧❭>]`,
      'g',
    ),
  },
  {
    // Section headers of the judge prompts, old and new, at the start of a line.
    name: 'section_header',
    pattern: new RegExp(
      `${LINE_START}[ \\t>*#_-]*(?:${words('final response', 'final answer', 'reference answer', 'agent trajectory', 'agent transcript', 'score each dimension', 'scoring instructions', 'instructions', 'criteria', 'task', 'composite', 'rationale', 'verdict')})[ \\t*_]*:`,
      'g',
    ),
  },
  {
    // Markdown headings that open a candidate or an attempt (the group and pairwise prompts).
    name: 'candidate_header',
    pattern: new RegExp(
      `#{1,6}[ \\t]*(?:${words('candidate', 'attempt', 'transcript', 'response')})\\b`,
      'g',
    ),
  },
  {
    // The transcript boundaries and instruction section of the quarantined prompt, with or without a nonce.
    name: 'boundary',
    pattern: new RegExp(
      `(?:${words('begin', 'end')})[\\s_\\-.]*(?:${words('untrusted')})?[\\s_\\-.]*(?:${words('transcript')})`,
      'g',
    ),
  },
  {
    // Chat-template tokens a tokenizer may read as special: <|im_start|>, <|eot_id|>, [INST], <<SYS>>, </s>, <system>.
    name: 'chat_template_token',
    pattern: new RegExp(
      `<\\|[^|\\n]{1,40}\\|>|\\[\\/?${foldedWord('inst')}\\]|<<\\/?${foldedWord('sys')}>>|<\\/?(?:${words('s', 'system', 'user', 'assistant', 'tool', 'think')})>`,
      'g',
    ),
  },
];

/** Characters that make a quoted span look like structure; the neutral form drops them. */
const STRUCTURE_PUNCTUATION = /[[\]:#<>|⟦⟧⟨⟩❬❭‹›()«»]/g;

export interface StructureMatch {
  name: string;
  /** Offsets in the original text. */
  start: number;
  end: number;
}

/** Every imitation of prompt structure in `text` (original offsets), nonces included. */
export function findStructure(
  text: string,
  options: { nonces?: readonly string[]; folded?: FoldedText } = {},
): StructureMatch[] {
  const folded = options.folded ?? foldText(text);
  const matches: StructureMatch[] = [];
  const add = (name: string, from: number, to: number) => {
    if (to <= from) return;
    matches.push({ name, start: originStart(folded, from), end: originEnd(folded, to - 1) });
  };
  for (const { name, pattern } of STRUCTURE_PATTERNS) {
    pattern.lastIndex = 0;
    for (let match = pattern.exec(folded.folded); match; match = pattern.exec(folded.folded)) {
      add(name, match.index + linePrefixLength(match[0]), match.index + match[0].length);
      if (match[0].length === 0) pattern.lastIndex++;
    }
  }
  for (const nonce of options.nonces ?? []) {
    if (!nonce) continue;
    const pattern = noncePattern(nonce);
    pattern.lastIndex = 0;
    for (let match = pattern.exec(folded.folded); match; match = pattern.exec(folded.folded))
      add('nonce', match.index, match.index + match[0].length);
  }
  // The boundary brackets: only the prompt writes ⟦ ⟧.
  for (let index = text.search(/[⟦⟧]/); index >= 0; ) {
    matches.push({ name: 'bracket', start: index, end: index + 1 });
    const next = text.slice(index + 1).search(/[⟦⟧]/);
    index = next < 0 ? -1 : index + 1 + next;
  }
  return mergeMatches(matches);
}

const noncePatterns = new Map<string, RegExp>();

/** The (cached) pattern of a nonce in folded text: a judge call formats many pieces with one nonce. */
function noncePattern(nonce: string): RegExp {
  let pattern = noncePatterns.get(nonce);
  if (!pattern) {
    if (noncePatterns.size >= 64) noncePatterns.delete(noncePatterns.keys().next().value as string);
    pattern = new RegExp(foldedWord(nonce), 'g');
    noncePatterns.set(nonce, pattern);
  }
  return pattern;
}

/** Sorts matches and merges overlapping ones (the first name wins). */
function mergeMatches(matches: StructureMatch[]): StructureMatch[] {
  matches.sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: StructureMatch[] = [];
  for (const match of matches) {
    const last = merged[merged.length - 1];
    if (last && match.start < last.end) last.end = Math.max(last.end, match.end);
    else merged.push({ ...match });
  }
  return merged;
}

/** What a run of tag characters spells, made visible. */
function revealTags(text: string): string {
  return text.replace(/[\u{E0000}-\u{E007F}]+/gu, (run) => {
    let spelled = '';
    for (const char of run) {
      const code = char.codePointAt(0)!;
      if (code >= TAG_FIRST && code <= TAG_LAST) spelled += String.fromCharCode(code - 0xe0000);
    }
    return spelled ? `«hidden text: ${spelled}»` : '';
  });
}

/** Invisible characters other than those that shape emoji (ZWJ, variation selectors after a non-ASCII character). */
function dropInvisible(text: string): string {
  return text.replace(/[\p{Default_Ignorable_Code_Point}]/gu, (char, offset: number) => {
    const code = char.codePointAt(0)!;
    const previous = offset > 0 ? text.codePointAt(offset - 1)! : 0;
    if ((code === 0x200d || (code >= 0xfe00 && code <= 0xfe0f)) && previous > 0x7f) return char;
    return '';
  });
}

/** Cleans text for display: tag characters revealed, other invisible characters dropped, plain \n line breaks. */
function cleanUntrustedText(text: string): string {
  return dropInvisible(revealTags(text)).replace(LINE_BREAKS, '\n');
}

/**
 * The quoted form of an imitation: «what it says», without what made it look like structure.
 * « and » fold to nothing a pattern reads, so a neutral form never matches again.
 */
function neutralForm(name: string, span: string): string {
  // Fixed short forms: an input made of many tiny imitations must not grow the prompt.
  if (name === 'nonce') return '«nonce»';
  if (name === 'boundary') return '«boundary»';
  if (name === 'bracket') return span === '⟦' ? '⁅' : '⁆';
  const plain = cleanUntrustedText(span)
    .normalize('NFKC')
    .replace(STRUCTURE_PUNCTUATION, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return `«${plain || 'markup'}»`;
}

export interface NeutralisedText {
  text: string;
  /** The imitations that were rewritten (offsets in the cleaned text of the first pass). */
  matches: StructureMatch[];
}

/**
 * Agent or tool text as a judge may see it: tag characters revealed, other invisible characters
 * removed, line breaks made plain \n, and every imitation of the prompt's structure (and any
 * occurrence of the nonces) rewritten as «...». Repeats until nothing matches, so the result
 * never reads as structure, whatever the input.
 */
export function neutraliseUntrustedText(
  text: string,
  options: { nonces?: readonly string[] } = {},
): NeutralisedText {
  let current = text;
  let first: StructureMatch[] | undefined;
  for (let pass = 0; pass < 8; pass++) {
    const cleaned = cleanUntrustedText(current);
    const matches = findStructure(cleaned, options);
    first ??= matches;
    if (matches.length === 0) return { text: cleaned, matches: first };
    current = rewrite(cleaned, matches);
  }
  // Not reached by any input tried (the property tests search for one); never return text that
  // still reads as structure.
  return { text: cleanUntrustedText(current).replace(STRUCTURE_PUNCTUATION, ' '), matches: first ?? [] };
}

function rewrite(text: string, matches: readonly StructureMatch[]): string {
  let out = '';
  let cursor = 0;
  for (const match of matches) {
    out += text.slice(cursor, match.start);
    out += neutralForm(match.name, text.slice(match.start, match.end));
    cursor = match.end;
  }
  return out + text.slice(cursor);
}

/** Untrusted text as quoted lines: every line starts with the data prefix, so none can be structure. */
export function quoteLines(text: string): string {
  return text
    .replace(LINE_BREAKS, '\n')
    .split('\n')
    .map((line) => (line.length > 0 ? `${DATA_LINE_PREFIX}${line}` : EMPTY_DATA_LINE))
    .join('\n');
}
