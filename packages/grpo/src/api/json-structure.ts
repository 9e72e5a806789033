// What JSON.parse does not refuse but a trainer cannot read: nesting deeper than a bound
// (Python's json module raises RecursionError near 1,000 levels, serde_json at 128), the same
// key twice in one object (parsers disagree on which value wins, serde refuses it), and bytes
// that are not UTF-8 (Python's json refuses them; Buffer#toString would replace them with
// U+FFFD and store text the client never sent). One pass over the bytes, before JSON.parse;
// JSON syntax itself is left to JSON.parse, so a body that is not JSON passes here unflagged.
import { isUtf8 } from 'node:buffer';

/** Deepest nesting accepted in a request body (the body's own object or list is level 1). */
export const MAX_JSON_DEPTH = 64;

type StructureProblem =
  | { kind: 'depth'; at: number }
  | { kind: 'duplicate'; at: number; path: (string | number)[] }
  | { kind: 'utf8'; at: number };

/** The first byte of `bytes[start, end)` where a valid UTF-8 sequence does not begin (on failure only). */
function firstInvalidUtf8(bytes: Uint8Array, start: number, end: number): number {
  let p = start;
  while (p < end) {
    const c = bytes[p] as number;
    const length =
      c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (length === 0 || p + length > end || !isUtf8(bytes.subarray(p, p + length))) return p;
    p += length;
  }
  return end;
}

/**
 * Checks `bytes[start, end)` (one JSON value, or a body) for depth beyond `maxDepth - baseDepth`,
 * repeated keys and invalid UTF-8. `path` is where the value sits, for error locations.
 */
export function checkJsonStructure(
  bytes: Uint8Array,
  start: number,
  end: number,
  options: { baseDepth?: number; maxDepth?: number; path?: (string | number)[] } = {},
): StructureProblem | undefined {
  const limit = (options.maxDepth ?? MAX_JSON_DEPTH) - (options.baseDepth ?? 0);
  // Per open container: its kind (1 = object), the keys seen, and where we are in it.
  const objects: boolean[] = [];
  const keys: (Set<string> | undefined)[] = [];
  const labels: (string | number)[] = [];
  let expectKey = false;
  let high = false;
  let p = start;
  while (p < end) {
    const c = bytes[p] as number;
    if (c === 34) {
      const from = ++p;
      let escaped = false;
      while (p < end) {
        const d = bytes[p] as number;
        if (d === 92) {
          escaped = true;
          p += 2;
          continue;
        }
        if (d === 34) break;
        if (d >= 128) high = true;
        p++;
      }
      if (expectKey) {
        const depth = objects.length - 1;
        let key: string;
        if (escaped) {
          try {
            key = JSON.parse(
              Buffer.from(bytes.buffer, bytes.byteOffset + from - 1, p - from + 2).toString('utf8'),
            );
          } catch {
            return undefined; // not JSON: JSON.parse reports it
          }
        } else key = Buffer.from(bytes.buffer, bytes.byteOffset + from, p - from).toString('utf8');
        let seen = keys[depth];
        if (seen === undefined) {
          seen = new Set();
          keys[depth] = seen;
        }
        if (seen.has(key))
          return {
            kind: 'duplicate',
            at: from - 1,
            path: [...(options.path ?? []), ...labels.slice(1, depth + 1), key],
          };
        seen.add(key);
        labels[depth + 1] = key;
        expectKey = false;
      }
      p++;
      continue;
    }
    if (c === 123 || c === 91) {
      if (objects.length >= limit) return { kind: 'depth', at: p };
      const object = c === 123;
      objects.push(object);
      keys[objects.length - 1] = undefined;
      if (!object) labels[objects.length] = 0;
      expectKey = object;
    } else if (c === 125 || c === 93) {
      if (objects.pop() === undefined) return undefined;
      expectKey = false;
    } else if (c === 44) {
      const depth = objects.length - 1;
      if (objects[depth] === true) expectKey = true;
      else if (depth >= 0) labels[depth + 1] = (labels[depth + 1] as number) + 1;
    } else if (c >= 128) high = true;
    p++;
  }
  if (high && !isUtf8(bytes.subarray(start, end)))
    return { kind: 'utf8', at: firstInvalidUtf8(bytes, start, end) };
  return undefined;
}
