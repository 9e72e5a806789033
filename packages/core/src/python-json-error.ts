// The message Python's `json.loads` (CPython's C scanner, 3.8–3.12 wording) gives for invalid
// JSON, e.g. `Expecting ',' delimiter: line 1 column 8 (char 7)`. hermes-agent puts that text
// into `Invalid JSON in tool arguments: ...`, and models are trained on it, so the agent loop
// reproduces it instead of V8's wording.

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

class DecodeFailure {
  constructor(
    readonly message: string,
    readonly position: number,
  ) {}
}

/** Signals "no value starts here" (Python's StopIteration inside the scanner). */
class NoValue {
  constructor(readonly position: number) {}
}

function skipWhitespace(text: string, index: number): number {
  while (index < text.length && WHITESPACE.has(text[index] as string)) index++;
  return index;
}

function scanString(text: string, quote: number): number {
  // `quote` is the index of the opening quote; returns the index after the closing quote.
  let index = quote + 1;
  for (;;) {
    if (index >= text.length) throw new DecodeFailure('Unterminated string starting at', quote);
    const char = text[index] as string;
    if (char === '"') return index + 1;
    if (char !== '\\') {
      if (char.charCodeAt(0) <= 0x1f) throw new DecodeFailure('Invalid control character at', index);
      index++;
      continue;
    }
    const escapeIndex = index + 1;
    if (escapeIndex >= text.length) throw new DecodeFailure('Unterminated string starting at', quote);
    const escaped = text[escapeIndex] as string;
    if (escaped !== 'u') {
      if (!'"\\/bfnrt'.includes(escaped)) throw new DecodeFailure('Invalid \\escape', index);
      index = escapeIndex + 1;
      continue;
    }
    const hexStart = escapeIndex + 1;
    if (hexStart + 4 >= text.length) throw new DecodeFailure('Invalid \\uXXXX escape', escapeIndex);
    if (!/^[0-9a-fA-F]{4}$/.test(text.slice(hexStart, hexStart + 4)))
      throw new DecodeFailure('Invalid \\uXXXX escape', escapeIndex);
    index = hexStart + 4;
  }
}

function scanNumber(text: string, start: number): number {
  let index = start;
  if (text[index] === '-') index++;
  if (text[index] === '0') index++;
  else if (text[index] !== undefined && text[index]! >= '1' && text[index]! <= '9') {
    while (text[index] !== undefined && text[index]! >= '0' && text[index]! <= '9') index++;
  } else throw new NoValue(start);
  if (text[index] === '.' && text[index + 1] !== undefined && /[0-9]/.test(text[index + 1]!)) {
    index += 2;
    while (text[index] !== undefined && /[0-9]/.test(text[index]!)) index++;
  }
  if (text[index] === 'e' || text[index] === 'E') {
    let exponent = index + 1;
    if (text[exponent] === '+' || text[exponent] === '-') exponent++;
    if (text[exponent] !== undefined && /[0-9]/.test(text[exponent]!)) {
      while (text[exponent] !== undefined && /[0-9]/.test(text[exponent]!)) exponent++;
      index = exponent;
    }
  }
  return index;
}

function scanValue(text: string, index: number): number {
  if (index >= text.length) throw new NoValue(index);
  const char = text[index];
  if (char === '"') return scanString(text, index);
  if (char === '{') return scanObject(text, index + 1);
  if (char === '[') return scanArray(text, index + 1);
  for (const literal of ['null', 'true', 'false', 'NaN', 'Infinity', '-Infinity']) {
    if (text.startsWith(literal, index)) return index + literal.length;
  }
  return scanNumber(text, index);
}

function scanNested(text: string, index: number): number {
  try {
    return scanValue(text, index);
  } catch (error) {
    if (error instanceof NoValue) throw new DecodeFailure('Expecting value', error.position);
    throw error;
  }
}

function scanObject(text: string, start: number): number {
  let index = skipWhitespace(text, start);
  if (index < text.length && text[index] === '}') return index + 1;
  while (index < text.length) {
    if (text[index] !== '"')
      throw new DecodeFailure('Expecting property name enclosed in double quotes', index);
    index = skipWhitespace(text, scanString(text, index));
    if (index >= text.length || text[index] !== ':')
      throw new DecodeFailure("Expecting ':' delimiter", index);
    index = skipWhitespace(text, scanNested(text, skipWhitespace(text, index + 1)));
    if (index < text.length && text[index] === '}') return index + 1;
    if (index >= text.length || text[index] !== ',')
      throw new DecodeFailure("Expecting ',' delimiter", index);
    index = skipWhitespace(text, index + 1);
  }
  throw new DecodeFailure('Expecting property name enclosed in double quotes', index);
}

function scanArray(text: string, start: number): number {
  let index = skipWhitespace(text, start);
  if (index < text.length && text[index] === ']') return index + 1;
  while (index < text.length) {
    index = skipWhitespace(text, scanNested(text, index));
    if (index < text.length && text[index] === ']') return index + 1;
    if (index >= text.length || text[index] !== ',')
      throw new DecodeFailure("Expecting ',' delimiter", index);
    index = skipWhitespace(text, index + 1);
  }
  throw new DecodeFailure('Expecting value', index);
}

function formatPosition(text: string, position: number): string {
  // Python counts code points; JavaScript indexes UTF-16 units.
  const before = text.slice(0, position);
  const char = [...before].length;
  const lastNewline = before.lastIndexOf('\n');
  const line = before.split('\n').length;
  const column = [...before.slice(lastNewline + 1)].length + 1;
  return `line ${line} column ${column} (char ${char})`;
}

/**
 * Python's `str(JSONDecodeError)` for `json.loads(text)`, or null when Python would accept the
 * text (NaN and Infinity included).
 */
export function pythonJsonDecodeError(text: string): string | null {
  try {
    let end: number;
    try {
      end = scanValue(text, skipWhitespace(text, 0));
    } catch (error) {
      if (error instanceof NoValue) throw new DecodeFailure('Expecting value', error.position);
      throw error;
    }
    end = skipWhitespace(text, end);
    if (end !== text.length) throw new DecodeFailure('Extra data', end);
    return null;
  } catch (error) {
    if (error instanceof DecodeFailure) return `${error.message}: ${formatPosition(text, error.position)}`;
    if (error instanceof RangeError) return null; // Nesting too deep for this scanner; let JSON.parse decide.
    throw error;
  }
}
