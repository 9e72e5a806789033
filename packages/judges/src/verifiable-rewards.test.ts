import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import { afterAll, describe, expect, it } from 'vitest';
import { composeRewards } from './compose-rewards.js';
import { processReward } from './process-rewards.js';
import {
  exactMatch,
  extractFinalAnswer,
  jsonSchemaReward,
  numericMatch,
  parseNumericAnswer,
  parseTestSummary,
  regexMatch,
  testCommandReward,
} from './verifiable-rewards.js';

describe('exact and regex match', () => {
  it('normalises whitespace and case unless told not to', () => {
    expect(exactMatch('  Paris \n', 'paris')).toBe(1);
    expect(exactMatch('Paris', 'paris', { caseSensitive: true })).toBe(0);
    expect(exactMatch('New   York', 'new york')).toBe(1);
    expect(exactMatch('Paris.', 'Paris')).toBe(0);
  });

  it('regex match, and a clear error for a bad pattern', () => {
    expect(regexMatch('The answer is 42', /answer is \d+/)).toBe(1);
    expect(regexMatch('nothing', '\\d+')).toBe(0);
    expect(() => regexMatch('x', '(unclosed')).toThrow(/Invalid regular expression "\(unclosed"/);
  });
});

describe('numeric and maths answers', () => {
  it.each([
    ['42', 42],
    ['1,234,567', 1234567],
    ['-3.5', -3.5],
    ['50%', 0.5],
    ['\\frac{1}{2}', 0.5],
    ['-\\dfrac{3}{4}', -0.75],
    ['\\frac12', 0.5],
    ['3/4', 0.75],
    ['$12$', 12],
    ['\\$12', 12],
    ['2.5e3', 2500],
    ['.5', 0.5],
    ['7.', 7],
    ['\\text{42}', 42],
  ])('parses %s', (text, value) => {
    expect(parseNumericAnswer(text)).toBeCloseTo(value, 12);
  });

  it.each(['1,5', 'x+1', '\\sqrt{2}', '', 'twelve', '1/0'])('refuses %j', (text) => {
    expect(parseNumericAnswer(text)).toBeNull();
  });

  it('extracts the final answer from free text', () => {
    expect(extractFinalAnswer('so we get \\boxed{\\frac{1}{2}} in the end')).toBe('\\frac{1}{2}');
    expect(extractFinalAnswer('First 3, then 4. The answer is 7.')).toBe('7');
    expect(extractFinalAnswer('values 3 and then 12')).toBe('12');
  });

  it('matches equivalent forms within tolerance', () => {
    expect(numericMatch('The answer is \\boxed{0.5}', '\\frac{1}{2}')).toBe(1);
    expect(numericMatch('Answer: 1,000', 1000)).toBe(1);
    expect(numericMatch('Answer: 3.14159', 3.14, { absoluteTolerance: 0.01 })).toBe(1);
    expect(numericMatch('Answer: 3.2', 3.14, { absoluteTolerance: 0.01 })).toBe(0);
    expect(numericMatch('I do not know', 3)).toBe(0);
  });
});

describe('JSON-schema validity', () => {
  const schema = {
    type: 'object',
    required: ['name', 'tags'],
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 1 },
      age: { type: 'integer', minimum: 0 },
      tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
    },
  };

  it('accepts a valid object, also inside a code fence', () => {
    expect(jsonSchemaReward('{"name": "a", "tags": ["x"]}', schema)).toEqual({ score: 1, errors: [] });
    expect(jsonSchemaReward('Sure:\n```json\n{"name": "a", "age": 3, "tags": []}\n```', schema).score).toBe(
      1,
    );
  });

  it('names every violation with its path', () => {
    const result = jsonSchemaReward('{"name": "", "age": -1.5, "tags": ["x", "x"], "extra": true}', schema);
    expect(result.score).toBe(0);
    expect(result.errors).toEqual(
      expect.arrayContaining([
        '$.name: shorter than 1 characters',
        '$.age: expected integer, got number',
        '$.tags: items are not unique',
        '$: unexpected property "extra"',
      ]),
    );
  });

  it('reads the whole draft 2020-12, not a subset: $defs and $ref, prefixItems, dependentRequired', () => {
    const schema = {
      $defs: { tag: { type: 'string', pattern: '^[a-z]+$' } },
      type: 'object',
      properties: {
        tags: { type: 'array', items: { $ref: '#/$defs/tag' } },
        pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false },
      },
      dependentRequired: { pair: ['tags'] },
    };
    expect(jsonSchemaReward('{"tags": ["a", "b"], "pair": ["x", 1]}', schema)).toEqual({
      score: 1,
      errors: [],
    });
    const result = jsonSchemaReward('{"pair": ["x", "y", 3]}', schema);
    expect(result.score).toBe(0);
    expect(result.errors).toEqual(
      expect.arrayContaining([
        '$.pair[1]: expected number, got string',
        '$.pair: must NOT have more than 2 items',
      ]),
    );
    expect(result.errors.some((error) => error.startsWith('$: ') && error.includes('tags'))).toBe(true);
    expect(jsonSchemaReward('{"tags": ["A"]}', schema).errors).toEqual([
      '$.tags[0]: does not match /^[a-z]+$/',
    ]);
  });

  it('a keyword it does not know is an error naming it, not a constraint silently dropped', () => {
    const result = jsonSchemaReward('{"name": "a"}', { type: 'object', requird: ['name'] });
    expect(result.score).toBe(0);
    expect(result.errors).toEqual([
      expect.stringMatching(/^\$: invalid schema: .*unknown keyword: "requird"/),
    ]);
    // A required property without a schema of its own is an ordinary schema.
    expect(jsonSchemaReward('{"a": 1}', { type: 'object', required: ['b'] }).errors).toEqual([
      '$: missing required property "b"',
    ]);
    // format is an annotation, as draft 2020-12 has it by default.
    expect(jsonSchemaReward('"not an email"', { type: 'string', format: 'email' })).toEqual({
      score: 1,
      errors: [],
    });
  });

  it('invalid JSON scores 0 with the parse error', () => {
    const result = jsonSchemaReward('{"name": ', schema);
    expect(result.score).toBe(0);
    expect(result.errors[0]).toMatch(/Invalid JSON in response/);
  });
});

describe('test command reward in a sandbox', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  /** A real process-backed sandbox over a temp directory (enough for running a test command). */
  async function processSandbox(): Promise<SandboxV1> {
    const workdir = await mkdtemp(join(tmpdir(), 'shears-judges-'));
    dirs.push(workdir);
    return {
      specificationVersion: 'v1',
      id: workdir,
      backend: 'process',
      workdir,
      tempDir: workdir,
      isolated: false,
      exec: (command, options = {}) =>
        new Promise((resolve) => {
          const started = Date.now();
          execFile(
            'bash',
            ['-c', command],
            { cwd: options.cwd ?? workdir, timeout: options.timeoutMs },
            (error, stdout, stderr) => {
              const code =
                error && typeof (error as { code?: unknown }).code === 'number'
                  ? (error as { code: number }).code
                  : error
                    ? 1
                    : 0;
              resolve({
                exitCode: code,
                output: stdout + stderr,
                stdout,
                stderr,
                timedOut: Boolean(error?.killed),
                durationMs: Date.now() - started,
              });
            },
          );
        }),
      readFile: async (path) => new Uint8Array(await readFile(join(workdir, path))),
      writeFile: async (path, data) => writeFile(join(workdir, path), data),
      dispose: async () => {},
    };
  }

  it('scores the pass fraction of a real node test run', async () => {
    const sandbox = await processSandbox();
    await sandbox.writeFile(
      'sum.test.mjs',
      `import test from 'node:test'; import assert from 'node:assert';
test('a', () => assert.equal(1 + 1, 2));
test('b', () => assert.equal(2 + 2, 4));
test('c', () => assert.equal(2 + 2, 5));
test('d', () => assert.ok(true));`,
    );
    const result = await testCommandReward(sandbox, 'node --test --test-reporter=tap sum.test.mjs');
    expect(result).toMatchObject({ passed: 3, failed: 1, score: 0.75, parsedAs: 'node-test' });
    expect(result.exitCode).not.toBe(0);
  });

  it('falls back to the exit code when no summary is printed', async () => {
    const sandbox = await processSandbox();
    expect((await testCommandReward(sandbox, 'true')).score).toBe(1);
    expect(await testCommandReward(sandbox, 'exit 3')).toMatchObject({
      score: 0,
      exitCode: 3,
      parsedAs: 'exit-code',
    });
  });

  it('reads pytest summaries', () => {
    expect(parseTestSummary('..F.\n===== 3 passed, 1 failed in 0.12s =====')).toEqual({
      passed: 3,
      failed: 1,
      parsedAs: 'pytest',
    });
    expect(parseTestSummary('===== 2 passed, 1 error in 0.12s =====')).toEqual({
      passed: 2,
      failed: 1,
      parsedAs: 'pytest',
    });
  });
});

describe('process rewards and composition', () => {
  const messages = [
    { role: 'user', content: 'do it' },
    {
      role: 'assistant',
      content: '',
      reasoning_content: 'I should list the files first to see what is there before editing.',
      tool_calls: [],
    },
    { role: 'tool', tool_call_id: '1', content: '{"output": "a.txt", "exit_code": 0, "error": null}' },
    {
      role: 'tool',
      tool_call_id: '2',
      content: '{"error": "Unknown tool \'x\'. Available tools: [\'terminal\']"}',
    },
    { role: 'assistant', content: 'ok', reasoning_content: 'short' },
  ];

  it('adds a bonus per successful tool call and substantive reasoning step', () => {
    const result = processReward(messages, 1, { toolCallBonus: 0.05, reasoningBonus: 0.1 });
    expect(result.components.successful_tool_calls).toBe(1);
    expect(result.components.reasoning_steps).toBe(1);
    expect(result.score).toBeCloseTo(1.15, 12);
  });

  it('caps the shaping bonus', () => {
    const many = Array.from({ length: 50 }, (_, index) => ({
      role: 'tool',
      tool_call_id: String(index),
      content: 'fine',
    }));
    expect(processReward(many, 0, { toolCallBonus: 0.05, maxBonus: 0.2 }).score).toBeCloseTo(0.2, 12);
  });

  it('composes weighted rewards and logs zero-weight metrics', async () => {
    const reward = composeRewards<string>([
      { name: 'correct', weight: 1, fn: (answer) => exactMatch(answer, '42') },
      { name: 'format', weight: 0.2, fn: (answer) => regexMatch(answer, /^\d+$/) },
      { name: 'length', weight: 0, fn: (answer) => answer.length },
    ]);
    expect(await reward('42')).toEqual({ score: 1.2, components: { correct: 1, format: 1, length: 2 } });
    expect(await reward('forty-two')).toEqual({ score: 0, components: { correct: 0, format: 0, length: 9 } });
    expect(() =>
      composeRewards([
        { name: 'a', weight: 1, fn: () => 1 },
        { name: 'a', weight: 1, fn: () => 1 },
      ]),
    ).toThrow('listed twice');
    const broken = composeRewards([{ name: 'nan', weight: 1, fn: () => Number.NaN }]);
    await expect(broken(undefined)).rejects.toThrow('Reward function "nan" returned NaN');
  });
});
