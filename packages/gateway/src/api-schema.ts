// Request bodies are parsed by zod schemas at the border (one `*-api.ts` file per API, holding
// only the fields the gateway reads), and a failed parse becomes that API's own 400: OpenAI's
// `Invalid type for 'messages[0].content': …` with `param` and `code`, Anthropic's
// `messages.0.content: Input should be …`. This file holds the shared pieces: the error map from a
// zod issue to the API's wording, and the schema helpers the three API files use.
import { z } from 'zod';
import { type ApiStyle, apiParam, GatewayApiError } from './api-error.js';
import { describe, isRecord } from './dialect.js';

/**
 * Any JSON object, passed on as it is (a tool's JSON Schema, a tool call's input): checked for
 * its type only, not copied.
 */
export const jsonObject = z.custom<Record<string, unknown>>(isRecord, { params: { expected: 'object' } });

/**
 * The settings of a refinement that acts as a type check: what the field should be, in each
 * API's words. It aborts, so that a union reports the branch that got furthest rather than one
 * whose type matched and whose refinement failed.
 */
export function expecting(openai: string, anthropic = openai) {
  return { abort: true, params: { expected: { openai, anthropic } } };
}

type Issue = z.core.$ZodIssue;
type Key = PropertyKey;

/** One issue, with unions resolved to the branch that got furthest, and its full path. */
interface Fault {
  issue: Issue;
  path: Key[];
  /** The value at `path` (reported with `reportInput`). */
  input: unknown;
  /** A union none of whose branches took the value's type: what the branches expected. */
  expected?: string[];
}

/** What a type check expected: zod's own name, or the `expected` of a refinement (see `expecting`). */
function typeExpected(issue: Issue): string | Record<string, unknown> | undefined {
  if (issue.code === 'invalid_type') return issue.expected;
  if (issue.code !== 'custom') return undefined;
  const expected = (issue.params as { expected?: unknown } | undefined)?.expected;
  return typeof expected === 'string' || isRecord(expected) ? expected : undefined;
}

const depthOf = (issues: readonly Issue[]) => Math.max(...issues.map((issue) => issue.path.length));

function resolve(issue: Issue, prefix: readonly Key[]): Fault {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union') {
    if (issue.errors.length === 0) {
      // A discriminated union: the discriminator's value matched no option (the path names it).
      const input =
        isRecord(issue.input) && issue.discriminator ? issue.input[issue.discriminator] : undefined;
      return { issue, path, input };
    }
    // The branch that got furthest into the value (the first on a tie) says what is wrong with it;
    // when every branch refused the value's type outright, the union's expectation does.
    let best: readonly Issue[] | undefined;
    for (const branch of issue.errors) {
      const root = branch.every((inner) => inner.path.length === 0 && typeExpected(inner) !== undefined);
      if (!root && (!best || depthOf(branch) > depthOf(best))) best = branch;
    }
    if (best?.[0]) return resolve(best[0], path);
    const expected = issue.errors.flatMap((branch) =>
      branch.flatMap((inner) => {
        const name = typeExpected(inner);
        return typeof name === 'string' ? [name] : [];
      }),
    );
    return { issue, path, input: issue.input, expected };
  }
  return { issue, path, input: issue.input };
}

const OPENAI_EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  array: 'an array',
  object: 'an object',
};
const ANTHROPIC_EXPECTED: Record<string, string> = {
  string: 'a valid string',
  number: 'a valid number',
  int: 'a valid integer',
  boolean: 'a valid boolean',
  array: 'a valid list',
  object: 'a valid dictionary',
};

const quoted = (value: unknown) => (typeof value === 'string' ? `'${value}'` : describe(value));
const orList = (items: readonly string[]) =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;

/** What the field should have held, in `style`'s words; undefined when the fault is not about a type. */
function expectedText(fault: Fault, style: ApiStyle): string | undefined {
  const names = style === 'openai' ? OPENAI_EXPECTED : ANTHROPIC_EXPECTED;
  const { issue } = fault;
  // A union's own message (set where the union is built) names the alternatives best.
  if (fault.expected)
    return issue.message !== 'Invalid input'
      ? issue.message
      : orList(fault.expected.map((name) => names[name] ?? name));
  const expected = typeExpected(issue);
  if (typeof expected === 'string') return names[expected] ?? expected;
  return expected ? String(expected[style]) : undefined;
}

/** A failed parse as the API words it, with OpenAI's `param` and `code`. */
function schemaError(first: Issue, style: ApiStyle): GatewayApiError {
  const fault = resolve(first, []);
  const { issue, path, input } = fault;
  if (path.length === 0)
    return new GatewayApiError({
      kind: 'invalid_request',
      message: `The request body must be a JSON object (got ${describe(input)}).`,
    });
  const param = apiParam(path, style);
  const fail = (message: string, code: string, anthropic: string) =>
    new GatewayApiError({
      kind: 'invalid_request',
      message: style === 'openai' ? message : `${param}: ${anthropic}`,
      param,
      apiCode: code,
    });
  if (input === undefined && issue.code !== 'too_small' && issue.code !== 'too_big')
    return fail(`Missing required parameter: '${param}'.`, 'missing_required_parameter', 'Field required');
  const expected = expectedText(fault, style);
  if (expected !== undefined)
    return fail(
      `Invalid type for '${param}': expected ${expected}, but got ${describe(input)}.`,
      'invalid_type',
      `Input should be ${expected} (got ${describe(input)})`,
    );
  if (issue.code === 'invalid_value' || issue.code === 'invalid_union') {
    const values = (
      issue.code === 'invalid_value' ? issue.values : ((issue as { options?: unknown[] }).options ?? [])
    ).filter((value) => value !== undefined && value !== null);
    return fail(
      `Invalid value for '${param}': ${quoted(input)} is not supported. Supported values are: ${values.map(quoted).join(', ')}.`,
      'invalid_value',
      `Input should be ${orList(values.map(quoted))} (got ${quoted(input)})`,
    );
  }
  if ((issue.code === 'too_small' || issue.code === 'too_big') && Array.isArray(input)) {
    const bound = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
    if (issue.code === 'too_small')
      return fail(
        input.length === 0
          ? `Invalid '${param}': empty array. Expected an array with minimum length ${bound}.`
          : `Invalid '${param}': array too short. Expected an array with minimum length ${bound}, but got an array with length ${input.length} instead.`,
        input.length === 0 ? 'empty_array' : 'array_below_min_length',
        `List should have at least ${bound} item${bound === 1 ? '' : 's'} after validation, not ${input.length}`,
      );
    return fail(
      `Invalid '${param}': array too long. Expected an array with maximum length ${bound}, but got an array with length ${input.length} instead.`,
      'array_above_max_length',
      `List should have at most ${bound} items after validation, not ${input.length}`,
    );
  }
  if (issue.code === 'too_small' && typeof input === 'string')
    return fail(
      `Invalid '${param}': empty string. Expected a string with minimum length ${Number(issue.minimum)}.`,
      'empty_string',
      `String should have at least ${Number(issue.minimum)} character`,
    );
  return fail(`Invalid '${param}': ${issue.message}.`, 'invalid_value', issue.message);
}

/** Parses a request body by its API's schema; a failure is the API's own 400 naming the field. */
export function parseRequest<TSchema extends z.ZodType>(
  schema: TSchema,
  body: unknown,
  style: ApiStyle,
): z.output<TSchema> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  // Parsed again for the message, with the values at fault: `reportInput` costs every request
  // a few microseconds (each failed union branch keeps its input), a refused one can pay them.
  const again = schema.safeParse(body, { reportInput: true });
  throw schemaError((again.error ?? result.error).issues[0] as Issue, style);
}
