// Spans of values in JSON text that has already been validated (so no error checks here), and
// the text-level cut of a stored group in two, which keeps every number's spelling.

/** Per-sequence fields: when a group is split these are cut; the others are group-level. */
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

export function skipSpace(text: string, at: number): number {
  let p = at;
  for (;;) {
    const c = text.charCodeAt(p);
    if (c === 32 || c === 10 || c === 13 || c === 9) p++;
    else return p;
  }
}

/** The end (exclusive) of the JSON value starting at `at`. */
export function valueEnd(text: string, at: number): number {
  let p = at;
  let depth = 0;
  let inString = false;
  for (;;) {
    const c = text.charCodeAt(p++);
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

/** Members of the object at `at` (a `{`): key → value span, in the text's order. */
export function memberSpans(text: string, at: number): Map<string, [number, number]> {
  const spans = new Map<string, [number, number]>();
  let p = skipSpace(text, at + 1);
  if (text.charCodeAt(p) === 125) return spans;
  for (;;) {
    const keyEnd = valueEnd(text, p);
    const key = JSON.parse(text.slice(p, keyEnd)) as string;
    p = skipSpace(text, skipSpace(text, keyEnd) + 1);
    const end = valueEnd(text, p);
    spans.set(key, [p, end]);
    p = skipSpace(text, end);
    if (text.charCodeAt(p) !== 44) return spans;
    p = skipSpace(text, p + 1);
  }
}

/** Start offsets of the elements of the array at `at` (a `[`). */
export function elementStarts(text: string, at: number): number[] {
  const starts: number[] = [];
  let p = skipSpace(text, at + 1);
  if (text.charCodeAt(p) === 93) return starts;
  for (;;) {
    starts.push(p);
    p = skipSpace(text, valueEnd(text, p));
    if (text.charCodeAt(p) !== 44) return starts;
    p = skipSpace(text, p + 1);
  }
}

/**
 * Cuts a stored group's text (all keys present) in two after `at` sequences, at the text level
 * so every number keeps its spelling: per-sequence lists are cut, the other fields copied to
 * both halves.
 */
export function splitGroupText(text: string, at: number): [string, string] {
  const spans = memberSpans(text, skipSpace(text, 0));
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
