import { describe, expect, it } from 'vitest';
import { pythonJsonDecodeError } from './python-json-error.js';

describe('pythonJsonDecodeError', () => {
  it.each([
    ['', 'Expecting value: line 1 column 1 (char 0)'],
    ['   ', 'Expecting value: line 1 column 4 (char 3)'],
    ['{"a": ', 'Expecting value: line 1 column 7 (char 6)'],
    ['{a: 1}', 'Expecting property name enclosed in double quotes: line 1 column 2 (char 1)'],
    ['{', 'Expecting property name enclosed in double quotes: line 1 column 2 (char 1)'],
    ['{"a":1,}', 'Expecting property name enclosed in double quotes: line 1 column 8 (char 7)'],
    ['{"a" 1}', "Expecting ':' delimiter: line 1 column 6 (char 5)"],
    ['{"a"', "Expecting ':' delimiter: line 1 column 5 (char 4)"],
    ['{"a": 1 "b": 2}', "Expecting ',' delimiter: line 1 column 9 (char 8)"],
    ['{"a": 1', "Expecting ',' delimiter: line 1 column 8 (char 7)"],
    ['[1 2]', "Expecting ',' delimiter: line 1 column 4 (char 3)"],
    ['[1,]', 'Expecting value: line 1 column 4 (char 3)'],
    ['[', 'Expecting value: line 1 column 2 (char 1)'],
    ['"abc', 'Unterminated string starting at: line 1 column 1 (char 0)'],
    ['{"a": "x\ny"}', 'Invalid control character at: line 1 column 9 (char 8)'],
    ['{"a": "\\q"}', 'Invalid \\escape: line 1 column 8 (char 7)'],
    ['"\\u12G4"', 'Invalid \\uXXXX escape: line 1 column 3 (char 2)'],
    ['{"a": 1}}', 'Extra data: line 1 column 9 (char 8)'],
    ['1.', 'Extra data: line 1 column 2 (char 1)'],
    ['{"a": tru}', 'Expecting value: line 1 column 7 (char 6)'],
    ['{\n  "a": 1,\n  "b" 2\n}', "Expecting ':' delimiter: line 3 column 7 (char 18)"],
    ['{"é😀": x}', 'Expecting value: line 1 column 8 (char 7)'],
  ])('%j → %s', (text, message) => {
    expect(pythonJsonDecodeError(text)).toBe(message);
  });

  it('accepts what Python accepts', () => {
    for (const text of [
      '{}',
      '[]',
      ' {"a": [1, 2.5e3, -0, null, true, false, "\\u00e9"]} ',
      'NaN',
      '[-Infinity, Infinity]',
      '1E+2',
    ]) {
      expect(pythonJsonDecodeError(text)).toBeNull();
    }
  });
});
