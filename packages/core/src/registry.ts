// Plugin manifests and the registry that combines them at run time. A plugin package's
// default export is its manifest, so a config file can name the package and the registry
// loads it with a dynamic import.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { z } from 'zod';
import type { EnvV1 } from './contracts/env.js';
import type { GroupJudgeV1, JudgeV1 } from './contracts/judge.js';
import type { Logger } from './contracts/logger.js';
import { silentLogger } from './contracts/logger.js';
import type { ToolCallParserV1 } from './contracts/parser.js';
import type { SandboxProviderV1 } from './contracts/sandbox.js';
import type { ServerV1 } from './contracts/server.js';
import type { TrajectorySinkV1 } from './contracts/sink.js';
import type { ToolV1 } from './contracts/tool.js';
import { InvalidArgumentError, NoSuchEntryError, ShearsError } from './errors.js';
import { parsePluginSettings } from './plugin-settings.js';
import type { ToolsetDefinition } from './toolsets.js';

export interface PluginContext {
  registry: Registry;
  logger: Logger;
}

/** What an entry's `check()` reports, one line of `shears doctor` each. */
export interface PluginCheckResult {
  /** Short subject, e.g. `sandbox`, `docker tcp://10.0.0.2:2375`. */
  name: string;
  status: 'ok' | 'fail' | 'warn' | 'skip';
  detail: string;
  /** What to do about a `fail` or `warn`. */
  fix?: string;
  /** The endpoint the result is about (a Docker daemon's URL, an ssh host), when there is one. */
  host?: string;
}

export interface PluginCheckContext extends PluginContext {
  signal?: AbortSignal;
  /** The process environment the run would see (DOCKER_HOST, ...). */
  env: Readonly<Record<string, string | undefined>>;
  /** Where these settings sit in the user's config, for fixes that name fields (default `settings`). */
  settingsField: string;
}

/**
 * One registered thing: a factory from settings to an instance. With a `settings` schema the
 * registry parses the user's settings once (unknown keys refused, every problem naming its field)
 * and `create` gets the typed result; without one, settings reach `create` as given, unchecked
 * (see docs/decisions/plugin-settings.md).
 */
export interface PluginEntry<TInstance, TSettings = Record<string, unknown>> {
  settings?: z.ZodType<TSettings>;
  create(settings: TSettings, context: PluginContext): TInstance | Promise<TInstance>;
  /**
   * Whether what these settings point at is there and answers (a daemon, a host, a folder), for
   * `shears doctor`; no side effect beyond a probe, and a failure is a result, not a throw.
   */
  check?(
    settings: TSettings,
    context: PluginCheckContext,
  ): readonly PluginCheckResult[] | Promise<readonly PluginCheckResult[]>;
  /**
   * For settings users try that this entry does not have, where that setting is instead
   * (`{ maxTurns: 'the turn budget is env.max_turns' }`), added to the unknown-setting error.
   */
  settingHints?: Readonly<Record<string, string>>;
  /**
   * For an env whose tasks are rows that can come from a file: the setting that takes that file
   * (`file` for the CLI's tasks env, `tasks` for a `defineEnv` env). A config's `tasks.task_file`
   * (the seed's spelling) fills it in; an env without one takes no rows, and `tasks.task_file`
   * is refused for it.
   */
  taskFileSetting?: string;
  aliases?: readonly string[];
  description?: string;
}

/**
 * An entry whose `create`/`check` get the settings typed by its schema:
 * `definePluginEntry({ settings: z.strictObject({...}), create: (settings) => ... })`.
 */
export function definePluginEntry<TSchema extends z.ZodType, TInstance>(
  entry: PluginEntry<TInstance, z.output<TSchema>> & { settings: TSchema },
): PluginEntry<TInstance, z.output<TSchema>> {
  return entry;
}

export interface PluginKinds {
  sandboxes: SandboxProviderV1;
  tools: ToolV1 | ToolV1[];
  parsers: ToolCallParserV1;
  servers: ServerV1;
  judges: JudgeV1 | GroupJudgeV1;
  envs: EnvV1<any>;
  sinks: TrajectorySinkV1;
}
export type PluginKind = keyof PluginKinds;

export const PLUGIN_KINDS: readonly PluginKind[] = [
  'sandboxes',
  'tools',
  'parsers',
  'servers',
  'judges',
  'envs',
  'sinks',
];

const KIND_LABEL: Record<PluginKind, string> = {
  sandboxes: 'sandbox provider',
  tools: 'tool',
  parsers: 'tool-call parser',
  servers: 'server',
  judges: 'judge',
  envs: 'environment',
  sinks: 'trajectory sink',
};

export type PluginManifest = {
  readonly specificationVersion: 'v1';
  /** Usually the npm package name. */
  readonly id: string;
  readonly version?: string;
  readonly description?: string;
  readonly toolsets?: Record<string, ToolsetDefinition>;
} & { readonly [K in PluginKind]?: Record<string, PluginEntry<PluginKinds[K], any>> };

const pluginMarker = Symbol.for('shears.plugin');

export function definePlugin(manifest: Omit<PluginManifest, 'specificationVersion'>): PluginManifest {
  if (!manifest.id || typeof manifest.id !== 'string') {
    throw new InvalidArgumentError({
      argument: 'id',
      value: manifest.id,
      message: 'definePlugin: "id" must be a non-empty string',
    });
  }
  const result = { specificationVersion: 'v1' as const, ...manifest };
  Object.defineProperty(result, pluginMarker, { value: true });
  return result;
}

export function isPlugin(value: unknown): value is PluginManifest {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string | symbol, unknown>;
  return (
    record[pluginMarker] === true || (record.specificationVersion === 'v1' && typeof record.id === 'string')
  );
}

interface Registered<TInstance> {
  id: string;
  pluginId: string;
  entry: PluginEntry<TInstance, any>;
  /** Warned once that its settings are unchecked (no schema). */
  warned?: boolean;
}

export interface LoadPluginOptions {
  /** Directory to resolve the package from (default: process.cwd()). */
  from?: string;
  /** Package export conditions, in priority order (default: import, node, default). */
  conditions?: readonly string[];
}

export interface Registry {
  use(plugin: PluginManifest): Registry;
  has(kind: PluginKind, id: string): boolean;
  list(kind: PluginKind): string[];
  plugins(): PluginManifest[];
  resolve<K extends PluginKind>(kind: K, id: string): PluginEntry<PluginKinds[K], unknown>;
  /**
   * The entry's settings parsed by its schema (InvalidSettingsError naming each field when they
   * do not fit), or as given when the entry declares no schema.
   */
  parseSettings(kind: PluginKind, id: string, settings?: Record<string, unknown>): unknown;
  /**
   * Creates an instance: settings parsed once (parseSettings), then `create`, then the instance's
   * `specificationVersion` checked against the contracts this kernel implements.
   */
  create<K extends PluginKind>(
    kind: K,
    id: string,
    settings?: Record<string, unknown>,
  ): Promise<PluginKinds[K]>;
  /**
   * The entry's own `check()` (settings parsed as for create); undefined when it has none.
   * A settings error is thrown, as create would.
   */
  check(
    kind: PluginKind,
    id: string,
    settings: Record<string, unknown>,
    context: Omit<PluginCheckContext, 'registry' | 'logger'>,
  ): Promise<readonly PluginCheckResult[] | undefined>;
  /**
   * Every toolset the registered plugins declare (`web`, `terminal`, `file`, a third-party
   * pack's own): the one table the CLI and `runGroup({ toolsets })` resolve toolset names in.
   */
  toolsets(): Record<string, ToolsetDefinition>;
  /** The id of the plugin that declared a toolset, or undefined. */
  toolsetOwner(name: string): string | undefined;
  /** Imports a plugin by npm package name or path and registers its default export. */
  load(specifier: string, options?: LoadPluginOptions): Promise<PluginManifest>;
}

export function createRegistry(options: { logger?: Logger } = {}): Registry {
  const logger = options.logger ?? silentLogger;
  const tables = new Map<PluginKind, Map<string, Registered<any>>>(
    PLUGIN_KINDS.map((kind) => [kind, new Map()]),
  );
  const aliases = new Map<PluginKind, Map<string, string>>(PLUGIN_KINDS.map((kind) => [kind, new Map()]));
  const manifests: PluginManifest[] = [];
  const toolsetTable: Record<string, ToolsetDefinition> = {};
  const toolsetOwners = new Map<string, string>();

  const canonical = (kind: PluginKind, id: string) => aliases.get(kind)!.get(id) ?? id;
  const lookup = (kind: PluginKind, id: string): Registered<any> => {
    const found = tables.get(kind)!.get(canonical(kind, id));
    if (!found) throw new NoSuchEntryError({ kind: KIND_LABEL[kind], id, available: registry.list(kind) });
    return found;
  };

  const registry: Registry = {
    use(plugin) {
      if (!isPlugin(plugin)) {
        throw new InvalidArgumentError({
          argument: 'plugin',
          value: plugin,
          message: 'registry.use: not a plugin manifest (use definePlugin)',
        });
      }
      if (manifests.some((existing) => existing.id === plugin.id)) return registry;
      checkToolsets(plugin, toolsetOwners);
      for (const kind of PLUGIN_KINDS) {
        const entries = plugin[kind];
        if (!entries) continue;
        const table = tables.get(kind)!;
        for (const [id, entry] of Object.entries(entries)) {
          const existing = table.get(id);
          if (existing) {
            throw new ShearsError(
              `Plugin "${plugin.id}" registers ${KIND_LABEL[kind]} "${id}", already registered by plugin "${existing.pluginId}"`,
              { code: 'SHEARS_DUPLICATE_ENTRY' },
            );
          }
          table.set(id, { id, pluginId: plugin.id, entry });
          for (const alias of entry.aliases ?? []) aliases.get(kind)!.set(alias, id);
        }
      }
      for (const [name, definition] of Object.entries(plugin.toolsets ?? {})) {
        toolsetTable[name] = definition;
        toolsetOwners.set(name, plugin.id);
      }
      manifests.push(plugin);
      return registry;
    },
    has(kind, id) {
      return tables.get(kind)!.has(canonical(kind, id));
    },
    list(kind) {
      return [...tables.get(kind)!.keys()].sort();
    },
    plugins() {
      return [...manifests];
    },
    resolve(kind, id) {
      return lookup(kind, id).entry;
    },
    parseSettings(kind, id, settings = {}) {
      const found = lookup(kind, id);
      const what = `${KIND_LABEL[kind]} "${found.id}"`;
      if (found.entry.settings)
        return parsePluginSettings(found.entry.settings, settings, what, found.entry.settingHints);
      const keys = Object.keys(settings);
      if (keys.length > 0 && !found.warned) {
        found.warned = true;
        logger.warn(
          `${what} (plugin "${found.pluginId}") declares no settings schema: its settings (${keys.join(', ')}) are passed to it unchecked`,
        );
      }
      return settings;
    },
    async create(kind, id, settings = {}) {
      const found = lookup(kind, id);
      const parsed = registry.parseSettings(kind, id, settings);
      const instance = await found.entry.create(parsed, { registry, logger });
      checkSpecification(kind, found, instance);
      return instance;
    },
    async check(kind, id, settings, context) {
      const found = lookup(kind, id);
      if (!found.entry.check) return undefined;
      const parsed = registry.parseSettings(kind, id, settings);
      return found.entry.check(parsed, { ...context, registry, logger });
    },
    toolsets() {
      return { ...toolsetTable };
    },
    toolsetOwner(name) {
      return toolsetOwners.get(name);
    },
    async load(specifier, loadOptions = {}) {
      const url = resolvePluginUrl(specifier, loadOptions);
      let module: Record<string, unknown>;
      try {
        module = (await import(url)) as Record<string, unknown>;
      } catch (cause) {
        throw new ShearsError(
          `Could not import plugin "${specifier}" (${url}): ${(cause as Error).message}`,
          {
            code: 'SHEARS_PLUGIN_LOAD',
            cause,
          },
        );
      }
      const manifest = module.default ?? module.plugin;
      if (!isPlugin(manifest)) {
        throw new ShearsError(
          `Package "${specifier}" does not export a shears plugin manifest as its default export (found ${typeof manifest})`,
          { code: 'SHEARS_PLUGIN_LOAD' },
        );
      }
      registry.use(manifest);
      return manifest;
    },
  };
  return registry;
}

/** The versions of each contract this kernel implements. */
const SUPPORTED_SPECIFICATIONS: readonly string[] = ['v1'];

/** What `create` returned implements a contract version this kernel knows (each tool of a list). */
function checkSpecification(kind: PluginKind, found: Registered<unknown>, instance: unknown): void {
  const instances = kind === 'tools' && Array.isArray(instance) ? instance : [instance];
  for (const item of instances) {
    const version = (item as { specificationVersion?: unknown } | null | undefined)?.specificationVersion;
    if (typeof version === 'string' && SUPPORTED_SPECIFICATIONS.includes(version)) continue;
    throw new ShearsError(
      `${KIND_LABEL[kind]} "${found.id}" of plugin "${found.pluginId}" created ${
        typeof item === 'object' && item !== null
          ? `an object with specificationVersion ${JSON.stringify(version)}`
          : String(item)
      }; this version of @shears/core implements ${KIND_LABEL[kind]} contract ${SUPPORTED_SPECIFICATIONS.join(', ')} (update the plugin or @shears/core)`,
      { code: 'SHEARS_UNSUPPORTED_SPECIFICATION' },
    );
  }
}

/** A manifest's toolsets: well-formed, and no name another plugin already declared. */
function checkToolsets(plugin: PluginManifest, owners: ReadonlyMap<string, string>): void {
  const toolsets: unknown = plugin.toolsets;
  if (toolsets === undefined) return;
  if (typeof toolsets !== 'object' || toolsets === null || Array.isArray(toolsets)) {
    throw new InvalidArgumentError({
      argument: 'toolsets',
      value: toolsets,
      message: `Plugin "${plugin.id}": "toolsets" must map toolset names to { tools: [...], includes?: [...] }`,
    });
  }
  const isNames = (value: unknown) =>
    Array.isArray(value) && value.every((entry) => typeof entry === 'string' && entry !== '');
  for (const [name, definition] of Object.entries(toolsets)) {
    const record = definition as Partial<ToolsetDefinition> | null;
    if (
      typeof record !== 'object' ||
      record === null ||
      !isNames(record.tools) ||
      (record.includes !== undefined && !isNames(record.includes))
    ) {
      throw new InvalidArgumentError({
        argument: `toolsets.${name}`,
        value: definition,
        message: `Plugin "${plugin.id}" declares toolset "${name}" as ${JSON.stringify(definition)}; expected { tools: ["tool_name", ...], includes?: ["toolset", ...] }`,
      });
    }
    const owner = owners.get(name);
    if (owner !== undefined) {
      throw new ShearsError(
        `Plugin "${plugin.id}" declares toolset "${name}", already declared by plugin "${owner}" (a tool joins an existing toolset through its own \`toolset\` field)`,
        { code: 'SHEARS_DUPLICATE_ENTRY' },
      );
    }
  }
}

const DEFAULT_CONDITIONS = ['import', 'node', 'default'];

function pickExport(target: unknown, conditions: readonly string[]): string | undefined {
  if (typeof target === 'string') return target;
  if (Array.isArray(target)) {
    for (const candidate of target) {
      const picked = pickExport(candidate, conditions);
      if (picked) return picked;
    }
    return undefined;
  }
  if (target && typeof target === 'object') {
    for (const [key, value] of Object.entries(target)) {
      if (conditions.includes(key)) {
        const picked = pickExport(value, conditions);
        if (picked) return picked;
      }
    }
  }
  return undefined;
}

/** Resolves a package name (optionally with a subpath) or a file path to an importable URL. */
export function resolvePluginUrl(specifier: string, options: LoadPluginOptions = {}): string {
  const from = resolvePath(options.from ?? process.cwd());
  const conditions = options.conditions ?? DEFAULT_CONDITIONS;
  if (specifier.startsWith('file:')) return specifier;
  if (specifier.startsWith('.') || isAbsolute(specifier)) {
    const path = resolvePath(from, specifier);
    if (!existsSync(path))
      throw new ShearsError(`Plugin path not found: ${path}`, { code: 'SHEARS_PLUGIN_LOAD' });
    if (statSync(path).isDirectory()) return resolvePackageDir(path, '.', conditions, specifier);
    return pathToFileURL(path).href;
  }
  const parts = specifier.split('/');
  const nameLength = specifier.startsWith('@') ? 2 : 1;
  const name = parts.slice(0, nameLength).join('/');
  const subpath = parts.length > nameLength ? `./${parts.slice(nameLength).join('/')}` : '.';
  if (!/^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/.test(name)) {
    throw new InvalidArgumentError({
      argument: 'plugin',
      value: specifier,
      message: `Not a valid npm package name: "${specifier}"`,
    });
  }
  let directory = from;
  for (;;) {
    const candidate = join(directory, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json')))
      return resolvePackageDir(candidate, subpath, conditions, specifier);
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  throw new ShearsError(
    `Plugin package "${name}" is not installed (searched node_modules from ${from} upwards). Install it with: pnpm add ${name}`,
    {
      code: 'SHEARS_PLUGIN_LOAD',
    },
  );
}

function resolvePackageDir(
  directory: string,
  subpath: string,
  conditions: readonly string[],
  specifier: string,
): string {
  const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as {
    exports?: unknown;
    module?: string;
    main?: string;
  };
  let target: string | undefined;
  if (manifest.exports !== undefined) {
    const exportsField = manifest.exports as Record<string, unknown>;
    const hasSubpaths =
      typeof exportsField === 'object' &&
      exportsField !== null &&
      Object.keys(exportsField).some((key) => key.startsWith('.'));
    const entry = hasSubpaths ? exportsField[subpath] : subpath === '.' ? exportsField : undefined;
    target = pickExport(entry, conditions);
  } else if (subpath === '.') {
    target = manifest.module ?? manifest.main ?? 'index.js';
  } else {
    target = subpath;
  }
  if (!target) {
    throw new ShearsError(
      `Package "${specifier}" exports nothing for "${subpath}" under conditions ${conditions.join(', ')}`,
      {
        code: 'SHEARS_PLUGIN_LOAD',
      },
    );
  }
  return pathToFileURL(join(directory, target)).href;
}
