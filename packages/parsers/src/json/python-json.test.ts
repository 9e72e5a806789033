// The argument text must equal Python's `json.dumps(json.loads(x), ensure_ascii=False)`.
// Expected values below follow CPython's documented rules: ints are exact, floats print their
// shortest repr (positional for exponents in [-4, 16), else `e+XX`), `, `/`: ` separators,
// non-ASCII kept, control characters as `\u00XX`, last duplicate key wins in first position.
import { describe, expect, it } from 'vitest';
import {
  JsonReader,
  pyDumps,
  pyFloatRepr,
  pyJsonLoads,
  transcodedEnd,
  transcodeJson,
} from './python-json.js';
import { pyLiteralEval } from './python-literal.js';

const TABLE: Array<[string, string]> = [
  ['1.0', '1.0'],
  ['1e5', '100000.0'],
  ['1E5', '100000.0'],
  ['-0', '0'],
  ['-0.0', '-0.0'],
  ['0.1', '0.1'],
  ['1e16', '1e+16'],
  ['1e15', '1000000000000000.0'],
  ['123456789012345678901234567890', '123456789012345678901234567890'],
  ['0.0001', '0.0001'],
  ['0.00001', '1e-05'],
  ['1.5e300', '1.5e+300'],
  ['2.5e-7', '2.5e-07'],
  ['100.0', '100.0'],
  ['1e400', 'Infinity'],
  ['-1e400', '-Infinity'],
  ['1.7976931348623157e308', '1.7976931348623157e+308'],
  ['5e-324', '5e-324'],
  ['0.30000000000000004', '0.30000000000000004'],
  ['12345678901234567.0', '1.2345678901234568e+16'],
  ['9007199254740993', '9007199254740993'],
  ['123e-2', '1.23'],
  ['-12.50', '-12.5'],
  ['1E+2', '100.0'],
  ['0e0', '0.0'],
  ['NaN', 'NaN'],
  ['-Infinity', '-Infinity'],
  ['"\\u00e9\\ud83d\\ude00"', '"é😀"'],
  ['"a\\u0001b\\u001fc\\u007f"', '"a\\u0001b\\u001fc\u007f"'],
  ['"\\ud800"', '"\ud800"'],
  ['"\\/"', '"/"'],
  ['"\\b\\f\\n\\r\\t\\"\\\\"', '"\\b\\f\\n\\r\\t\\"\\\\"'],
  ['{"b": 1, "a": 2, "b": 3}', '{"b": 3, "a": 2}'],
  ['[1,2,{"x":[]}]', '[1, 2, {"x": []}]'],
  ['{"city":"杭州","n":null,"t":true,"f":false}', '{"city": "杭州", "n": null, "t": true, "f": false}'],
  ['  {"a" :\n 1 }  ', '{"a": 1}'],
];

describe('pyDumps(pyJsonLoads(x)) matches Python json.dumps(json.loads(x), ensure_ascii=False)', () => {
  for (const [input, expected] of TABLE) {
    it(JSON.stringify(input), () => {
      const decoded = pyJsonLoads(input);
      if (!decoded.ok) throw new Error(`did not parse: ${input}`);
      expect(pyDumps(decoded.value)).toBe(expected);
    });
  }

  it('keeps raw control characters inside strings (lenient) and escapes them on output', () => {
    const decoded = pyJsonLoads('{"code": "line1\nline2\ttab"}');
    expect(decoded.ok && pyDumps(decoded.value)).toBe('{"code": "line1\\nline2\\ttab"}');
  });

  it('rejects what Python rejects', () => {
    for (const bad of [
      '',
      '{',
      '{"a" 1}',
      '[1,]',
      '01',
      '1.',
      '{"a": 1,}',
      '"\\x41"',
      "{'a': 1}",
      'tru',
      '{"a": 1} x',
      '"\\u12"',
    ]) {
      expect(pyJsonLoads(bad).ok, bad).toBe(false);
    }
  });
});

describe('pyFloatRepr', () => {
  it('prints doubles like Python repr', () => {
    expect(pyFloatRepr(3.5)).toBe('3.5');
    expect(pyFloatRepr(1e22)).toBe('1e+22');
    expect(pyFloatRepr(-2e-5)).toBe('-2e-05');
    expect(pyFloatRepr(123456789.125)).toBe('123456789.125');
    expect(pyFloatRepr(1 / 3)).toBe('0.3333333333333333');
  });
});

describe('JsonReader', () => {
  it('tells a truncated value from a broken one', () => {
    const reader = new JsonReader();
    expect(reader.read('{"a": [1, 2', 0)).toBeUndefined();
    expect(reader.failure).toBe('incomplete');
    expect(reader.read('{"a": [1, 2}', 0)).toBeUndefined();
    expect(reader.failure).toBe('invalid');
    expect(reader.read('{"a": "x}"} tail', 0)).toBeDefined();
    expect(reader.pos).toBe(11);
  });

  it('does not overflow the stack on deep nesting', () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    expect(pyJsonLoads(deep).ok).toBe(false);
  });
});

describe('pyLiteralEval (ast.literal_eval subset)', () => {
  const cases: Array<[string, string | undefined]> = [
    ['True', 'true'],
    ['None', 'null'],
    ["{'a': 1, 'b': (1, 2), 3: 'x'}", '{"a": 1, "b": [1, 2], "3": "x"}'],
    ['[\'x\', "y", -1.5, 1_000]', '["x", "y", -1.5, 1000]'],
    ['0x1F', '31'],
    ["'it\\'s'", '"it\'s"'],
    ['1e3', '1000.0'],
    ['(1)', '1'],
    ['hello', undefined],
    ['1 + 2', undefined],
    ['{1, 2}', undefined],
    ['3j', undefined],
  ];
  for (const [input, expected] of cases) {
    it(input, () => {
      const value = pyLiteralEval(input);
      expect(value === undefined ? undefined : pyDumps(value)).toBe(expected);
    });
  }
});

describe('canonical fast path', () => {
  it('agrees with the full decoder on any JSON text, canonical or not', async () => {
    const fc = (await import('fast-check')).default;
    const { canonicalJsonEnd } = await import('./python-json.js');
    const layouts = fc.constantFrom<[string, string]>([', ', ': '], [',', ':'], [', ', ':'], [',\n  ', ': ']);
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), layouts, (value, [comma, colon]) => {
        const text = JSON.stringify(value, null, 0)
          .replace(/,(?=(?:[^"\\]|\\.|"(?:[^"\\]|\\.)*")*$)/g, comma)
          .replace(/:(?=(?:[^"\\]|\\.|"(?:[^"\\]|\\.)*")*$)/g, colon);
        const full = pyJsonLoads(text, true);
        const fast = pyJsonLoads(text);
        expect(fast.ok).toBe(full.ok);
        if (!full.ok || !fast.ok) return;
        const canonical = pyDumps(full.value);
        expect(pyDumps(fast.value)).toBe(canonical);
        if (canonical.startsWith('{') || canonical.startsWith('['))
          expect(canonicalJsonEnd(`${canonical} `, 0)).toBe(canonical.length);
      }),
      { numRuns: 500 },
    );
  });

  it("accepts a float lexeme exactly when it is Python's repr of that float", async () => {
    const fc = (await import('fast-check')).default;
    const { canonicalJsonEnd } = await import('./python-json.js');
    const digits = (max: number) => fc.stringMatching(new RegExp(`^[0-9]{1,${max}}$`));
    const lexeme = fc
      .tuple(fc.boolean(), fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9][0-9]{0,17}$/)), digits(19))
      .map(([negative, whole, fraction]) => `${negative ? '-' : ''}${whole}.${fraction}`);
    const check = (text: string) =>
      expect(canonicalJsonEnd(`${text} `, 0) > 0, text).toBe(pyFloatRepr(Number(text)) === text);
    for (const text of ['0.0', '-0.0', '1.0', '0.0001', '0.00001', '0.1', '0.30000000000000004', '1e5'])
      check(text);
    for (const text of [
      '123456789012345.0',
      '1234567890123456.0',
      '12345678901234567.0',
      '9007199254740993.0',
    ])
      check(text);
    fc.assert(
      fc.property(lexeme, (text) => {
        check(text);
      }),
      { numRuns: 2000 },
    );
  });

  it('sends objects with duplicate keys to the full decoder, at any depth and key count', async () => {
    const { canonicalJsonEnd } = await import('./python-json.js');
    const many = (count: number, key: (index: number) => string) =>
      `{${Array.from({ length: count }, (_, index) => `"${key(index)}": ${index}`).join(', ')}}`;
    const cases: [string, boolean][] = [
      ['{"a": {"b": 1}, "b": 2}', true],
      ['[{"a": 1}, {"a": 1}]', true],
      ['{"ab": 1, "a": 2, "b": 3}', true],
      ['{"a": {"b": 1}, "a": 2}', false],
      ['{"a": {"b": 1, "b": 2}}', false],
      ['{"x\\n": 1, "x\\n": 2}', false],
      [many(40, (index) => `k${index}`), true],
      [many(40, (index) => `k${index % 39}`), false],
    ];
    for (const [text, canonical] of cases) expect(canonicalJsonEnd(`${text} `, 0) > 0, text).toBe(canonical);
  });

  it('refuses non-canonical spellings so they are re-serialised', async () => {
    const { canonicalJsonEnd } = await import('./python-json.js');
    for (const text of [
      '{"a":1}',
      '{"a": 1.50}',
      '{"a": -0}',
      '{"a": "\\u00e9"}',
      '{"a": "\\/"}',
      '{"a": 1, "a": 2}',
      '{"a": 1E5}',
      '[1,2]',
      '{"a": "x\ny"}',
    ]) {
      expect(canonicalJsonEnd(`${text} `, 0), text).toBe(-1);
    }
    const sample = '{"a": [1, 2.5, "\\u001f\\n"], "b": {}}';
    expect(canonicalJsonEnd(`${sample} tail`, 0)).toBe(sample.length);
  });
});

// What CPython prints for json.dumps(json.loads(text), ensure_ascii=False), checked with python3.
const TRANSCODED: Array<[string, string]> = [
  ['{"a":1,"b":[1,2,{"c":null}]}', '{"a": 1, "b": [1, 2, {"c": null}]}'],
  ['{\n  "a" : "x",\n\t"b":\r\n [ ]\n}', '{"a": "x", "b": []}'],
  ['[ 1 ,2,\n3 ]', '[1, 2, 3]'],
  ['{ }', '{}'],
  ['{"path":"docs\\/guide\\/\\u00e9t\\u00e9.md","n":0}', '{"path": "docs/guide/été.md", "n": 0}'],
  ['{"k": "tab\\u0009 and \\u001f and \\u000b"}', '{"k": "tab\\t and \\u001f and \\u000b"}'],
  ['{"emoji":"\\ud83d\\ude00","raw":"😀","cjk":"核心"}', '{"emoji": "😀", "raw": "😀", "cjk": "核心"}'],
  ['{"deep":[[[[{"x":[{"y":{}}]}]]]]}', '{"deep": [[[[{"x": [{"y": {}}]}]]]]}'],
  [
    '{"s":"quote \\" backslash \\\\ slash / brace }, bracket ] colon : comma ,"}',
    '{"s": "quote \\" backslash \\\\ slash / brace }, bracket ] colon : comma ,"}',
  ],
  ['{"f":1.5,"g":true,"h":false,"i":123456789012}', '{"f": 1.5, "g": true, "h": false, "i": 123456789012}'],
  ['{"a": 1,  "b": 2}', '{"a": 1, "b": 2}'],
  ['{"a":  1, "b" :2}', '{"a": 1, "b": 2}'],
];

describe('canonical call object', () => {
  it('reads a trailing "id" itself, and leaves any other id to the transcoder, with the same call', async () => {
    const { canonicalCallObject, transcodeCallObject } = await import('./python-json.js');
    const args = '{"path": "src/a.py", "limit": 3}';
    const plain = `{"name": "read_file", "arguments": ${args}, "id": "aB3dE6gH9"}`;
    expect(canonicalCallObject(plain, 0)).toEqual({
      name: 'read_file',
      argumentsText: args,
      id: 'aB3dE6gH9',
      end: plain.length,
    });
    expect(transcodeCallObject(plain, 0)).toEqual(canonicalCallObject(plain, 0));
    // An escaped id, another key after it, or no space after the colon: not this fast path's.
    for (const text of [
      `{"name": "read_file", "arguments": ${args}, "id": "a\\u0042c"}`,
      `{"name": "read_file", "arguments": ${args}, "id": "abc", "type": "function"}`,
      `{"name": "read_file", "arguments": ${args}, "id":"abc"}`,
    ]) {
      expect(canonicalCallObject(text, 0), text).toBeUndefined();
      expect(transcodeCallObject(text, 0)?.name, text).toBe('read_file');
    }
  });
});

describe('one-pass transcoder (json.dumps of json.loads without a tree)', () => {
  for (const [input, expected] of TRANSCODED) {
    it(JSON.stringify(input), () => {
      // After text that is not part of the value, as in a call: the end must be the value's end.
      const text = `${input}[TOOL_CALLS]`;
      expect(transcodeJson(text, 0)).toBe(expected);
      expect(transcodedEnd).toBe(input.length);
      const decoded = pyJsonLoads(input);
      expect(decoded.ok && pyDumps(decoded.value)).toBe(expected);
    });
  }
  it('gives up (the full reader decides) on what it cannot print exactly or may still grow', () => {
    for (const input of [
      '-0',
      '[-0, 1]',
      '{"a": 1, "a": 2}',
      '{"\\u0061": 1}',
      '[1.50]',
      '{"a": "\\ud800"}',
      '{"a": "abc',
      '[1, 2',
      '[1, 2,]',
      '{"a" 1}',
    ])
      expect(transcodeJson(input, 0), input).toBeUndefined();
  });
});
