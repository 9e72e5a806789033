// Path-valued settings of a config file. A relative path written in a config file means a path
// next to that file, wherever shears is started from: each is made absolute against the file's
// folder when the file is loaded (a `--section.field` value on the command line stays relative to
// the working directory). The inputs a run reads (plugins, task files, the tokenizer and model
// folders, the harness `bin`) are checked before anything starts; a missing one is named as
// written and as resolved.
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, resolvePluginUrl } from '@shears/core';

/** Where a path setting came from: as the user wrote it, and against which folder it was read. */
export interface PathOrigin {
  written: string;
  resolved: string;
  /** The folder it was resolved against, and what that folder is. */
  base: string;
  from: 'config' | 'cwd';
}

type PathKind =
  /** Always a path. */
  | 'path'
  /** A path, or a name that is not one (a package, `bundled`, a hub model id): resolved when it looks like a path. */
  | 'maybe';

interface PathField {
  /** Dotted path; `[]` for every entry of a list. */
  field: string;
  kind: PathKind;
  /** An input the commands in `checkedBy` read: it must exist. */
  checkedBy?: readonly string[];
}

const RUNS = ['process', 'serve', 'evaluate', 'train'] as const;
/** The commands that load the plugins a config names and refuse one that is missing. */
const PLUGIN_READERS: readonly string[] = [...RUNS, 'prepare'];
/** The settings of a tasks list: the tasks env's `file`, the harness and SWE envs' `tasks`, the harness `bin`. */
const ENV_SETTINGS = (prefix: string): PathField[] => [
  { field: `${prefix}.file`, kind: 'path', checkedBy: RUNS },
  { field: `${prefix}.tasks`, kind: 'maybe', checkedBy: RUNS },
  { field: `${prefix}.bin`, kind: 'path', checkedBy: RUNS },
  // The SWE env's folder its task-pack packages resolve from.
  { field: `${prefix}.from`, kind: 'path', checkedBy: RUNS },
];

/** Every path-valued setting of the config schema (plugin settings: the ones the built-in envs read). */
const PATH_FIELDS: readonly PathField[] = [
  { field: 'plugins[]', kind: 'maybe', checkedBy: PLUGIN_READERS },
  { field: 'tasks.task_file', kind: 'path', checkedBy: RUNS },
  ...ENV_SETTINGS('env.settings'),
  ...ENV_SETTINGS('loop.evaluation.env.settings'),
  ...ENV_SETTINGS('loop.safety.capability.settings'),
  { field: 'server.tokenizer', kind: 'path', checkedBy: RUNS },
  { field: 'run.out', kind: 'path' },
  { field: 'evaluate.out', kind: 'path' },
  { field: 'api.database', kind: 'path' },
  { field: 'loop.replay.path', kind: 'path' },
  { field: 'train.output', kind: 'path' },
  { field: 'train.reference.model', kind: 'maybe', checkedBy: ['train'] },
  { field: 'train.reference.venv', kind: 'path' },
  { field: 'train.reference.python', kind: 'maybe' },
  { field: 'train.trainer.cwd', kind: 'path', checkedBy: ['train'] },
];

/**
 * A name that is not a path: a package (`@shears/envs-swe`, `my-pack`), a keyword (`bundled`), a
 * hub model id (`Qwen/Qwen3-0.6B`) or a command on PATH (`python3`). A path starts with `.`, `/`
 * or `~`, or names a file by its extension.
 */
function looksLikePath(value: string): boolean {
  return (
    value === '.' ||
    value === '..' ||
    /^\.{1,2}[\\/]/.test(value) ||
    isAbsolute(value) ||
    /\.(jsonl?|ya?ml|csv|parquet|txt)$/i.test(value)
  );
}

/** Every (dotted field, value) a `[]` field path reaches in `raw`, with a setter. */
function* reach(
  raw: unknown,
  field: string,
): Generator<{ field: string; value: unknown; set: (value: string) => void }> {
  const keys = field.split('.');
  function* walk(node: unknown, index: number, at: string): ReturnType<typeof reach> {
    if (node === null || typeof node !== 'object') return;
    let key = keys[index]!;
    const list = key.endsWith('[]');
    if (list) key = key.slice(0, -2);
    const here = at ? `${at}.${key}` : key;
    const record = node as Record<string, unknown>;
    const value = record[key];
    if (list) {
      if (!Array.isArray(value)) return;
      for (const [position, entry] of value.entries()) {
        if (index === keys.length - 1)
          yield {
            field: `${here}[${position}]`,
            value: entry,
            set: (next) => {
              value[position] = next;
            },
          };
        else yield* walk(entry, index + 1, `${here}[${position}]`);
      }
      return;
    }
    if (index === keys.length - 1)
      yield {
        field: here,
        value,
        set: (next) => {
          record[key] = next;
        },
      };
    else yield* walk(value, index + 1, here);
  }
  yield* walk(raw, 0, '');
}

/**
 * Makes every relative path setting in `raw` (a config file's content, before the command-line
 * overrides) absolute against `base`, the file's folder; returns where each came from.
 */
export function resolveConfigFilePaths(raw: unknown, base: string): Record<string, PathOrigin> {
  const origins: Record<string, PathOrigin> = {};
  for (const spec of PATH_FIELDS)
    for (const { field, value, set } of reach(raw, spec.field)) {
      if (typeof value !== 'string' || value === '' || isAbsolute(value) || value === ':memory:') continue;
      if (spec.kind === 'maybe' && !looksLikePath(value) && !existsSync(resolve(base, value))) continue;
      if (value.startsWith('~')) continue; // the shell's, not ours: refused below when it is an input
      const resolved = resolve(base, value);
      set(resolved);
      origins[field] = { written: value, resolved, base, from: 'config' };
    }
  return origins;
}

/** A path read from the command line or a default: relative to the working directory. */
function originOf(
  origins: Record<string, PathOrigin>,
  field: string,
  value: string,
  cwd: string,
): PathOrigin {
  return origins[field] ?? { written: value, resolved: resolve(cwd, value), base: cwd, from: 'cwd' };
}

/** How a path was read, for messages: `"./pack" (resolved against the config file's folder /a: /a/pack)`. */
function describePath(origin: PathOrigin): string {
  if (origin.written === origin.resolved) return `"${origin.written}"`;
  const against = origin.from === 'config' ? "the config file's folder" : 'the working directory';
  return `"${origin.written}" (resolved against ${against} ${origin.base}: ${origin.resolved})`;
}

/**
 * The inputs `command` reads that do not exist, refused before anything starts, each named as
 * written and as resolved. Names that are not paths (a package, `bundled`) are left to the part that
 * reads them.
 */
export function checkInputPaths(
  config: unknown,
  options: {
    command: string;
    cwd: string;
    origins: Record<string, PathOrigin>;
    /** shears field → the key the config file wrote it as (the Atropos chapter's layout). */
    aliases?: Record<string, string>;
  },
): void {
  const problems: Array<{ field: string; message: string; value: string }> = [];
  const seen = new Set<string>();
  for (const spec of PATH_FIELDS) {
    if (!spec.checkedBy?.includes(options.command)) continue;
    for (const { field, value } of reach(config, spec.field)) {
      if (typeof value !== 'string' || value === '') continue;
      const origin = originOf(options.origins, field, value, options.cwd);
      const model = field === 'train.reference.model';
      if (spec.kind === 'maybe' && origin.from === 'cwd' && !looksLikePath(value) && !model) continue;
      if (value.startsWith('~')) {
        problems.push({
          field,
          value,
          message: `"${value}": shears does not expand "~" (only a shell does); write the full path`,
        });
        continue;
      }
      // tasks.task_file is also env.settings.file: named once.
      if (existsSync(origin.resolved) || seen.has(origin.resolved)) continue;
      seen.add(origin.resolved);
      const hubId = model && /^[\w.-]+\/[\w.-]+$/.test(value) && !looksLikePath(value);
      problems.push({
        field,
        value,
        message: hubId
          ? `"${value}" is not a folder here, and shears downloads no models: "${value}" reads as a Hugging Face hub id; download it first (\`hf download ${value} --local-dir ./models/${value.split('/')[1]}\`) and name that folder`
          : `${describePath(origin)} does not exist`,
      });
    }
  }
  if (problems.length === 0) return;
  const label = (field: string) => {
    const alias = options.aliases?.[field];
    return alias ? `${alias} (${field})` : field;
  };
  throw new ConfigError({
    message: problems.map((problem) => `${label(problem.field)}: ${problem.message}`).join('\n'),
    issues: problems.map((problem) => ({
      path: problem.field,
      message: problem.message,
      value: problem.value,
    })),
  });
}

/**
 * A relative `bin` in an env's settings given on the command line is the working directory's:
 * made absolute here, since the harness env would read it in each rollout's workdir.
 */
export function resolveCommandLinePaths(config: unknown, cwd: string): void {
  for (const field of ['env.settings.bin'])
    for (const { value, set } of reach(config, field))
      if (typeof value === 'string' && value !== '' && !isAbsolute(value) && !value.startsWith('~'))
        set(resolve(cwd, value));
}

/** `my-pack`, `@scope/pack`, `my-pack/sub`: a plugin named by package, not by path. */
function isPackageName(value: string): boolean {
  return !looksLikePath(value) && !value.startsWith('file:') && !value.startsWith('~');
}

/**
 * Plugins a config file names by package (`plugins: ["my-pack"]`) resolve as Node resolves an
 * import written in that file: from the config file's folder upwards, so a project's config runs
 * the project's own install wherever shears is started. A package only the working directory has
 * is still loaded, with a note saying so; one neither has is refused, naming both places searched.
 * Each found package is written back as its folder (or the file a subpath exports), so every later
 * reader (the registry, the run's identity) loads that same copy. A `--plugins` list given on the
 * command line keeps resolving from the working directory.
 */
export function resolveConfigPluginPackages(
  config: { plugins: string[]; env?: { name?: string; settings?: Record<string, unknown> } },
  options: { command: string; configDir: string; cwd: string; note: (line: string) => void },
): void {
  sweTaskPackagesFromConfigFolder(config.env, options);
  const problems: Array<{ field: string; message: string; value: string }> = [];
  for (const [index, specifier] of config.plugins.entries()) {
    if (!isPackageName(specifier)) continue;
    const field = `plugins[${index}]`;
    const found = findPackage(specifier, options.configDir);
    if (found !== undefined) {
      config.plugins[index] = found;
      continue;
    }
    const fromCwd = findPackage(specifier, options.cwd);
    if (fromCwd !== undefined) {
      options.note(
        `${field}: "${specifier}" is not installed for the config file's folder ${options.configDir} (node_modules from there upwards); loaded the working directory's copy, ${fromCwd}`,
      );
      config.plugins[index] = fromCwd;
      continue;
    }
    const name = packageNameOf(specifier);
    problems.push({
      field,
      value: specifier,
      message: `package "${specifier}" is not installed: searched node_modules from the config file's folder ${options.configDir} upwards, and from the working directory ${options.cwd} upwards; install it in the config's project (cd ${options.configDir} && npm install ${name}), or name its file with a path`,
    });
  }
  // Other commands (doctor) report a plugin that does not load in their own way.
  if (problems.length === 0 || !PLUGIN_READERS.includes(options.command)) return;
  throw new ConfigError({
    message: problems.map((problem) => `${problem.field}: ${problem.message}`).join('\n'),
    issues: problems.map((problem) => ({
      path: problem.field,
      message: problem.message,
      value: problem.value,
    })),
  });
}

/**
 * The SWE env takes a task pack published as an npm package by name (`env.settings.tasks:
 * my-swe-pack`) and looks it up in node_modules from its `from` setting upwards, the working
 * directory by default. Named in a config file, the package is the config's project's, as a
 * plugin is: `from` is the config file's folder unless the file sets it (a `from` it writes is a
 * path next to the file, like the other paths).
 */
function sweTaskPackagesFromConfigFolder(
  env: { name?: string; settings?: Record<string, unknown> } | undefined,
  options: { configDir: string; cwd: string; note: (line: string) => void },
): void {
  const settings = env?.settings;
  if (env?.name !== 'swe' || settings === undefined || settings.from !== undefined) return;
  const tasks = settings.tasks;
  if (typeof tasks !== 'string' || tasks === 'bundled' || !isPackageName(tasks)) return;
  // A folder or file of that name next to the config is a path (resolved above), not a package.
  if (existsSync(resolve(options.configDir, tasks))) return;
  if (findPackage(tasks, options.configDir) === undefined && findPackage(tasks, options.cwd) !== undefined) {
    options.note(
      `env.settings.tasks: the task pack "${tasks}" is not installed for the config file's folder ${options.configDir} (node_modules from there upwards); using the working directory's copy`,
    );
    return;
  }
  settings.from = options.configDir;
}

function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  return parts.slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
}

/** The package's folder (or, for `name/sub`, the file it exports there) found from `from` upwards. */
function findPackage(specifier: string, from: string): string | undefined {
  const name = packageNameOf(specifier);
  let directory = resolve(from);
  for (;;) {
    const candidate = join(directory, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) {
      if (name === specifier) return candidate;
      return fileURLToPath(resolvePluginUrl(specifier, { from: directory }));
    }
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}
