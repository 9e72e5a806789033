// Small helpers for error messages about configuration and settings: a short description of the
// value that was given, the value at a path, and the closest allowed name for a misspelt key.

/** Field names (compared without case, `_` or `-`) whose values are secrets. */
const SECRET_FIELD =
  /(apikey|token|secret|password|passwd|passphrase|authorization|auth|credential|credentials|privatekey|cookie|accesskey|signature)$/;

/** Whether a field of this name holds a secret (`api_key`, `auth_token`, `Authorization`, …). */
export function isSecretField(name: string): boolean {
  return SECRET_FIELD.test(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/** A URL's password (`scheme://user:password@host`) replaced, wherever one occurs in the text. */
function hideUrlPasswords(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^\s/@:]*):[^\s/@]*@/gi, '$1:[redacted]@');
}

/**
 * A short, readable description of a value for an error message (`"abc"`, `a list (...)`,
 * `nothing`). Pass the value's `path` (its field names): the value of a secret-named field is
 * described by its kind alone, the secret-named fields inside an object or list are masked, and a
 * URL's password is hidden, so an error never prints a key the user put in the wrong place.
 */
export function describeValue(value: unknown, path: readonly PropertyKey[] = []): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'function') return 'a function';
  if (path.some((key) => typeof key === 'string' && isSecretField(key))) {
    const kind = Array.isArray(value)
      ? 'a list'
      : typeof value === 'object'
        ? 'an object'
        : typeof value === 'string'
          ? `a string of ${value.length} characters`
          : `a ${typeof value}`;
    return `${kind} (not shown: a secret field)`;
  }
  if (typeof value === 'string') {
    const shown = hideUrlPasswords(value);
    return JSON.stringify(shown.length > 60 ? `${shown.slice(0, 57)}...` : shown);
  }
  const masked = hideUrlPasswords(
    JSON.stringify(value, (key, entry) =>
      key !== '' && isSecretField(key) && entry !== null && entry !== undefined ? '[redacted]' : entry,
    ),
  ).slice(0, 60);
  if (Array.isArray(value)) return `a list (${masked})`;
  if (typeof value === 'object') return `an object (${masked})`;
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
