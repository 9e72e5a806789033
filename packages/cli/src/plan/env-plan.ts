// The `env` section as the run uses it: the env entry and its settings, the turn budget, the
// action policy (`env.action_policy`, built here so a bad rule is refused before anything runs),
// the tools added from plugins (`env.tools`) and the toolset selection (`env.toolsets`). What needs
// no env is checked here, before the output guard, so a bad config is named first; what needs the
// env's own tools is checked when a group starts (runtime/env-tools.ts).
import { BUILTIN_DISTRIBUTIONS, ConfigError, type Registry } from '@shears/core';
import { closestName } from '@shears/core/internal';
import { type ActionPolicy, createActionPolicy } from '@shears/tools-terminal';
import type { ShearsConfig } from '../config/config-schema.js';

/** One `env.tools` entry: a tool id or a toolset name from the loaded plugins, with its settings. */
export interface ToolRequest {
  id: string;
  settings: Record<string, unknown>;
  /** Where it sits in the config (`env.tools[0]`), for errors. */
  field: string;
}

/** `env.toolsets`: which of the env's tools a group is offered. */
export interface ToolsetSelection {
  enabled?: string[];
  disabled?: string[];
  distribution?: string;
}

export interface EnvPlan {
  /** The env entry's id (env.name). */
  name: string;
  /** The settings the entry gets: env.settings with env.seed (and, for the tasks env, where shears runs). */
  settings: Record<string, unknown>;
  seed: number;
  groupSize: number;
  /** Longest token sequence of one rollout (serve/train register it with the trajectory API). */
  maxTokenLength: number;
  /** env.max_turns: the turn budget of each rollout (undefined: the env's own). */
  maxTurns: number | undefined;
  /** `env.action_policy`, checked before every tool call. */
  actionPolicy: ActionPolicy | undefined;
  /** `env.tools`: tools and toolsets from loaded plugins added to the env's own. */
  tools: readonly ToolRequest[];
  toolsets: ToolsetSelection | undefined;
  /** A judge scores the rollouts (a task file's rubrics need one). */
  judged: boolean;
  /**
   * `tasks.task_file` for an env other than the tasks env: the file goes into the env's own
   * tasks-file setting when it is created (refused for an env that takes no rows).
   */
  taskFile?: string;
}

/**
 * The settings the env entry gets: `env.settings` with `env.seed` (and, for the tasks env, the
 * directory its file is named relative to: where shears runs).
 */
export function envSettings(config: ShearsConfig, cwd?: string): Record<string, unknown> {
  return {
    seed: config.env.seed,
    ...(config.env.name === 'tasks' && cwd !== undefined ? { cwd } : {}),
    ...config.env.settings,
  };
}

/** The env entry: its id (undefined when none was chosen: refused when it is created), settings, judge. */
export type EnvEntry = Omit<Pick<EnvPlan, 'name' | 'settings' | 'judged' | 'taskFile'>, 'name'> & {
  name: string | undefined;
};

/** The env entry alone (what `shears prepare` and `shears doctor` create, without the run around it). */
export function envEntry(config: ShearsConfig, cwd: string): EnvEntry {
  // The tasks env took tasks.task_file as its file when the config was loaded.
  const taskFile = config.env.name === 'tasks' ? undefined : config.tasks?.task_file;
  return {
    name: config.env.name,
    settings: envSettings(config, cwd),
    judged: config.judge !== undefined,
    ...(taskFile === undefined ? {} : { taskFile }),
  };
}

function resolveEnv(config: ShearsConfig, cwd: string): EnvPlan {
  const env = config.env;
  checkToolsetsConfig(config);
  const entry = envEntry(config, cwd);
  // buildRunPlan refuses a run without one first, listing the loaded envs.
  if (entry.name === undefined)
    throw new ConfigError({
      message: 'env.name: no environment chosen; set env.name in the config or pass --env <name>',
      issues: [{ path: 'env.name', message: 'required', value: undefined }],
    });
  return {
    ...entry,
    name: entry.name,
    seed: env.seed,
    groupSize: env.group_size,
    maxTokenLength: env.max_token_length,
    maxTurns: env.max_turns,
    actionPolicy: buildActionPolicy(config),
    tools: (env.tools ?? []).map((entry, index) => ({
      ...(typeof entry === 'string' ? { id: entry, settings: {} } : entry),
      field: `env.tools[${index}]`,
    })),
    toolsets: env.toolsets,
  };
}

/** `env.action_policy` (snake_case config) → the terminal package's action policy. */
function buildActionPolicy(config: ShearsConfig): ActionPolicy | undefined {
  const policy = config.env.action_policy;
  if (!policy) return undefined;
  try {
    return createActionPolicy({
      ...(policy.commands
        ? {
            commands: {
              allow: policy.commands.allow,
              deny: policy.commands.deny,
              allowDynamic: policy.commands.allow_dynamic,
            },
          }
        : {}),
      ...(policy.tools ? { tools: policy.tools } : {}),
      ...(policy.command_arguments ? { commandArguments: policy.command_arguments } : {}),
    });
  } catch (cause) {
    throw new ConfigError({
      message: `env.action_policy: ${(cause as Error).message}`,
      issues: [{ path: 'env.action_policy', message: 'invalid action policy', value: policy }],
      cause,
    });
  }
}

/**
 * `env.toolsets` checks that need no env: a distribution name that exists, and not both
 * `distribution` and `enabled` (the distribution would silently win).
 */
function checkToolsetsConfig(config: ShearsConfig): void {
  const toolsets = config.env.toolsets;
  if (!toolsets) return;
  if (toolsets.distribution && !Object.hasOwn(BUILTIN_DISTRIBUTIONS, toolsets.distribution)) {
    const known = Object.keys(BUILTIN_DISTRIBUTIONS);
    const suggestion = closestName(toolsets.distribution, known);
    throw new ConfigError({
      message: `env.toolsets.distribution: unknown toolset distribution "${toolsets.distribution}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''} (allowed: ${known.join(', ')})`,
      issues: [{ path: 'env.toolsets.distribution', message: 'unknown name', value: toolsets.distribution }],
    });
  }
  if (toolsets.distribution && toolsets.enabled) {
    throw new ConfigError({
      message: `env.toolsets.enabled: a distribution (env.toolsets.distribution: ${toolsets.distribution}) picks the toolsets of each group, so enabled would be ignored; set one of them`,
      issues: [
        { path: 'env.toolsets.enabled', message: 'ignored with a distribution', value: toolsets.enabled },
      ],
    });
  }
}

/** An env beside the training env (the loop's held-out tasks, its capability data): an id and its settings. */
interface SideEnv {
  name: string;
  settings: Record<string, unknown>;
}

/**
 * The run's env, and the envs of the runs beside it: the same `env` section (seed, turn budget,
 * action policy) with another env, without the training env's added tools and toolset selection.
 */
export function resolveEnvs<TSides extends Record<string, SideEnv | undefined>>(
  config: ShearsConfig,
  options: { cwd: string; sides: TSides },
): { env: EnvPlan; sides: { [K in keyof TSides]: EnvPlan | undefined } } {
  const side = (env: SideEnv | undefined) =>
    env &&
    resolveEnv(
      {
        ...config,
        env: { ...config.env, name: env.name, settings: env.settings, toolsets: undefined, tools: undefined },
      },
      options.cwd,
    );
  const sides = Object.fromEntries(Object.entries(options.sides).map(([key, env]) => [key, side(env)]));
  return {
    env: resolveEnv(config, options.cwd),
    sides: sides as { [K in keyof TSides]: EnvPlan | undefined },
  };
}

/** No env chosen: refused, listing the envs the loaded plugins offer. */
export function missingEnvError(registry: Pick<Registry, 'list'>): ConfigError {
  const available = registry.list('envs');
  return new ConfigError({
    message: `env.name: no environment chosen; set env.name in the config or pass --env <name> (available: ${available.join(', ') || 'none'}; \`--env demo\` runs the built-in demo)`,
    issues: [{ path: 'env.name', message: 'required', value: undefined }],
  });
}
