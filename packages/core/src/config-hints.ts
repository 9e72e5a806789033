// Small helpers for error messages about configuration and settings: a short description of the
// value that was given, the value at a path, and the closest allowed name for a misspelt key.

/** A short, readable description of a value for an error message (`"abc"`, `a list (...)`, `nothing`). */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string')
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (Array.isArray(value)) return `a list (${JSON.stringify(value).slice(0, 60)})`;
  if (typeof value === 'object') return `an object (${JSON.stringify(value).slice(0, 60)})`;
  return String(value);
}

/** The value at `path` inside `value`, or undefined when the path leaves the object tree. */
export function valueAtPath(value: unknown, path: readonly PropertyKey[]): unknown {
  let node = value;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const saved = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = saved;
    }
  }
  return row[b.length]!;
}

/**
 * The candidate closest to `word` by edit distance (the first of equals), for "did you mean";
 * undefined when even the closest is too far (more than max(2, a third of the word)).
 */
export function closestName(
  word: string,
  candidates: readonly string[],
  options: { ignoreCase?: boolean } = {},
): string | undefined {
  const fold = (text: string) => (options.ignoreCase ? text.toLowerCase() : text);
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(fold(word), fold(candidate));
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}
