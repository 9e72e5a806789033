// What makes two runs the same run, so that `--resume` only continues a run of the same
// configuration: the env and its settings, the tasks, the model and its server, the sampling,
// the reward (judges), the tools, and the command's own shape (k, group size). It is written
// beside the JSONL (`runs/x.run.json`) when a run starts; a resume compares field by field and
// refuses, naming each difference. Secrets are never part of it (a rotated key is the same run).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type EnvItem,
  InvalidArgumentError,
  type Logger,
  resolvePluginUrl,
  type ScoredGroupRecord,
  safeParseJson,
} from '@shears/core';
import { isSecretField } from '@shears/core/internal';
import { cliVersion } from '../args.js';
import type { ShearsConfig } from '../config/config-schema.js';
import { identityPathFor } from '../plan/output-plan.js';
import { readGroupsForViewer } from '../viewer/build-viewer.js';
import { fileError } from './output-files.js';

interface RunIdentityFile {
  kind: 'shears.run';
  version: 1;
  command: string;
  createdAt: string;
  /** Dotted config paths (and `tasks`) → values; compared one by one on resume. */
  identity: Record<string, unknown>;
}

/** A copy without secret-named fields and without URL userinfo. */
function withoutSecrets(value: unknown): unknown {
  if (typeof value === 'string') {
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value;
    try {
      const url = new URL(value);
      url.username = '';
      url.password = '';
      for (const name of [...url.searchParams.keys()]) if (isSecretField(name)) url.searchParams.delete(name);
      return url.href;
    } catch {
      return value;
    }
  }
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort())
      if (!isSecretField(key) && !/^api_?key_?env$/i.test(key))
        out[key] = withoutSecrets((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

/**
 * Sandbox settings that shape what a rollout sees (image, limits, network, workdir, output caps);
 * where a sandbox runs and how it is pooled (Docker hosts, warm pool, idle reaping) does not.
 */
const SANDBOX_PLACEMENT_FIELDS = new Set(['hosts', 'poolSize', 'warmImages', 'idleTimeoutMs', 'reapOnStart']);

function sandboxSettingsIdentity(settings: Record<string, unknown>): unknown {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings))
    if (!SANDBOX_PLACEMENT_FIELDS.has(key)) kept[key] = value;
  return withoutSecrets(kept);
}

function judgeIdentity(judge: ShearsConfig['judge'] | ShearsConfig['group_judge']): unknown {
  if (!judge) return null;
  return withoutSecrets(judge);
}

/** `name@version` of the package holding a plugin, or the specifier when it has none. */
function pluginVersion(specifier: string, cwd: string): string {
  try {
    let directory = dirname(fileURLToPath(resolvePluginUrl(specifier, { from: cwd })));
    for (;;) {
      const manifest = join(directory, 'package.json');
      if (existsSync(manifest)) {
        const { name, version } = JSON.parse(readFileSync(manifest, 'utf8')) as {
          name?: string;
          version?: string;
        };
        if (name && version) return `${name}@${version}`;
      }
      const parent = dirname(directory);
      if (parent === directory) return specifier;
      directory = parent;
    }
  } catch {
    // Not resolvable here: loading the plugin reports it in its own words.
    return specifier;
  }
}

/**
 * The code a run's rewards and rollouts come from: the shears version (the built-in plugins are
 * released with it) and the version of each configured plugin package. An upgraded reward
 * function is another run.
 */
function runVersions(config: ShearsConfig, cwd: string): Record<string, string> {
  const versions: Record<string, string> = { shears: cliVersion() };
  for (const specifier of config.plugins) versions[specifier] = pluginVersion(specifier, cwd);
  return versions;
}

/** The identity of a run of `command` with `config` (k for evaluate, group size for process). */
export function runIdentity(
  config: ShearsConfig,
  command: 'process' | 'evaluate',
  cwd: string,
): Record<string, unknown> {
  const identity: Record<string, unknown> = {
    plugins: config.plugins,
    'env.name': config.env.name,
    'env.settings': withoutSecrets(config.env.settings),
    'env.seed': config.env.seed,
    'env.max_turns': config.env.max_turns ?? null,
    'env.toolsets': withoutSecrets(config.env.toolsets ?? null),
    // Tools added from plugins change what the model can do.
    'env.tools': withoutSecrets(config.env.tools ?? null),
    'env.action_policy': withoutSecrets(config.env.action_policy ?? null),
    'server.provider': config.server.provider,
    'server.model': config.server.model ?? null,
    'server.base_url': withoutSecrets(config.server.base_url ?? null),
    'server.temperature': config.server.temperature ?? null,
    'server.max_tokens': config.server.max_tokens ?? null,
    'server.tool_parser': config.server.tool_parser ?? null,
    'server.fallback_parser': config.server.fallback_parser,
    // Token-in/token-out servers apply its chat template: it shapes what the model sees.
    'server.tokenizer': config.server.tokenizer ?? null,
    'server.settings': withoutSecrets(config.server.settings),
    'sandbox.provider': config.sandbox.provider ?? null,
    'sandbox.image': config.sandbox.image ?? null,
    'sandbox.settings': sandboxSettingsIdentity(config.sandbox.settings),
    judge: judgeIdentity(config.judge),
    group_judge: judgeIdentity(config.group_judge),
  };
  // Compared only against records that have it (written before versions were recorded, a record
  // cannot tell which code produced it).
  identity.versions = runVersions(config, cwd);
  if (command === 'evaluate') identity['evaluate.k'] = config.evaluate.k;
  else {
    identity['env.group_size'] = config.env.group_size;
    identity['run.advantage'] = config.run.advantage;
    identity['run.all_equal_scores'] = config.run.all_equal_scores;
  }
  return identity;
}

/** Deterministic JSON (sorted keys) for comparing values. */
function canonicalJson(value: unknown): string {
  const sort = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(sort);
    if (item && typeof item === 'object') {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(item).sort()) out[key] = sort((item as Record<string, unknown>)[key]);
      return out;
    }
    return item;
  };
  return JSON.stringify(sort(value)) ?? 'undefined';
}

export function identityFile(command: string, identity: Record<string, unknown>): RunIdentityFile {
  return { kind: 'shears.run', version: 1, command, createdAt: new Date().toISOString(), identity };
}

function show(value: unknown): string {
  const text = canonicalJson(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/**
 * Checks that the run recorded beside `jsonlPath` is the run about to start; throws naming every
 * difference (or the missing record) otherwise.
 */
export function checkResumable(options: {
  jsonlPath: string;
  command: 'process' | 'evaluate';
  identity: Record<string, unknown>;
  cwd: string;
  /** How to start over instead, e.g. "--out OTHER.jsonl". */
  elsewhere: string;
}): void {
  const { jsonlPath, cwd } = options;
  const path = identityPathFor(jsonlPath);
  const shown = relative(cwd, jsonlPath) || jsonlPath;
  const refuse = (why: string) =>
    new InvalidArgumentError({
      argument: '--resume',
      value: jsonlPath,
      message: `cannot resume ${shown}: ${why}. Resume with the same settings, or start a new run (${options.elsewhere}, or --force to replace it)`,
    });
  if (!existsSync(path))
    throw refuse(
      `${relative(cwd, path) || path}, which says which run wrote it, is missing, so its results may belong to another configuration`,
    );
  const parsed = safeParseJson(readFileSync(path, 'utf8'), { source: path });
  const file = parsed.success ? (parsed.value as Partial<RunIdentityFile>) : undefined;
  if (file?.kind !== 'shears.run' || typeof file.identity !== 'object' || file.identity === null)
    throw refuse(`${relative(cwd, path) || path} is not a shears run record`);
  if (file.command !== options.command)
    throw refuse(`it was written by \`shears ${String(file.command)}\`, not \`shears ${options.command}\``);
  const before = file.identity as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(before), ...Object.keys(options.identity)])];
  // A field an older record lacks was not part of the identity then; unset now, it is the same.
  const unset = (value: unknown) =>
    value === undefined ||
    value === null ||
    (typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0);
  const differences = keys
    .filter((key) => !(!(key in before) && unset(options.identity[key])))
    .filter((key) => !(key === 'versions' && !(key in before)))
    .filter((key) => canonicalJson(before[key]) !== canonicalJson(options.identity[key]))
    .map((key) => `${key} was ${show(before[key])}, now ${show(options.identity[key])}`);
  if (differences.length > 0) throw refuse(`it was made by a different run: ${differences.join('; ')}`);
}

/** Refuses when a kept record's task is not the task the env gives now under the same id. */
export function checkSameTask(options: {
  jsonlPath: string;
  cwd: string;
  before: EnvItem;
  now: EnvItem;
  elsewhere: string;
}): void {
  if (canonicalJson(options.before) === canonicalJson(options.now)) return;
  const fields = [...new Set([...Object.keys(options.before), ...Object.keys(options.now)])].filter(
    (key) => canonicalJson(options.before[key]) !== canonicalJson(options.now[key]),
  );
  throw new InvalidArgumentError({
    argument: '--resume',
    value: options.jsonlPath,
    message: `cannot resume ${relative(options.cwd, options.jsonlPath) || options.jsonlPath}: task "${options.now.id}" is not the task it was run on (${fields.join(', ')} changed). Resume with the same tasks, or start a new run (${options.elsewhere}, or --force to replace it)`,
  });
}

/** Reads the groups of a run being resumed; lines that are not groups are named, never silently lost. */
export function readResumedGroups(
  path: string,
  options: { cwd: string; logger: Logger },
): ScoredGroupRecord[] {
  let read: ReturnType<typeof readGroupsForViewer>;
  try {
    read = readGroupsForViewer(path);
  } catch (error) {
    throw fileError(path, 'read', error, options.cwd);
  }
  if (read.skipped.length)
    options.logger.warn(
      `${relative(options.cwd, path) || path}: ${read.skipped.length} line(s) are not scored groups and are left out of the resumed file (lines ${read.skipped.slice(0, 10).join(', ')}${read.skipped.length > 10 ? ', …' : ''})`,
    );
  return read.groups;
}
