// Loads a shears config: reads YAML or JSON, substitutes `${VAR}` from the environment, applies
// command-line overrides (`--env.group_size 8`, typed by the schema), validates with zod and
// turns every issue into a line that names the field, the value and what is allowed.
import { readFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { ConfigError, safeParseJson } from '@shears/core';
import { closestName, describeValue, valueAtPath } from '@shears/core/internal';
import { parseDocument, parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { OverrideValue } from '../args.js';
import { type AtroposMapping, translateAtroposLayout } from './atropos-layout.js';
import { type PathOrigin, resolveConfigFilePaths } from './config-paths.js';
import { type ShearsConfig, shearsConfigSchema } from './config-schema.js';

export interface LoadConfigOptions {
  /** Config file (YAML or JSON); optional. */
  path?: string;
  /** Already-parsed config object (used instead of `path`). */
  object?: unknown;
  /**
   * Dotted-path overrides as given on the command line: `env.group_size` → `"8"` (or
   * `{ text, flag, literal }`). Each is typed as the schema types its field; values of fields
   * the schema types `unknown` (plugin settings) are read as YAML, as in a config file.
   */
  overrides?: Record<string, string | OverrideValue>;
  /** Environment for `${VAR}` and `api_key_env` (default process.env). */
  environment?: Record<string, string | undefined>;
}

export interface LoadedConfig {
  config: ShearsConfig;
  /** Secret values read from the environment: redact them from every output. */
  secrets: string[];
  /** The resolved API key, when any. */
  apiKey: string | undefined;
  path: string | undefined;
  /** The path settings a config file gave relatively, by field, made absolute against its folder. */
  pathOrigins: Record<string, PathOrigin>;
  /** The Atropos chapter's keys the file used, mapped onto shears' settings (printed once). */
  atropos: AtroposMapping | undefined;
}

export function loadConfig(options: LoadConfigOptions = {}): LoadedConfig {
  const environment = options.environment ?? process.env;
  let raw: unknown = options.object ?? {};
  if (options.path !== undefined) raw = readConfigFile(options.path);
  if (raw === null || raw === undefined) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError({
      message: `Config ${options.path ?? ''}: the top level must be a mapping of sections (env, server, sandbox, judge, group_judge, run, api, evaluate, train, loop, tasks, wandb), got ${describeValue(raw)}`,
      issues: [{ path: '(root)', message: 'must be an object', value: raw }],
    });
  }
  const secrets: string[] = [];
  const interpolated = interpolate(raw, '', environment, secrets) as Record<string, unknown>;
  const atropos = options.path === undefined ? undefined : translateAtroposLayout(interpolated);
  // Before the overrides: a path on the command line is the working directory's.
  const pathOrigins =
    options.path === undefined ? {} : resolveConfigFilePaths(interpolated, dirname(resolve(options.path)));
  for (const [path, given] of Object.entries(options.overrides ?? {})) {
    const override = typeof given === 'string' ? { text: given } : given;
    setPath(interpolated, path, override.literal ? override.text : coerceOverride(path, override));
  }
  const parsed = shearsConfigSchema.safeParse(interpolated);
  if (!parsed.success) throw configErrorFromZod(parsed.error, interpolated, options.path);
  const config = parsed.data;
  applyTaskFile(config, interpolated.env);
  let apiKey = config.server.api_key;
  if (apiKey === undefined && config.server.api_key_env !== undefined) {
    apiKey = environment[config.server.api_key_env];
    if (apiKey === undefined || apiKey === '') {
      throw new ConfigError({
        message: `server.api_key_env: environment variable "${config.server.api_key_env}" is not set (set it, or remove server.api_key_env)`,
        issues: [
          {
            path: 'server.api_key_env',
            message: 'environment variable not set',
            value: config.server.api_key_env,
          },
        ],
      });
    }
  }
  if (apiKey) secrets.push(apiKey);
  try {
    for (const section of ['judge', 'group_judge'] as const)
      resolveJudgeSecrets(config, section, environment, secrets);
  } catch (error) {
    // The chapter's judge: { model } names no key; say where the judge is called and with what.
    if (!atropos?.aliases['judge.server.model'] || !ConfigError.isInstance(error)) throw error;
    const server = config.judge?.server;
    throw new ConfigError({
      message: `judge.model (${server?.model}): the judges are called at ${server?.base_url} with the key in the environment variable ${server?.api_key_env}, which is not set; set it, or write shears' own judge section (judge: { id: panel, server: { provider, base_url, model, api_key_env } }) for another endpoint`,
      issues: [{ path: 'judge.model', message: 'no API key for the judge', value: server?.model }],
      cause: error,
    });
  }
  return {
    config,
    secrets: [...new Set(secrets.filter((secret) => secret.length >= 4))],
    apiKey,
    path: options.path,
    pathOrigins,
    atropos,
  };
}

/**
 * `tasks.task_file` (the seed's local-training config): without `env.name` it selects the tasks
 * env with that file (refused beside `env.settings.file`, so neither spelling is silently
 * dropped). With another env named, it stays in `tasks` and fills in that env's tasks-file
 * setting when the env is created (runtime/compose.ts: a `defineEnv` env's `tasks`), or is
 * refused there for an env that takes no rows.
 */
function applyTaskFile(config: ShearsConfig, rawEnv: unknown): void {
  const file = config.tasks?.task_file;
  if (file === undefined) return;
  const env = (rawEnv ?? {}) as { name?: unknown; settings?: { file?: unknown } };
  if (env.name !== undefined && env.name !== 'tasks') return;
  if (env.settings?.file !== undefined) {
    throw new ConfigError({
      message:
        'tasks.task_file: it selects the tasks env with that file, but env.settings.file is set too; keep one of the two',
      issues: [{ path: 'tasks.task_file', message: 'conflicts with env.settings.file', value: file }],
    });
  }
  config.env.name = 'tasks';
  config.env.settings = { ...config.env.settings, file };
}

/** Setting names whose string values are secrets, wherever they sit in a judge's settings. */
const SECRET_SETTING = /(api_?key|token|secret|password)$/i;

function collectSecretSettings(value: unknown, secrets: string[]): void {
  if (Array.isArray(value)) for (const entry of value) collectSecretSettings(entry, secrets);
  else if (value && typeof value === 'object')
    for (const [key, entry] of Object.entries(value)) {
      if (typeof entry === 'string' && SECRET_SETTING.test(key)) secrets.push(entry);
      else collectSecretSettings(entry, secrets);
    }
}

/**
 * A judge's API key follows the rules of `server.api_key`: `${VAR}` or `api_key_env` read it from
 * the environment (resolved into `api_key` here), and every key, also a literal one and any
 * `apiKey`/`token`-like value in the judge's settings, is redacted from all output.
 */
function resolveJudgeSecrets(
  config: ShearsConfig,
  section: 'judge' | 'group_judge',
  environment: Record<string, string | undefined>,
  secrets: string[],
): void {
  const judge = config[section];
  if (!judge) return;
  collectSecretSettings(judge.settings, secrets);
  const server = judge.server;
  if (!server) return;
  collectSecretSettings(server.settings, secrets);
  if (server.api_key === undefined && server.api_key_env !== undefined) {
    const value = environment[server.api_key_env];
    if (value === undefined || value === '') {
      throw new ConfigError({
        message: `${section}.server.api_key_env: environment variable "${server.api_key_env}" is not set (set it, or remove ${section}.server.api_key_env)`,
        issues: [
          {
            path: `${section}.server.api_key_env`,
            message: 'environment variable not set',
            value: server.api_key_env,
          },
        ],
      });
    }
    server.api_key = value;
  }
  if (server.api_key) secrets.push(server.api_key);
}

function readConfigFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError({ message: `Cannot read config file ${path}: ${(cause as Error).message}`, cause });
  }
  const extension = extname(path).toLowerCase();
  if (extension === '.json') {
    const result = safeParseJson(text, { source: path });
    if (!result.success)
      throw new ConfigError({
        message: `Config ${path} is not valid JSON: ${result.error.message}`,
        cause: result.error,
      });
    return result.value;
  }
  if (extension !== '.yaml' && extension !== '.yml') {
    throw new ConfigError({
      message: `Config ${path}: unsupported extension "${extension}" (allowed: .yaml, .yml, .json)`,
    });
  }
  try {
    return parseYaml(text);
  } catch (cause) {
    throw new ConfigError({
      message: `Config ${path} is not valid YAML: ${(cause as Error).message}`,
      cause,
    });
  }
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Replaces `${VAR}` and `${VAR:-default}` in every string; values read are remembered as secrets. */
function interpolate(
  value: unknown,
  path: string,
  environment: Record<string, string | undefined>,
  secrets: string[],
): unknown {
  if (typeof value === 'string') {
    return value.replace(VARIABLE, (_match, name: string, fallback: string | undefined) => {
      const found = environment[name];
      if (found !== undefined && found !== '') {
        secrets.push(found);
        return found;
      }
      if (fallback !== undefined) return fallback;
      throw new ConfigError({
        message: `${path || '(root)'}: environment variable "${name}" is not set (referenced as \${${name}}; set it or write \${${name}:-default})`,
        issues: [{ path, message: 'environment variable not set', value: name }],
      });
    });
  }
  if (Array.isArray(value))
    return value.map((entry, index) => interpolate(entry, `${path}[${index}]`, environment, secrets));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(value))
      out[key] = interpolate(entry, path ? `${path}.${key}` : key, environment, secrets);
    return out;
  }
  return value;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node: Record<string, unknown> = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (next === undefined || next === null || typeof next !== 'object' || Array.isArray(next))
      node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

/** The schema node at a dotted path, unwrapping defaults and optionals; undefined when unknown. */
export function schemaAtPath(path: string): z.ZodType | undefined {
  let node: z.ZodType | undefined = shearsConfigSchema;
  for (const key of path.split('.')) {
    node = unwrap(node);
    if (node instanceof z.ZodObject) node = (node.shape as Record<string, z.ZodType>)[key];
    else if (node instanceof z.ZodRecord) node = node.valueType as z.ZodType;
    else return undefined;
    if (!node) return undefined;
  }
  return unwrap(node);
}

function unwrap(node: z.ZodType | undefined): z.ZodType | undefined {
  let current = node;
  for (let depth = 0; depth < 10 && current; depth++) {
    if (
      current instanceof z.ZodDefault ||
      current instanceof z.ZodPrefault ||
      current instanceof z.ZodOptional ||
      current instanceof z.ZodNullable
    ) {
      current = current.unwrap() as z.ZodType;
    } else break;
  }
  return current;
}

/** The zod type name of a schema node (`string`, `number`, `array`, `unknown`, ...); zod 4 keeps it in `def.type`. */
function typeName(node: z.ZodType | undefined): string | undefined {
  return (node as { def?: { type?: string } } | undefined)?.def?.type;
}

/**
 * A command-line value read as a one-line YAML value: a scalar (`1` → 1, `true` → true, `"1"` →
 * "1", `abc` → "abc") or a flow collection (`[a, b]`, `{x: 1}`), so it has the type it would
 * have in a config file. Text that YAML reads as a block mapping or list (`Note: x`, `- x`) stays
 * text, and so does a value holding `#` (YAML would drop it as a comment); a flow collection that
 * does not parse is an error.
 */
function parseOverrideYaml(override: OverrideValue, path: string): unknown {
  const { text } = override;
  const flag = override.flag ?? `--${path}`;
  const document = parseDocument(text, { prettyErrors: false });
  const contents = document.contents as { flow?: boolean; items?: unknown } | null;
  const looksFlow = /^\s*[[{]/.test(text);
  if (document.errors.length > 0) {
    if (!looksFlow) return text;
    throw new ConfigError({
      message: `${flag}: ${JSON.stringify(text)} is not a valid YAML flow value for ${path} (${document.errors[0]!.message.split('\n')[0]}); write e.g. '["a", "b"]' or '{key: value}'`,
      issues: [{ path, message: 'invalid YAML flow value', value: text }],
    });
  }
  // On a command line `#` is part of the value, never a comment; an empty value is the empty string.
  const node = contents as { comment?: string | null; commentBefore?: string | null } | null;
  if (document.comment || document.commentBefore || node?.comment || node?.commentBefore) return text;
  if (text.trim() === '') return text;
  if (contents && Array.isArray(contents.items) && !contents.flow) return text;
  try {
    return document.toJS();
  } catch {
    return text; // an alias (`*x`) with no anchor: text, as the shell gave it
  }
}

/** Command-line values are text; the schema says what type the field wants. */
function coerceOverride(path: string, override: OverrideValue): unknown {
  const { text } = override;
  const node = schemaAtPath(path);
  switch (typeName(node)) {
    case 'string':
    case 'enum':
      return text;
    case 'number': {
      const number = Number(text);
      return text.trim() !== '' && Number.isFinite(number) ? number : text;
    }
    case 'boolean':
      if (text === 'true' || text === '') return true;
      if (text === 'false') return false;
      return text;
    case 'array': {
      // `[a, b]` (or a mapping, which the schema then refuses) is YAML flow; else a comma list.
      if (/^\s*[[{]/.test(text)) return parseOverrideYaml(override, path);
      const element = typeName(unwrap((node as z.ZodArray<z.ZodType>).element as z.ZodType));
      const parts = text
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part !== '');
      return element === 'number'
        ? parts.map((part) => (Number.isFinite(Number(part)) ? Number(part) : part))
        : parts;
    }
    default:
      // object, record, unknown (plugin settings), or a path inside them the schema does not know.
      return parseOverrideYaml(override, path);
  }
}

function formatPath(path: readonly PropertyKey[]): string {
  return (
    path
      .map((key, index) =>
        typeof key === 'number' ? `[${key}]` : index === 0 ? String(key) : `.${String(key)}`,
      )
      .join('') || '(root)'
  );
}

/** One readable line per zod issue: field, value, what is allowed. */
export function configErrorFromZod(error: z.ZodError, input: unknown, source?: string): ConfigError {
  const issues = error.issues.map((issue) => {
    const field = formatPath(issue.path);
    const value = valueAtPath(input, issue.path);
    let message: string;
    switch (issue.code) {
      case 'unrecognized_keys': {
        const node =
          schemaAtPath(issue.path.map(String).join('.')) ??
          (issue.path.length === 0 ? shearsConfigSchema : undefined);
        const allowed = node instanceof z.ZodObject ? Object.keys(node.shape as object) : [];
        const parts = issue.keys.map((key) => {
          const suggestion = closestName(key, allowed);
          return `"${key}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''}`;
        });
        message = `unknown field${issue.keys.length > 1 ? 's' : ''} ${parts.join(', ')}; allowed: ${allowed.join(', ')}`;
        return { path: issue.path.length ? field : '(root)', message, value: issue.keys };
      }
      case 'invalid_type':
        message = `expected ${issue.expected}, got ${describeValue(value, issue.path)}`;
        break;
      case 'too_small':
        message = `must be ${issue.inclusive === false ? '>' : '>='} ${String(issue.minimum)}${issue.origin === 'array' ? ' items' : issue.origin === 'string' ? ' characters' : ''}, got ${describeValue(value, issue.path)}`;
        break;
      case 'too_big':
        message = `must be ${issue.inclusive === false ? '<' : '<='} ${String(issue.maximum)}${issue.origin === 'array' ? ' items' : ''}, got ${describeValue(value, issue.path)}`;
        break;
      case 'invalid_value':
        message = `got ${describeValue(value, issue.path)}; allowed: ${issue.values.map((entry) => JSON.stringify(entry)).join(', ')}`;
        break;
      case 'invalid_format':
        if (issue.format === 'regex') {
          // The schema's own words when it gives them ('auto, cpu, cuda or cuda:N'), else the pattern:
          // "expected a valid regex" would tell the user the value should be a regular expression.
          const own = !issue.message.startsWith('Invalid string');
          message = `${own ? `expected ${issue.message}` : `must match ${String(issue.pattern)}`}, got ${describeValue(value, issue.path)}`;
        } else
          message = `expected a valid ${issue.format === 'url' ? 'URL (e.g. http://127.0.0.1:8000/v1)' : issue.format}, got ${describeValue(value, issue.path)}`;
        break;
      default:
        message = `${issue.message}, got ${describeValue(value, issue.path)}`;
    }
    return { path: field, message, value };
  });
  const lines = issues.map((issue) => `  ${issue.path}: ${issue.message}`);
  return new ConfigError({
    message: `Invalid config${source ? ` ${source}` : ''}:\n${lines.join('\n')}`,
    issues,
    cause: error,
  });
}
