// The registry a run creates its parts through: the CLI's own plugin, the built-in plugin packages
// that are installed (imported by plugin-packages.ts), and the plugins the config names; and
// `create`, registry.create with errors that name the config field. The run's sinks are created
// here, by the registry's `sinks` kind.
import {
  ConfigError,
  createRegistry,
  describeError,
  InvalidArgumentError,
  InvalidSettingsError,
  type JsonlSink,
  type Logger,
  NoSuchEntryError,
  type PluginKind,
  type PluginKinds,
  type Registry,
  ShearsError,
  type TrajectorySinkV1,
} from '@shears/core';
import { missingEnvError } from '../plan/env-plan.js';
import type { SinkRequest } from '../plan/output-plan.js';
import cliPlugin from '../plugin.js';
import { type ImportedBuiltins, importBuiltins } from '../plugin-packages.js';
import type { CommandContext } from '../session.js';

export interface PluginStatus {
  name: string;
  loaded: boolean;
  error?: string;
}

/**
 * Creates the registry entry `id` of `kind` with `settings`, its errors naming `field` (the id) and
 * `settingsField` (the settings) where they sit in the config.
 */
export type CreateEntry = <K extends PluginKind>(
  kind: K,
  id: string,
  field: string,
  settings: Record<string, unknown>,
  settingsField?: string,
) => Promise<PluginKinds[K]>;

/** The registry a run creates its parts through. */
export interface RunRegistry {
  registry: Registry;
  plugins: PluginStatus[];
  create: CreateEntry;
}

/** How to add the built-in plugin packages that are not installed, per registry (named in unknown-id errors). */
const notInstalled = new WeakMap<Registry, string>();

export async function composeRegistry(
  config: { readonly plugins: readonly string[] },
  options: { cwd: string; logger: Logger; imported: ImportedBuiltins },
): Promise<RunRegistry> {
  const registry = createRegistry({ logger: options.logger });
  registry.use(cliPlugin);
  const plugins: PluginStatus[] = [];
  // Registered in a fixed order so ids resolve the same way every run.
  for (const entry of options.imported.packages) {
    if (entry.plugin) {
      registry.use(entry.plugin);
      plugins.push({ name: entry.name, loaded: true });
    } else {
      plugins.push({ name: entry.name, loaded: false, error: entry.error });
      options.logger.debug(`built-in plugin ${entry.name} not available: ${entry.error}`);
    }
  }
  for (const [index, specifier] of config.plugins.entries()) {
    try {
      await registry.load(specifier, { from: options.cwd });
      plugins.push({ name: specifier, loaded: true });
    } catch (cause) {
      throw new ConfigError({
        message: `plugins[${index}]: could not load "${specifier}": ${(cause as Error).message}`,
        issues: [{ path: `plugins[${index}]`, message: 'plugin could not be loaded', value: specifier }],
        cause,
      });
    }
  }
  notInstalled.set(registry, options.imported.missingHint);
  return {
    registry,
    plugins,
    create: (kind, id, field, settings, settingsField) =>
      createFromConfig(registry, kind, id, field, settings, settingsField),
  };
}

/** The run's trajectory sinks, created (its JSONL, then each `sinks` entry); the output opens them. */
export interface CreatedSinks {
  /** The JSONL every group goes to (run.out, evaluate.out), through the CLI plugin's `jsonl` sink. */
  jsonl: JsonlSink;
  /** The sinks `sinks` names, each with how it is called in messages (`sinks[0] (my-sink)`). */
  configured: Array<{ sink: TrajectorySinkV1; label: string }>;
}

/**
 * Creates the run's sinks through the registry's `sinks` kind: its JSONL (`mode`: new, replace
 * with --force, append when resuming) and the `sinks` the config names, their settings checked.
 */
export async function createSinks(
  registry: Registry,
  plan: { output: { out: string }; sinks: readonly SinkRequest[]; cwd: string },
  mode: 'new' | 'replace' | 'append',
): Promise<CreatedSinks> {
  const jsonl = (await registry.create('sinks', 'jsonl', { path: plan.output.out, mode })) as JsonlSink;
  const configured: CreatedSinks['configured'] = [];
  for (const request of plan.sinks) {
    const label = `${request.field} (${request.id})`;
    const sink: TrajectorySinkV1 = await createFromConfig(
      registry,
      'sinks',
      request.id,
      request.field,
      { ...request.settings, ...(request.id === 'jsonl' ? { cwd: plan.cwd } : {}) },
      `${request.field}.settings`,
    ).catch((error: unknown) => {
      // A config error names its field already; any other refusal is told as the sink's.
      if (ConfigError.isInstance(error)) throw error;
      throw new ShearsError(`${label}: ${describeError(error).replace(/^Error: /, '')}`, {
        code: 'SHEARS_SINK',
        cause: error,
      });
    });
    configured.push({ sink, label });
  }
  return { jsonl, configured };
}

/**
 * registry.create, but an unknown id becomes a ConfigError naming the field, and a settings error
 * from the plugin (an InvalidArgumentError) becomes one naming `settingsField` (e.g.
 * `env.settings: The demo env has no setting "maxTurns" ...`).
 */
export async function createFromConfig<K extends PluginKind>(
  registry: Registry,
  kind: K,
  id: string,
  field: string,
  settings: Record<string, unknown>,
  settingsField?: string,
) {
  try {
    registry.resolve(kind, id);
  } catch (cause) {
    if (NoSuchEntryError.isInstance(cause)) {
      const available = registry.list(kind);
      throw new ConfigError({
        message: `${field}: unknown ${cause.kind} "${id}" (allowed: ${available.join(', ') || 'none registered'}; add the package that provides it to "plugins")${notInstalled.get(registry) ?? ''}`,
        issues: [{ path: field, message: `unknown ${cause.kind}`, value: id }],
        cause,
      });
    }
    throw cause;
  }
  try {
    return await registry.create(kind, id, settings);
  } catch (cause) {
    if (settingsField === undefined) throw cause;
    if (InvalidSettingsError.isInstance(cause)) throw settingsConfigError(cause, settingsField);
    if (InvalidArgumentError.isInstance(cause))
      throw new ConfigError({
        message: `${settingsField}: ${cause.message}`,
        issues: [{ path: `${settingsField}.${cause.argument}`, message: cause.message, value: cause.value }],
        cause,
      });
    // An error about the provider choice itself (a package the chosen provider needs is not
    // installed) already names its field, e.g. `sandbox.provider`: label it with that, not the settings.
    if (
      ConfigError.isInstance(cause) &&
      cause.issues.length > 0 &&
      cause.issues.every((issue) => issue.path === field)
    ) {
      if (cause.message.startsWith(`${field}:`)) throw cause;
      throw new ConfigError({ message: `${field}: ${cause.message}`, issues: cause.issues, cause });
    }
    // A plugin's own settings error knows its settings, not where they sit in the config.
    if (ConfigError.isInstance(cause) && !cause.message.startsWith(`${settingsField}`))
      throw new ConfigError({
        message: `${settingsField}: ${cause.message}`,
        issues: cause.issues.map((issue) => ({ ...issue, path: `${settingsField}.${issue.path}` })),
        cause,
      });
    throw cause;
  }
}

/** The registry's settings error, its fields named where they sit in the config: `env.settings.maxTurns: ...`. */
export function settingsConfigError(error: InvalidSettingsError, settingsField: string): ConfigError {
  const issues = error.issues.map((issue) => ({
    ...issue,
    path: issue.path === '(settings)' ? settingsField : `${settingsField}.${issue.path}`,
  }));
  return new ConfigError({
    message: issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'),
    issues,
    cause: error,
  });
}

/**
 * A run names its env: without `env.name` (and `--env`) it is refused before anything starts,
 * listing the envs the loaded plugins offer (the registry is composed only to list them).
 */
export async function requireEnvChosen(
  context: Pick<CommandContext, 'config' | 'io' | 'logger'>,
): Promise<void> {
  if (context.config.env.name !== undefined) return;
  const cwd = context.io.cwd;
  const registry = await composeRegistry(context.config, {
    cwd,
    logger: context.logger,
    imported: await importBuiltins(cwd),
  });
  throw missingEnvError(registry.registry);
}
