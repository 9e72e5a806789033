// Finding old_string in a file despite the drift models produce: trailing spaces, collapsed or
// re-indented whitespace, escaped newlines, smart quotes. Strategies are tried in hermes-agent's
// order and the first one that matches anything wins, so an exact match is never overruled.

export interface MatchRange {
  start: number;
  end: number;
  /** Leading whitespace of the matched text's first line (for re-indenting the replacement). */
  indent?: string;
}

export interface FuzzyMatch {
  strategy: string;
  ranges: MatchRange[];
}

type LineNormalizer = (line: string) => string;

const UNICODE_MAP: Record<string, string> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201a': "'",
  '\u201b': "'",
  '\u201c': '"',
  '\u201d': '"',
  '\u201e': '"',
  '\u201f': '"',
  '\u2013': '-',
  '\u2014': '-',
  '\u2212': '-',
  '\u2026': '...',
  '\u00a0': ' ',
  '\u2009': ' ',
  '\u200b': '',
};

function normalizeUnicode(text: string): string {
  return text.replace(
    /[\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u2013\u2014\u2212\u2026\u00a0\u2009\u200b]/g,
    (char) => UNICODE_MAP[char] ?? char,
  );
}

function exactRanges(content: string, needle: string): MatchRange[] {
  const ranges: MatchRange[] = [];
  if (needle === '') return ranges;
  let from = 0;
  for (;;) {
    const index = content.indexOf(needle, from);
    if (index < 0) break;
    ranges.push({ start: index, end: index + needle.length });
    from = index + needle.length;
  }
  return ranges;
}

interface Line {
  text: string;
  start: number;
}

function toLines(content: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  for (const text of content.split('\n')) {
    lines.push({ text, start });
    start += text.length + 1;
  }
  return lines;
}

function stripBlankEdges(lines: string[]): string[] {
  let first = 0;
  let last = lines.length;
  while (first < last && lines[first]!.trim() === '') first++;
  while (last > first && lines[last - 1]!.trim() === '') last--;
  return lines.slice(first, last);
}

/** Windows of file lines equal to the needle's lines under `normalize`. */
function lineWindowRanges(content: string, needleLines: string[], normalize: LineNormalizer): MatchRange[] {
  if (needleLines.length === 0) return [];
  const lines = toLines(content);
  const wanted = needleLines.map(normalize);
  if (wanted.every((line) => line === '')) return [];
  const ranges: MatchRange[] = [];
  for (let index = 0; index + wanted.length <= lines.length; index++) {
    let ok = true;
    for (let offset = 0; offset < wanted.length; offset++) {
      if (normalize(lines[index + offset]!.text) !== wanted[offset]) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    const first = lines[index]!;
    const last = lines[index + wanted.length - 1]!;
    ranges.push({
      start: first.start,
      end: last.start + last.text.length,
      indent: /^\s*/.exec(first.text)![0],
    });
    index += wanted.length - 1;
  }
  return ranges;
}

function similarity(a: string, b: string): number {
  if (a === b) return 1;
  const longer = Math.max(a.length, b.length);
  if (longer === 0) return 1;
  // Common-prefix-and-suffix ratio: cheap, and enough to tell "same line, edited" from "other line".
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  )
    suffix++;
  return (prefix + suffix) / longer;
}

/** First and last lines match (trimmed), and the middle is at least half similar. */
function blockAnchorRanges(content: string, needleLines: string[]): MatchRange[] {
  const needle = stripBlankEdges(needleLines).map((line) => line.trim());
  if (needle.length < 3) return [];
  const lines = toLines(content);
  const ranges: MatchRange[] = [];
  for (let index = 0; index + needle.length <= lines.length; index++) {
    if (lines[index]!.text.trim() !== needle[0]) continue;
    const lastIndex = index + needle.length - 1;
    if (lines[lastIndex]!.text.trim() !== needle[needle.length - 1]) continue;
    let total = 0;
    for (let offset = 1; offset < needle.length - 1; offset++)
      total += similarity(lines[index + offset]!.text.trim(), needle[offset]!);
    if (total / (needle.length - 2) < 0.5) continue;
    const first = lines[index]!;
    const last = lines[lastIndex]!;
    ranges.push({
      start: first.start,
      end: last.start + last.text.length,
      indent: /^\s*/.exec(first.text)![0],
    });
    index = lastIndex;
  }
  return ranges;
}

function unescapeDrift(text: string): string {
  return text.replace(/\\n/g, '\n').replace(/\\t/g, '\t').replace(/\\"/g, '"').replace(/\\'/g, "'");
}

/** The matching strategies, in the order they are tried (the patch description counts them). */
export const MATCH_STRATEGIES = [
  'exact',
  'line_trimmed',
  'whitespace_normalized',
  'indentation_flexible',
  'escape_normalized',
  'trimmed_boundary',
  'unicode_normalized',
  'block_anchor',
] as const;
type MatchStrategy = (typeof MATCH_STRATEGIES)[number];

/** Finds `needle` in `content`, exactly if possible, else with the fuzzy strategies in order. */
export function findMatches(content: string, needle: string): FuzzyMatch | undefined {
  const needleLines = needle.split('\n');
  const strategies: Record<MatchStrategy, () => MatchRange[]> = {
    exact: () => exactRanges(content, needle),
    line_trimmed: () => lineWindowRanges(content, needleLines, (line) => line.trim()),
    whitespace_normalized: () =>
      lineWindowRanges(content, needleLines, (line) => line.replace(/\s+/g, ' ').trim()),
    indentation_flexible: () => lineWindowRanges(content, needleLines, (line) => line.trimStart()),
    escape_normalized: () =>
      needle.includes('\\')
        ? lineWindowRanges(content, unescapeDrift(needle).split('\n'), (line) => line.trim())
        : [],
    trimmed_boundary: () => lineWindowRanges(content, stripBlankEdges(needleLines), (line) => line.trim()),
    unicode_normalized: () =>
      lineWindowRanges(content, needleLines, (line) => normalizeUnicode(line).replace(/\s+/g, ' ').trim()),
    block_anchor: () => blockAnchorRanges(content, needleLines),
  };
  for (const strategy of MATCH_STRATEGIES) {
    const ranges = strategies[strategy]();
    if (ranges.length > 0) return { strategy, ranges };
  }
  return undefined;
}

/**
 * Re-indents `replacement` when a fuzzy match found the text at another indentation: the
 * indentation of the old text's first line is swapped for the file's on every line.
 */
export function reindent(replacement: string, oldText: string, fileIndent: string | undefined): string {
  if (fileIndent === undefined) return replacement;
  const firstOld = oldText.split('\n').find((line) => line.trim() !== '') ?? '';
  const oldIndent = /^\s*/.exec(firstOld)![0];
  if (oldIndent === fileIndent) return replacement;
  return replacement
    .split('\n')
    .map((line) => {
      if (line.trim() === '') return line;
      if (line.startsWith(oldIndent)) return fileIndent + line.slice(oldIndent.length);
      return line;
    })
    .join('\n');
}

/** Applies replacements (non-overlapping, any order) to `content`. */
export function applyRanges(
  content: string,
  ranges: readonly MatchRange[],
  replacementFor: (range: MatchRange) => string,
): string {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  let result = '';
  let cursor = 0;
  for (const range of sorted) {
    result += content.slice(cursor, range.start) + replacementFor(range);
    cursor = range.end;
  }
  return result + content.slice(cursor);
}

function bigrams(text: string): Map<string, number> {
  const grams = new Map<string, number>();
  for (let index = 0; index < text.length - 1; index++) {
    const gram = text.slice(index, index + 2);
    grams.set(gram, (grams.get(gram) ?? 0) + 1);
  }
  return grams;
}

/** Dice coefficient over character bigrams: 1 for equal text, near 0 for unrelated text. */
function diceSimilarity(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const left = bigrams(a);
  let shared = 0;
  for (const [gram, count] of bigrams(b)) shared += Math.min(count, left.get(gram) ?? 0);
  return (2 * shared) / (a.length - 1 + (b.length - 1));
}

interface Section {
  /** 1-based first line. */
  startLine: number;
  lines: string[];
  score: number;
}

/** The (up to `max`) places in `content` that look most like `needle`, for "did you mean". */
export function closestSections(content: string, needle: string, max = 3, minimumScore = 0.65): Section[] {
  const wanted = stripBlankEdges(needle.split('\n')).map((line) => line.trim());
  if (wanted.length === 0) return [];
  const lines = content.split('\n');
  // Long files with long needles: compare the first line only, to stay linear.
  const compared = lines.length * wanted.length > 200_000 ? wanted.slice(0, 1) : wanted;
  const scored: Section[] = [];
  for (let start = 0; start + compared.length <= lines.length; start++) {
    let total = 0;
    for (let offset = 0; offset < compared.length; offset++)
      total += diceSimilarity(lines[start + offset]!.trim(), compared[offset]!);
    const score = total / compared.length;
    if (score >= minimumScore)
      scored.push({ startLine: start + 1, lines: lines.slice(start, start + wanted.length), score });
  }
  scored.sort((a, b) => b.score - a.score || a.startLine - b.startLine);
  const chosen: Section[] = [];
  for (const section of scored) {
    if (chosen.some((other) => Math.abs(other.startLine - section.startLine) < wanted.length)) continue;
    chosen.push(section);
    if (chosen.length === max) break;
  }
  return chosen;
}
