// Verifiable rewards: exact match, normalised numeric / maths answers, regular expressions,
// JSON-schema validity, and a test command run in the rollout's own sandbox (pass fraction).
import { InvalidArgumentError, type SandboxV1, safeParseJson } from '@shears/core';
import { type JsonSchema, validateJsonSchema } from './json-schema.js';

export function exactMatch(
  response: string,
  expected: string,
  options: { caseSensitive?: boolean; trim?: boolean } = {},
): number {
  const normalise = (text: string) => {
    let value = options.trim === false ? text : text.trim().replace(/\s+/g, ' ');
    if (!options.caseSensitive) value = value.toLowerCase();
    return value;
  };
  return normalise(response) === normalise(expected) ? 1 : 0;
}

/** The content of the last `\boxed{...}` (balanced braces), if any. */
export function lastBoxed(text: string): string | null {
  const start = text.lastIndexOf('\\boxed');
  if (start < 0) return null;
  const open = text.indexOf('{', start);
  if (open < 0) return null;
  let depth = 0;
  for (let index = open; index < text.length; index++) {
    if (text[index] === '{') depth++;
    else if (text[index] === '}' && --depth === 0) return text.slice(open + 1, index);
  }
  return null;
}

/**
 * The final answer of a free-text response: the last \boxed{}, else the text after the last
 * "answer is"/"Answer:", else the last number in the text.
 */
export function extractFinalAnswer(text: string): string | null {
  const boxed = lastBoxed(text);
  if (boxed !== null) return boxed.trim();
  const marked = /(?:final answer|answer)\s*(?:is|:)\s*([^\n]+)/gi;
  let last: string | null = null;
  for (let match = marked.exec(text); match; match = marked.exec(text)) last = match[1]!;
  if (last !== null) return last.trim().replace(/[.。]+$/, '');
  const numbers = text.match(/-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?/gi);
  return numbers ? numbers[numbers.length - 1]! : null;
}

/** Parses a maths answer to a number: 1,234.5 / 50% / $3 / 1/2 / \frac{1}{2} / -\dfrac{3}{4} / 2.5e3 / \sqrt{} is not handled (null). */
export function parseNumericAnswer(raw: string): number | null {
  let text = raw.trim();
  text = text.replace(/^\$+|\$+$/g, '').trim(); // math-mode dollars
  text = text.replace(/\\(?:text|mathrm)\{([^}]*)\}/g, '$1');
  text = text.replace(/\\[,!;: ]/g, '').replace(/\\left|\\right/g, '');
  text = text.replace(/[.。]+$/, '').trim();
  let scale = 1;
  if (/(%|\\%)$/.test(text)) {
    scale = 0.01;
    text = text.replace(/\\?%$/, '').trim();
  }
  text = text.replace(/^(?:\\\$|\$|USD|€|£)\s*/i, '').trim();
  const fraction =
    /^(-?)\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}$/.exec(text) ?? /^(-?)\\[dt]?frac(\d)(\d)$/.exec(text);
  if (fraction) {
    const numerator = parseNumericAnswer(fraction[2]!);
    const denominator = parseNumericAnswer(fraction[3]!);
    if (numerator === null || denominator === null || denominator === 0) return null;
    return (fraction[1] === '-' ? -1 : 1) * (numerator / denominator) * scale;
  }
  const slash = /^(-?[\d.,]+)\s*\/\s*(-?[\d.,]+)$/.exec(text);
  if (slash) {
    const numerator = parseNumericAnswer(slash[1]!);
    const denominator = parseNumericAnswer(slash[2]!);
    if (numerator === null || denominator === null || denominator === 0) return null;
    return (numerator / denominator) * scale;
  }
  // Thousands separators only in their proper places (1,234,567), so "1,5" is not read as 15.
  if (/^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(text)) text = text.replace(/,/g, '');
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(text)) return null;
  return Number(text) * scale;
}

/**
 * 1 when the response's final answer equals the expected number within tolerance
 * (relative 1e-6 by default, or absolute), else 0.
 */
export function numericMatch(
  response: string,
  expected: string | number,
  options: { relativeTolerance?: number; absoluteTolerance?: number; extract?: boolean } = {},
): number {
  const answer = options.extract === false ? response : extractFinalAnswer(response);
  if (answer === null) return 0;
  const got = parseNumericAnswer(answer);
  const want = typeof expected === 'number' ? expected : parseNumericAnswer(expected);
  if (got === null || want === null) return 0;
  const absolute = options.absoluteTolerance ?? 0;
  const relative = options.relativeTolerance ?? 1e-6;
  return Math.abs(got - want) <= Math.max(absolute, relative * Math.max(Math.abs(want), Math.abs(got)))
    ? 1
    : 0;
}

export function regexMatch(response: string, pattern: RegExp | string, flags?: string): number {
  let regex: RegExp;
  try {
    regex = typeof pattern === 'string' ? new RegExp(pattern, flags) : pattern;
  } catch (cause) {
    throw new InvalidArgumentError({
      argument: 'pattern',
      value: pattern,
      message: `Invalid regular expression ${JSON.stringify(pattern)}: ${(cause as Error).message}`,
      cause,
    });
  }
  regex.lastIndex = 0;
  return regex.test(response) ? 1 : 0;
}

export interface JsonSchemaRewardResult {
  score: number;
  errors: string[];
}

/** 1 when the response (or the first JSON object / fenced block in it) is valid against the schema. */
export function jsonSchemaReward(response: string, schema: JsonSchema): JsonSchemaRewardResult {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(response);
  const text = (fenced ? fenced[1]! : response).trim();
  const parsed = safeParseJson(text, { source: 'response' });
  if (!parsed.success) return { score: 0, errors: [parsed.error.message] };
  const errors = validateJsonSchema(parsed.value, schema);
  return { score: errors.length === 0 ? 1 : 0, errors };
}

export interface TestCommandResult {
  /** Pass fraction in [0, 1]. */
  score: number;
  passed: number;
  failed: number;
  exitCode: number;
  timedOut: boolean;
  output: string;
  /** How the counts were read: pytest | node-test | tap | exit-code. */
  parsedAs: string;
}

/** Reads pass/fail counts from common test runners' summaries. */
export function parseTestSummary(
  output: string,
): { passed: number; failed: number; parsedAs: string } | null {
  const pytest = /=+ (.*?) in [\d.]+s/g;
  let summary: string | null = null;
  for (let match = pytest.exec(output); match; match = pytest.exec(output)) summary = match[1]!;
  if (summary && /\b(passed|failed|error)/.test(summary)) {
    const count = (word: string) => Number(new RegExp(`(\\d+) ${word}`).exec(summary!)?.[1] ?? 0);
    return { passed: count('passed'), failed: count('failed') + count('errors?'), parsedAs: 'pytest' };
  }
  const nodePass = /^[#ℹ] pass (\d+)$/m.exec(output);
  const nodeFail = /^[#ℹ] fail (\d+)$/m.exec(output);
  if (nodePass && nodeFail)
    return { passed: Number(nodePass[1]), failed: Number(nodeFail[1]), parsedAs: 'node-test' };
  const plain = /(\d+) passed, (\d+) failed/.exec(output);
  if (plain) return { passed: Number(plain[1]), failed: Number(plain[2]), parsedAs: 'plain' };
  const tapOk = output.match(/^ok \d+/gm)?.length ?? 0;
  const tapNotOk = output.match(/^not ok \d+/gm)?.length ?? 0;
  if (tapOk + tapNotOk > 0) return { passed: tapOk, failed: tapNotOk, parsedAs: 'tap' };
  return null;
}

/** Runs a test command in the rollout's sandbox; the reward is the fraction of tests passing. */
export async function testCommandReward(
  sandbox: SandboxV1,
  command: string,
  options: { timeoutMs?: number; cwd?: string; signal?: AbortSignal } = {},
): Promise<TestCommandResult> {
  const result = await sandbox.exec(command, {
    timeoutMs: options.timeoutMs ?? 300_000,
    cwd: options.cwd,
    signal: options.signal,
  });
  const summary = result.timedOut ? null : parseTestSummary(result.output);
  if (summary) {
    const total = summary.passed + summary.failed;
    return {
      score: total === 0 ? 0 : summary.passed / total,
      passed: summary.passed,
      failed: summary.failed,
      exitCode: result.exitCode,
      timedOut: result.timedOut,
      output: result.output,
      parsedAs: summary.parsedAs,
    };
  }
  const passed = result.exitCode === 0 && !result.timedOut;
  return {
    score: passed ? 1 : 0,
    passed: passed ? 1 : 0,
    failed: passed ? 0 : 1,
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    output: result.output,
    parsedAs: 'exit-code',
  };
}
