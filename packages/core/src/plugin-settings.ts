// Plugin settings, checked once by the registry: an entry declares a zod schema for its
// settings; the user's settings are parsed with it before `create` (or `check`) sees them, keys
// the schema does not know are refused with the allowed list (a misspelt key would otherwise be
// dropped by zod and the setting silently ignored), and every problem names its field.
import type { z } from 'zod';
import { closestName, describeValue, valueAtPath } from './config-hints.js';
import { ShearsError } from './errors.js';

export interface SettingsIssue {
  /** The field inside the entry's settings, e.g. `limits.memoryMb` or `judges[1].server`. */
  path: string;
  message: string;
  value?: unknown;
}

/** Settings an entry's schema refused. `issues` name fields relative to the entry's settings. */
export class InvalidSettingsError extends ShearsError {
  /** What the settings were for, e.g. `sandbox provider "docker"`. */
  readonly entry: string;
  readonly issues: readonly SettingsIssue[];
  constructor(options: { entry: string; issues: readonly SettingsIssue[]; cause?: unknown }) {
    const lines = options.issues.map((issue) => `settings.${issue.path}: ${issue.message}`);
    super(`Invalid settings for ${options.entry}: ${lines.join('; ')}`, {
      code: 'SHEARS_INVALID_SETTINGS',
      cause: options.cause,
    });
    this.entry = options.entry;
    this.issues = options.issues;
  }
  static override isInstance(error: unknown): error is InvalidSettingsError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_INVALID_SETTINGS';
  }
}

/** `a.b[0].c` */
function formatSettingsPath(path: readonly PropertyKey[]): string {
  return path
    .map((key, index) =>
      typeof key === 'number' ? `[${key}]` : index === 0 ? String(key) : `.${String(key)}`,
    )
    .join('');
}

// zod's internal definition, read only to find object shapes (zod 4: `schema._zod.def`).
interface SchemaDef {
  type: string;
  shape?: Record<string, unknown>;
  catchall?: { _zod: { def: SchemaDef } };
  innerType?: { _zod: { def: SchemaDef } };
  in?: { _zod: { def: SchemaDef } };
  element?: { _zod: { def: SchemaDef } };
}
const WRAPPERS = new Set(['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch', 'nonoptional']);

function defOf(schema: unknown): SchemaDef | undefined {
  return (schema as { _zod?: { def?: SchemaDef } } | undefined)?._zod?.def;
}

/** The definition under optional/default/pipe wrappers. */
function unwrap(schema: unknown): SchemaDef | undefined {
  let def = defOf(schema);
  for (let depth = 0; def && depth < 16; depth++) {
    if (WRAPPERS.has(def.type) && def.innerType) def = def.innerType._zod.def;
    else if (def.type === 'pipe' && def.in) def = def.in._zod.def;
    else return def;
  }
  return def;
}

/** The keys an object schema allows; undefined when it is not an object or takes any key. */
function settingsKeys(schema: unknown): string[] | undefined {
  const def = unwrap(schema);
  if (def?.type !== 'object' || !def.shape) return undefined;
  const catchall = def.catchall?._zod.def.type;
  if (catchall !== undefined && catchall !== 'never') return undefined;
  return Object.keys(def.shape);
}

/**
 * Keys in `value` that the object schemas (at any depth, through arrays and wrappers) do not
 * declare. A plain `z.object` strips them silently; here they are refused.
 */
function unknownKeyIssues(
  schema: unknown,
  value: unknown,
  path: PropertyKey[],
  hints: Readonly<Record<string, string>>,
): SettingsIssue[] {
  const def = unwrap(schema);
  if (!def || value === null || typeof value !== 'object') return [];
  if (def.type === 'array' && def.element && Array.isArray(value))
    return value.flatMap((item, index) => unknownKeyIssues(def.element, item, [...path, index], hints));
  if (def.type !== 'object' || !def.shape || Array.isArray(value)) return [];
  const allowed = settingsKeys(schema);
  const issues: SettingsIssue[] = [];
  for (const [key, child] of Object.entries(value)) {
    if (key in def.shape) issues.push(...unknownKeyIssues(def.shape[key], child, [...path, key], hints));
    else if (allowed) {
      const where = formatSettingsPath([...path, key]);
      const near = closestName(key, allowed, { ignoreCase: true });
      const hint = hints[where];
      issues.push({
        path: where,
        message: `unknown setting${near && !hint ? ` (did you mean "${near}"?)` : ''}; allowed: ${allowed.join(', ') || 'none'}${hint ? `; ${hint}` : ''}`,
        value: child,
      });
    }
  }
  return issues;
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown): SettingsIssue {
  const value = valueAtPath(input, issue.path);
  const path = formatSettingsPath(issue.path) || '(settings)';
  switch (issue.code) {
    case 'invalid_type':
      return { path, value, message: `expected ${issue.expected}, got ${describeValue(value, issue.path)}` };
    case 'too_small':
      return {
        path,
        value,
        message: `must be ${issue.inclusive === false ? '>' : '>='} ${String(issue.minimum)}${issue.origin === 'array' ? ' items' : issue.origin === 'string' ? ' characters' : ''}, got ${describeValue(value, issue.path)}`,
      };
    case 'too_big':
      return {
        path,
        value,
        message: `must be ${issue.inclusive === false ? '<' : '<='} ${String(issue.maximum)}${issue.origin === 'array' ? ' items' : issue.origin === 'string' ? ' characters' : ''}, got ${describeValue(value, issue.path)}`,
      };
    case 'invalid_value':
      return {
        path,
        value,
        message: `got ${describeValue(value, issue.path)}; allowed: ${issue.values.map((entry) => JSON.stringify(entry)).join(', ')}`,
      };
    case 'invalid_format':
      return {
        path,
        value,
        message: `expected a valid ${issue.format === 'url' ? 'URL' : issue.format}, got ${describeValue(value, issue.path)}`,
      };
    case 'unrecognized_keys':
      return { path, value: issue.keys, message: `unknown setting(s) ${issue.keys.join(', ')}` };
    default:
      return { path, value, message: `${issue.message}, got ${describeValue(value, issue.path)}` };
  }
}

/**
 * Parses `settings` with `schema`: unknown keys and schema issues throw one InvalidSettingsError
 * naming every field; the parsed (typed, defaulted) settings are returned.
 */
export function parsePluginSettings<TSchema extends z.ZodType>(
  schema: TSchema,
  settings: unknown,
  entry: string,
  /** For keys users try that the schema does not have: where that setting is (`maxTurns: 'the turn budget is env.max_turns'`). */
  hints: Readonly<Record<string, string>> = {},
): z.output<TSchema> {
  const unknown = unknownKeyIssues(schema, settings, [], hints);
  const parsed = schema.safeParse(settings);
  if (parsed.success && unknown.length === 0) return parsed.data;
  // zod's own unrecognized-keys issues are the ones above, said better.
  const issues = parsed.success
    ? []
    : parsed.error.issues
        .filter((issue) => issue.code !== 'unrecognized_keys' || unknown.length === 0)
        .map((issue) => describeIssue(issue, settings));
  throw new InvalidSettingsError({
    entry,
    issues: [...unknown, ...issues],
    cause: parsed.success ? undefined : parsed.error,
  });
}
