// The one JSON-parsing helper for external data: errors name the source and the position.
import type { z } from 'zod';
import { JsonParseError } from './errors.js';
import { err, ok, type SafeResult } from './result.js';

export interface ParseJsonOptions<TSchema extends z.ZodType = z.ZodType> {
  /** Where the text came from, used in error messages ("scored_data body", "config.yaml"). */
  source?: string;
  /** Validate the parsed value against this schema. */
  schema?: TSchema;
}

function positionOf(error: unknown, text: string): number | undefined {
  const message = error instanceof Error ? error.message : '';
  const match = /position (\d+)/.exec(message);
  if (match) return Number(match[1]);
  if (/Unexpected end of JSON input/.test(message)) return text.length;
  return undefined;
}

function lineColumn(text: string, position: number): string {
  let line = 1;
  let column = 1;
  for (let index = 0; index < position && index < text.length; index++) {
    if (text.charCodeAt(index) === 10) {
      line++;
      column = 1;
    } else column++;
  }
  return `line ${line}, column ${column}`;
}

export function safeParseJson<TSchema extends z.ZodType = z.ZodType<unknown>>(
  text: string,
  options: ParseJsonOptions<TSchema> = {},
): SafeResult<z.output<TSchema>, JsonParseError> {
  const source = options.source ?? 'JSON input';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    const position = positionOf(cause, text);
    const where = position === undefined ? '' : ` at ${lineColumn(text, position)}`;
    const detail = cause instanceof Error ? cause.message : String(cause);
    return err(
      new JsonParseError({
        source,
        text,
        position,
        message: `Invalid JSON in ${source}${where}: ${detail}`,
        cause,
      }),
    );
  }
  if (!options.schema) return ok(value as z.output<TSchema>);
  const parsed = options.schema.safeParse(value);
  if (parsed.success) return ok(parsed.data);
  const issues = parsed.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
  return err(
    new JsonParseError({
      source,
      text,
      message: `Unexpected shape in ${source}: ${issues}`,
      cause: parsed.error,
    }),
  );
}

export function parseJson<TSchema extends z.ZodType = z.ZodType<unknown>>(
  text: string,
  options: ParseJsonOptions<TSchema> = {},
): z.output<TSchema> {
  const result = safeParseJson(text, options);
  if (!result.success) throw result.error;
  return result.value;
}
