// The subset of Python's `ast.literal_eval` that XML-style formats need when a value is not
// JSON: `True`/`False`/`None`, quoted strings, ints, floats, lists, tuples and dicts. The
// result is what `json.dumps` would then print (tuples become lists, dict keys become strings).
import { PyNumber, type PyValue, pyFloatRepr, pyIntText } from './python-json.js';

class LiteralError extends Error {}
// One shared instance: failing is the common case for plain text, and building a stack trace
// per attempt would dominate the cost.
const LITERAL_FAILURE = new LiteralError('not a literal');

const MAX_DEPTH = 500;

class LiteralReader {
  pos = 0;
  depth = 0;
  constructor(readonly text: string) {}

  ws(): void {
    while (this.pos < this.text.length && /[ \t\n\r\f\v]/.test(this.text[this.pos] as string)) this.pos += 1;
  }

  fail(): never {
    throw LITERAL_FAILURE;
  }

  value(): PyValue {
    this.ws();
    const char = this.text[this.pos];
    if (char === undefined) this.fail();
    if (char === '[') return this.sequence(']');
    if (char === '(') return this.sequence(')');
    if (char === '{') return this.dict();
    if (char === '"' || char === "'") return this.string();
    if (char === '-' || char === '+' || char === '.' || (char >= '0' && char <= '9')) return this.number();
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.text.slice(this.pos, this.pos + 16))?.[0];
    if (word === 'True' || word === 'False' || word === 'None') {
      this.pos += word.length;
      return word === 'True' ? true : word === 'False' ? false : null;
    }
    return this.fail();
  }

  sequence(close: string): PyValue[] {
    if (++this.depth > MAX_DEPTH) this.fail();
    this.pos += 1;
    const items: PyValue[] = [];
    let sawComma = false;
    for (;;) {
      this.ws();
      if (this.text[this.pos] === close) {
        this.pos += 1;
        // `(x)` is just x in Python, but a tuple needs the comma; lists are fine either way.
        this.depth -= 1;
        if (close === ')' && items.length === 1 && !sawComma) return items[0] as PyValue[];
        return items;
      }
      items.push(this.value());
      this.ws();
      if (this.text[this.pos] === ',') {
        this.pos += 1;
        sawComma = true;
      } else if (this.text[this.pos] !== close) this.fail();
    }
  }

  dict(): Map<string, PyValue> {
    if (++this.depth > MAX_DEPTH) this.fail();
    this.pos += 1;
    const entries = new Map<string, PyValue>();
    for (;;) {
      this.ws();
      if (this.text[this.pos] === '}') {
        this.pos += 1;
        this.depth -= 1;
        return entries;
      }
      const key = this.value();
      this.ws();
      if (this.text[this.pos] !== ':') this.fail();
      this.pos += 1;
      const item = this.value();
      entries.set(keyText(key), item);
      this.ws();
      if (this.text[this.pos] === ',') this.pos += 1;
      else if (this.text[this.pos] !== '}') this.fail();
    }
  }

  string(): string {
    const quote = this.text[this.pos] as string;
    const triple = this.text.startsWith(quote.repeat(3), this.pos);
    this.pos += triple ? 3 : 1;
    let out = '';
    for (;;) {
      const char = this.text[this.pos];
      if (char === undefined) this.fail();
      if (char === quote && (!triple || this.text.startsWith(quote.repeat(3), this.pos))) {
        this.pos += triple ? 3 : 1;
        return out;
      }
      if (char === '\n' && !triple) this.fail();
      if (char === '\\') {
        const next = this.text[this.pos + 1];
        if (next === undefined) this.fail();
        this.pos += 2;
        const simple: Record<string, string> = {
          n: '\n',
          t: '\t',
          r: '\r',
          '\\': '\\',
          "'": "'",
          '"': '"',
          a: '\x07',
          b: '\b',
          f: '\f',
          v: '\v',
          '0': '\0',
          '\n': '',
        };
        if (next in simple) out += simple[next];
        else if (next === 'x' || next === 'u' || next === 'U') {
          const size = next === 'x' ? 2 : next === 'u' ? 4 : 8;
          const hex = this.text.slice(this.pos, this.pos + size);
          if (!new RegExp(`^[0-9a-fA-F]{${size}}$`).test(hex)) this.fail();
          const codePoint = Number.parseInt(hex, 16);
          if (codePoint > 0x10ffff) this.fail();
          out += String.fromCodePoint(codePoint);
          this.pos += size;
        } else out += `\\${next}`; // Python keeps unknown escapes as written
        continue;
      }
      out += char;
      this.pos += 1;
    }
  }

  number(): PyNumber {
    const rest = this.text.slice(this.pos);
    const sign = /^[+-]\s*/.exec(rest)?.[0] ?? '';
    const body = rest.slice(sign.length);
    const negative = sign.startsWith('-');
    const radix = /^0([xXoObB])([0-9a-fA-F_]+)/.exec(body);
    if (radix) {
      const digits = (radix[2] as string).replace(/_/g, '');
      const base = { x: 16, o: 8, b: 2 }[(radix[1] as string).toLowerCase() as 'x' | 'o' | 'b'];
      let result = 0n;
      for (const digit of digits) {
        const value = Number.parseInt(digit, base);
        if (Number.isNaN(value)) this.fail();
        result = result * BigInt(base) + BigInt(value);
      }
      this.pos += sign.length + radix[0].length;
      return new PyNumber(pyIntText(`${negative ? '-' : ''}${result.toString()}`));
    }
    const float = /^(?:\d(?:_?\d)*)?(?:\.(?:\d(?:_?\d)*)?)?(?:[eE][+-]?\d(?:_?\d)*)?/.exec(body)?.[0] ?? '';
    if (float === '' || float === '.' || !/\d/.test(float)) this.fail();
    if (/^[eE]/.test(float)) this.fail();
    this.pos += sign.length + float.length;
    if (/^[jJ]/.test(this.text.slice(this.pos))) this.fail(); // complex numbers are not JSON
    const clean = float.replace(/_/g, '');
    if (/[.eE]/.test(clean)) return new PyNumber(pyFloatRepr(Number(`${negative ? '-' : ''}${clean}`)));
    if (/^0\d/.test(clean) && /[1-9]/.test(clean)) this.fail(); // `012` is a syntax error
    return new PyNumber(pyIntText(`${negative ? '-' : ''}${clean}`));
  }
}

/** How `json.dumps` turns a dict key into a string. */
function keyText(key: PyValue): string {
  if (typeof key === 'string') return key;
  if (key === null) return 'null';
  if (key === true) return 'true';
  if (key === false) return 'false';
  if (key instanceof PyNumber) return key.text;
  throw new LiteralError('unhashable key');
}

/** `ast.literal_eval(text)` limited to JSON-representable values; undefined when it would fail. */
export function pyLiteralEval(text: string): PyValue | undefined {
  if (!/^[\s]*[-+.\d[({'"TFN]/.test(text)) return undefined;
  try {
    const reader = new LiteralReader(text);
    const value = reader.value();
    reader.ws();
    return reader.pos === text.length ? value : undefined;
  } catch (error) {
    if (error instanceof LiteralError || error instanceof RangeError) return undefined;
    throw error;
  }
}
