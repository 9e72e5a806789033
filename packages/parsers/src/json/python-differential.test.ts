// Differential test against the real CPython `json` module: thousands of generated JSON texts
// (random values in several layouts, odd number lexemes, escapes and lone surrogates, duplicate
// keys, and broken mutations of all of these) go through one python3 process, and our
// `pyDumps(pyJsonLoads(x))` must give byte for byte what Python's
// `json.dumps(json.loads(x, strict=False), ensure_ascii=False)` gives — or fail exactly when
// Python raises. (`strict=False`: like our reader, it accepts raw control characters inside
// strings, which models do write.)
import { execFile, execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { getParser } from '../index.js';
import { pyDumps, pyJsonLoads, skipJsonWhitespace, transcodedEnd, transcodeJson } from './python-json.js';

const PYTHON = process.env.SHEARS_PYTHON ?? 'python3';
const hasPython = (() => {
  try {
    execFileSync(PYTHON, ['-c', 'import json'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasPython) {
  if (process.env.CI) throw new Error(`${PYTHON} is required for the Python differential test under CI`);
  console.warn(
    `\n*** ${PYTHON} not found: skipping the differential test against CPython's json module ***\n`,
  );
}

const SCRIPT = `
import json, sys
out = []
for text in json.loads(sys.stdin.read()):
    try:
        out.append(json.dumps(json.loads(text, strict=False), ensure_ascii=False))
    except (ValueError, RecursionError):
        out.append(None)
sys.stdout.write(json.dumps(out))
`;

/** Python's answer for every text, in one process; `null` where json.loads raised. */
function python(texts: string[]): Promise<Array<string | null>> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      PYTHON,
      ['-c', SCRIPT],
      { maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`python3 failed: ${stderr || error.message}`));
        else resolve(JSON.parse(stdout) as Array<string | null>);
      },
    );
    // JSON.stringify writes lone surrogates as \\udXXX escapes, which Python decodes back to them.
    child.stdin?.end(JSON.stringify(texts));
  });
}

const layouts: Array<[string, string]> = [
  [', ', ': '],
  [',', ':'],
  [' , ', ' :\n'],
  [',\n  ', ': '],
];

/** Re-lays out compact JSON text with other separators, outside strings only. */
function relayout(text: string, [comma, colon]: [string, string]): string {
  let out = '';
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index] as string;
    if (inString) {
      out += char;
      if (char === '\\') out += text[++index] ?? '';
      else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
      out += char;
    } else out += char === ',' ? comma : char === ':' ? colon : char;
  }
  return out;
}

const numberLexeme = fc
  .tuple(
    fc.constantFrom('', '-'),
    fc.oneof(
      fc.constant('0'),
      fc.stringMatching(/^[1-9][0-9]{0,3}$/),
      fc.stringMatching(/^[1-9][0-9]{14,40}$/),
    ),
    fc.option(fc.stringMatching(/^[0-9]{1,20}$/), { nil: undefined }),
    fc.option(
      fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.stringMatching(/^[0-9]{1,3}$/)),
      { nil: undefined },
    ),
  )
  .map(
    ([sign, whole, fraction, exponent]) =>
      `${sign}${whole}${fraction === undefined ? '' : `.${fraction}`}${exponent ? exponent.join('') : ''}`,
  );

const escapedString = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 3 }),
      fc.constantFrom(
        '\\n',
        '\\t',
        '\\"',
        '\\\\',
        '\\/',
        '\\b',
        '\\f',
        '\\r',
        '\n',
        '\t',
        '\u0001',
        '\u007f',
      ),
      fc.integer({ min: 0, max: 0xffff }).map((code) => `\\u${code.toString(16).padStart(4, '0')}`),
      // Upper-case hex (`\u00E9`, `\u000A`): re-spelt by the transcoder, not copied.
      fc
        .integer({ min: 0, max: 0xffff })
        .map((code) => `\\u${code.toString(16).padStart(4, '0').toUpperCase()}`),
      fc.constantFrom(
        '\\ud83d\\ude00',
        '\\uD83D\\uDE00',
        // Half of a pair escaped, the other half written raw.
        '\\ud83d\ude00',
        '\ud83d\\ude00',
        '\\uD800',
        '\\udfff',
        '\u2028',
        'é',
        '杭州',
        '😀',
      ),
    ),
    { maxLength: 8 },
  )
  .map((parts) => `"${parts.join('').replace(/(?<!\\)"/g, '\\"')}"`);

const duplicateKeys = fc
  .array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'a\\n', '\\u0061'), numberLexeme), {
    minLength: 1,
    maxLength: 6,
  })
  .map((entries) => `{${entries.map(([key, value]) => `"${key}": ${value}`).join(', ')}}`);

const valid = fc.oneof(
  fc
    .tuple(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(...layouts))
    .map(([value, layout]) => relayout(JSON.stringify(value) ?? 'null', layout)),
  numberLexeme,
  numberLexeme.map((lexeme) => `[${lexeme}]`),
  escapedString,
  escapedString.map((text) => `{${text}: ${text}}`),
  duplicateKeys,
  fc.constantFrom('NaN', '-Infinity', 'Infinity', '[NaN, 1e400, -1e400]', ' \n\t{"a" : [ ] } \r\n'),
);

/** Broken variants: truncated, a character inserted or deleted, a stray suffix. */
const mutated = fc
  .tuple(
    valid,
    fc.nat(),
    fc.constantFrom('', ',', '}', ']', '"', '\\', '.', 'e', '-', '0', ' x', "'"),
    fc.nat(3),
  )
  .map(([text, at, insert, kind]) => {
    const position = text.length === 0 ? 0 : at % text.length;
    if (kind === 0) return text.slice(0, position);
    if (kind === 1) return text.slice(0, position) + insert + text.slice(position);
    if (kind === 2) return text.slice(0, position) + text.slice(position + 1);
    return text + insert;
  });

describe.skipIf(!hasPython)("agrees with CPython's json module", () => {
  it('on 6,000 generated valid and broken texts, both decoding paths', { timeout: 120_000 }, async () => {
    const texts = [
      ...fc.sample(valid, { numRuns: 4000, seed: 20261123 }),
      ...fc.sample(mutated, { numRuns: 2000, seed: 1123 }),
    ];
    const expected = await python(texts);
    const mismatches: string[] = [];
    let transcoded = 0;
    texts.forEach((text, index) => {
      // The one-pass transcoder may give up (the full reader then decides), but never differs.
      const padded = `${text} `;
      const out = transcodeJson(padded, skipJsonWhitespace(padded, 0));
      if (out !== undefined && skipJsonWhitespace(padded, transcodedEnd) === padded.length) {
        transcoded += 1;
        if (out !== expected[index])
          mismatches.push(
            `${JSON.stringify(text)} (transcoded): ours ${JSON.stringify(out)}, python ${JSON.stringify(expected[index])}`,
          );
      }
      for (const tree of [false, true]) {
        const ours = pyJsonLoads(text, tree);
        const actual = ours.ok ? pyDumps(ours.value) : null;
        if (actual !== expected[index])
          mismatches.push(
            `${JSON.stringify(text)} (tree=${tree}): ours ${JSON.stringify(actual)}, python ${JSON.stringify(expected[index])}`,
          );
      }
    });
    expect(mismatches.slice(0, 10)).toEqual([]);
    // The generators must exercise both outcomes, or the comparison proves little.
    expect(expected.filter((value) => value === null).length).toBeGreaterThan(500);
    expect(expected.filter((value) => value !== null).length).toBeGreaterThan(4000);
    expect(transcoded).toBeGreaterThan(1500);
  });

  it('through a parser: hermes call arguments equal json.dumps of what the model wrote', async () => {
    const objects = fc.sample(
      fc.tuple(
        fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })),
        fc.constantFrom(...layouts),
      ),
      { numRuns: 1500, seed: 7 },
    );
    const texts = objects.map(([value, layout]) => relayout(JSON.stringify(value), layout));
    const expected = await python(texts);
    const parser = getParser('hermes');
    texts.forEach((text, index) => {
      const result = parser.parse(`<tool_call>\n{"name": "f", "arguments": ${text}}\n</tool_call>`);
      expect(result.toolCalls[0]?.arguments, text).toBe(expected[index]);
    });
  });

  it('through every JSON format: call objects and argument text written any way', async () => {
    const objects = fc.sample(
      fc.tuple(
        fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })),
        fc.constantFrom(...layouts),
        fc.boolean(),
      ),
      { numRuns: 800, seed: 11 },
    );
    const texts = objects.map(([value, layout]) => relayout(JSON.stringify(value), layout));
    const expected = await python(texts);
    objects.forEach(([, layout, reversed], index) => {
      const args = texts[index] as string;
      const call = relayout(
        reversed ? `{"arguments":${args},"name":"f"}` : `{"name":"f","arguments":${args}}`,
        layout,
      );
      const outputs: Array<[string, string]> = [
        ['hermes', `<tool_call>\n${call}\n</tool_call>`],
        ['mistral', `[TOOL_CALLS] [${call}]`],
        ['mistral', `[TOOL_CALLS]f[ARGS]${args}`],
        ['llama3_json', `<|python_tag|>${call.replace('"arguments"', '"parameters"')}`],
        [
          'deepseek_v31',
          `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>${args}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
        ],
        [
          'kimi_k2',
          `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>${args}<|tool_call_end|><|tool_calls_section_end|>`,
        ],
      ];
      for (const [format, output] of outputs) {
        const result = getParser(format).parse(output);
        expect(result.toolCalls[0]?.arguments, `${format}: ${output}`).toBe(expected[index]);
      }
    });
  });
});
