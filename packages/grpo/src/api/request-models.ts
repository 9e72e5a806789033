// The small request bodies of the trajectory API (/register, /register-env, /disconnect-env,
// /status-env) as zod schemas holding only the fields the server reads, with the coercions of
// Atropos's pydantic models in lax mode (a numeric string or a bool is an int, an int a float),
// and FastAPI's 422 `{"detail": [...]}` naming each bad field. (ScoredData bodies are too large
// for a schema walk; they go through wire-decode.ts.)
import { z } from 'zod';
import { detail } from './http-errors.js';

type Converted<T> = { value: T } | { type: string; msg: string; input: unknown };

const MISSING = { type: 'missing', msg: 'Field required' } as const;

// One field, converted as pydantic does, or a custom issue carrying pydantic's error type.
function field<T>(convert: (value: unknown) => Converted<T>) {
  // `.optional()` lets an absent key reach the transform, which reports it as pydantic does.
  return z
    .unknown()
    .optional()
    .transform((value, context): T => {
      const result = value === undefined ? { ...MISSING, input: undefined } : convert(value);
      if ('value' in result) return result.value;
      context.addIssue({
        code: 'custom',
        message: result.msg,
        params: { type: result.type },
        input: result.input,
      });
      return z.NEVER;
    });
}

const str = field<string>((value) =>
  typeof value === 'string'
    ? { value }
    : { type: 'string_type', msg: 'Input should be a valid string', input: value },
);

const INT_STRING = /^\s*[-+]?\d+(?:_\d+)*(?:\.0+)?\s*$/;
const int = field<number>((value) => {
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && INT_STRING.test(value)
        ? Number(value.trim().replace(/\.0+$/, '').replaceAll('_', ''))
        : typeof value === 'boolean'
          ? Number(value)
          : Number.NaN;
  if (Number.isInteger(number)) return { value: number };
  if (typeof value === 'number' && Number.isFinite(value))
    return {
      type: 'int_from_float',
      msg: 'Input should be a valid integer, got a number with a fractional part',
      input: value,
    };
  if (typeof value === 'string')
    return {
      type: 'int_parsing',
      msg: 'Input should be a valid integer, unable to parse string as an integer',
      input: value,
    };
  return { type: 'int_type', msg: 'Input should be a valid integer', input: value };
});

function toFloat(value: unknown): Converted<number> {
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== ''
        ? Number(value)
        : typeof value === 'boolean'
          ? Number(value)
          : Number.NaN;
  if (Number.isFinite(number)) return { value: number };
  return typeof value === 'string'
    ? {
        type: 'float_parsing',
        msg: 'Input should be a valid number, unable to parse string as a number',
        input: value,
      }
    : { type: 'float_type', msg: 'Input should be a valid number', input: value };
}
const float = field(toFloat);
// `Optional[float] = None`: absent or null is null.
const optionalFloat = z
  .unknown()
  .optional()
  .transform((value, context): number | null => {
    if (value === undefined || value === null) return null;
    const result = toFloat(value);
    if ('value' in result) return result.value;
    context.addIssue({
      code: 'custom',
      message: result.msg,
      params: { type: result.type },
      input: result.input,
    });
    return z.NEVER;
  });

/** POST /register (Atropos `Registration`). */
export const trainerRegistrationSchema = z.object({
  wandb_group: str,
  wandb_project: str,
  batch_size: int,
  max_token_len: int,
  checkpoint_dir: str,
  save_checkpoint_interval: int,
  starting_step: int,
  num_steps: int,
});

/** POST /register-env (Atropos `RegisterEnv`). */
export const envRegistrationSchema = z.object({
  max_token_length: int,
  desired_name: str,
  weight: float,
  group_size: int,
  min_batch_allocation: optionalFloat,
});

/** POST /disconnect-env and GET /status-env (Atropos `EnvIdentifier`). */
export const envIdentifierSchema = z.object({ env_id: int });

/** The parsed body, or FastAPI's 422 naming every bad field (thrown as an HttpError). */
export function parseRequest<TSchema extends z.ZodType>(schema: TSchema, body: unknown): z.output<TSchema> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw detail(
    422,
    result.error.issues.map((issue) => {
      if (issue.path.length === 0)
        return {
          type: 'model_attributes_type',
          loc: ['body'],
          msg: 'Input should be a valid dictionary or object to extract fields from',
          input: body,
        };
      const type =
        issue.code === 'custom' ? String((issue.params as { type?: string } | undefined)?.type) : issue.code;
      // FastAPI shows a missing field's input as the whole body.
      return {
        type,
        loc: ['body', ...issue.path],
        msg: issue.message,
        input: type === 'missing' ? body : issue.input,
      };
    }),
  );
}
