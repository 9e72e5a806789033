import { describe, expect, it } from 'vitest';
import { coerceToolArguments } from './coerce-tool-args.js';
import { pythonJsonDumps, pythonListRepr } from './python-format.js';

describe('pythonJsonDumps', () => {
  it("writes what Python's json.dumps writes", () => {
    expect(pythonJsonDumps({ error: 'café "x"\n', list: [1, true, null] })).toBe(
      '{"error": "caf\\u00e9 \\"x\\"\\n", "list": [1, true, null]}',
    );
  });
});

describe('pythonListRepr', () => {
  it("writes Python's repr of a list of str", () => {
    expect(pythonListRepr(['a', "it's", 'b\\c'])).toBe(`['a', "it's", 'b\\\\c']`);
  });
});

describe('coerceToolArguments', () => {
  const schema = {
    type: 'object',
    properties: {
      count: { type: 'integer' },
      ratio: { type: 'number' },
      flag: { type: 'boolean' },
      items: { type: 'array' },
      maybe: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
      name: { type: 'string' },
    },
  };
  it('converts strings to their schema type when it cleanly can', () => {
    expect(
      coerceToolArguments(
        { count: '3', ratio: '0.5', flag: 'TRUE', items: '[1,2]', maybe: 'null', name: '7' },
        schema,
      ),
    ).toEqual({
      count: 3,
      ratio: 0.5,
      flag: true,
      items: [1, 2],
      maybe: null,
      name: '7',
    });
  });
  it('leaves values it cannot convert for validation to reject', () => {
    expect(
      coerceToolArguments({ count: '2.5', ratio: 'inf', flag: 'yes', items: '{"a":1}' }, schema),
    ).toEqual({
      count: '2.5',
      ratio: 'inf',
      flag: 'yes',
      items: '{"a":1}',
    });
  });
});
