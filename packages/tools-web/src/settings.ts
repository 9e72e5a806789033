// Strict schemas for the settings of web_search and web_extract as a plugin receives them
// (from a config file or `registry.create`): an unknown or misspelt key (`ssrf: { enable: false }`)
// or a value of the wrong kind is refused with the field, the value and what is allowed,
// instead of being silently ignored.
import { ConfigError, err, ok, type SafeResult } from '@shears/core';
import { closestName, describeValue, valueAtPath } from '@shears/core/internal';
import { z } from 'zod';
import { SEARCH_PROVIDERS, type SearchProvider } from './search-providers.js';
import type { HostResolver } from './ssrf-guard.js';
import type { WebExtractSettings } from './web-extract.js';
import type { WebSearchSettings } from './web-search.js';

const callable = <TFunction>(what: string) =>
  z.custom<TFunction>((value) => typeof value === 'function', { error: `expected ${what} (a function)` });

const milliseconds = z.number().int().nonnegative();

export const webExtractSettingsSchema = z
  .object({
    ssrf: z
      .object({
        enabled: z.boolean().optional(),
        allowlist: z.array(z.string().min(1)).optional(),
        resolver: callable<HostResolver>('a host resolver').optional(),
      })
      .strict()
      .optional(),
    timeoutMs: z.number().int().positive().optional(),
    maxRedirects: z.number().int().nonnegative().optional(),
    maxBytes: z.number().int().positive().optional(),
    maxContentChars: z.number().int().positive().optional(),
    minIntervalMsPerHost: milliseconds.optional(),
    cacheTtlMs: milliseconds.optional(),
    cacheMaxEntries: z.number().int().nonnegative().optional(),
    userAgent: z.string().min(1).optional(),
    ca: z.union([z.string().min(1), z.array(z.string().min(1))]).optional(),
    now: callable<() => number>('a clock').optional(),
    sleep: callable<(ms: number, signal?: AbortSignal) => Promise<void>>('a sleep function').optional(),
  })
  .strict();

export const webSearchSettingsSchema = z
  .object({
    provider: z.string().min(1).optional(),
    baseUrl: z.url().optional(),
    env: z.record(z.string(), z.string().optional()).optional(),
    fetch: callable<typeof globalThis.fetch>('a fetch function').optional(),
    timeoutMs: z.number().int().positive().optional(),
    retry: z
      .object({
        maxRetries: z.number().int().nonnegative().optional(),
        baseDelayMs: milliseconds.optional(),
        maxDelayMs: milliseconds.optional(),
        maxRetryAfterMs: milliseconds.optional(),
        sleep: callable<(ms: number, signal?: AbortSignal) => Promise<void>>('a sleep function').optional(),
        random: callable<() => number>('a random source').optional(),
        now: callable<() => number>('a clock').optional(),
      })
      .strict()
      .optional(),
    customProvider: z
      .custom<SearchProvider>(
        (value) =>
          typeof value === 'object' &&
          value !== null &&
          typeof (value as SearchProvider).id === 'string' &&
          typeof (value as SearchProvider).search === 'function',
        { error: 'expected a search provider (an object with an id and a search function)' },
      )
      .optional(),
  })
  .strict()
  .superRefine((settings, context) => {
    if (settings.provider === undefined) return;
    const known = [
      ...Object.keys(SEARCH_PROVIDERS),
      ...(settings.customProvider ? [settings.customProvider.id] : []),
    ];
    if (
      !known.includes(settings.provider.toLowerCase()) &&
      settings.provider !== settings.customProvider?.id
    ) {
      context.addIssue({
        code: 'invalid_value',
        path: ['provider'],
        values: known,
        input: settings.provider,
        message: 'unknown provider',
      });
    }
  });

function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let current: unknown = schema;
  const unwrap = () => {
    while (current instanceof z.ZodOptional || current instanceof z.ZodPipe) {
      current = current instanceof z.ZodOptional ? current.unwrap() : (current as z.ZodPipe).in;
    }
  };
  unwrap();
  for (const key of path) {
    if (!(current instanceof z.ZodObject)) return [];
    current = (current.shape as Record<string, unknown>)[String(key)];
    unwrap();
  }
  return current instanceof z.ZodObject ? Object.keys(current.shape as object) : [];
}

function settingsError(tool: string, schema: z.ZodType, error: z.ZodError, input: unknown): ConfigError {
  const issues = error.issues.flatMap((issue) => {
    const field = (path: readonly PropertyKey[]) => path.map(String).join('.') || '(root)';
    if (issue.code === 'unrecognized_keys') {
      const allowed = keysAt(schema, issue.path);
      return issue.keys.map((key) => {
        const path = [...issue.path, key];
        const value = valueAtPath(input, path);
        const suggestion = closestName(key, allowed, { ignoreCase: true });
        return {
          path: field(path),
          value,
          message: `unknown setting (value ${describeValue(value, path)})${suggestion ? `; did you mean "${suggestion}"?` : ''} Allowed: ${allowed.join(', ')}`,
        };
      });
    }
    const value = valueAtPath(input, issue.path);
    let message: string;
    switch (issue.code) {
      case 'invalid_type':
        message = `expected ${issue.expected}, got ${describeValue(value, issue.path)}`;
        break;
      case 'too_small':
        message = `must be ${issue.inclusive === false ? '>' : '>='} ${String(issue.minimum)}${issue.origin === 'string' ? ' characters' : ''}, got ${describeValue(value, issue.path)}`;
        break;
      case 'too_big':
        message = `must be ${issue.inclusive === false ? '<' : '<='} ${String(issue.maximum)}, got ${describeValue(value, issue.path)}`;
        break;
      case 'invalid_value':
        message = `got ${describeValue(value, issue.path)}; allowed: ${issue.values.map(String).join(', ')}`;
        break;
      case 'invalid_format':
        message = `expected a valid ${issue.format === 'url' ? 'URL' : issue.format}, got ${describeValue(value, issue.path)}`;
        break;
      case 'invalid_union':
        message = `expected a PEM string or a list of them, got ${describeValue(value, issue.path)}`;
        break;
      default:
        message = `${issue.message}, got ${describeValue(value, issue.path)}`;
    }
    return [{ path: field(issue.path), value, message }];
  });
  return new ConfigError({
    message: `Invalid ${tool} settings: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`,
    issues,
    cause: error,
  });
}

function safeParseWith<TSettings>(
  tool: string,
  schema: z.ZodType,
  input: unknown,
): SafeResult<TSettings, ConfigError> {
  const parsed = schema.safeParse(input ?? {});
  return parsed.success
    ? ok(parsed.data as TSettings)
    : err(settingsError(tool, schema, parsed.error, input ?? {}));
}

export function safeParseWebExtractSettings(input: unknown): SafeResult<WebExtractSettings, ConfigError> {
  return safeParseWith<WebExtractSettings>('web_extract', webExtractSettingsSchema, input);
}

/** Checks web_extract settings from an untyped source; throws a ConfigError naming each bad field. */
export function parseWebExtractSettings(input: unknown): WebExtractSettings {
  const result = safeParseWebExtractSettings(input);
  if (!result.success) throw result.error;
  return result.value;
}

export function safeParseWebSearchSettings(input: unknown): SafeResult<WebSearchSettings, ConfigError> {
  return safeParseWith<WebSearchSettings>('web_search', webSearchSettingsSchema, input);
}

/** Checks web_search settings from an untyped source; throws a ConfigError naming each bad field. */
export function parseWebSearchSettings(input: unknown): WebSearchSettings {
  const result = safeParseWebSearchSettings(input);
  if (!result.success) throw result.error;
  return result.value;
}
