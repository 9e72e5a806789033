// The composition root: one registry with the CLI's plugin, the built-in plugin packages that
// are installed, and the plugins the config names; then the env, server, sandbox provider and
// judges the run plan names, created through it, with errors that name the config field.

import {
  ConfigError,
  createRegistry,
  type EnvItem,
  type EnvV1,
  type GroupJudgeV1,
  InvalidArgumentError,
  InvalidSettingsError,
  isPlugin,
  type JudgeV1,
  type Logger,
  NoSuchEntryError,
  type PluginKind,
  type Registry,
  type RewardResult,
  type SandboxProviderV1,
  type SandboxSpec,
  type ServerV1,
  ShearsError,
} from '@shears/core';
import { describeValue, valueAtPath } from '@shears/core/internal';
import { judgeReward } from '@shears/judges';
import type { ShearsConfig } from '../config/config-schema.js';
import type { EnvPlan } from '../plan/env-plan.js';
import {
  SANDBOX_NATURE,
  SANDBOX_SPEC_UNSUPPORTED,
  type SandboxPlan,
  type ServerPlan,
  sandboxSettings,
} from '../plan/server-plan.js';
import cliPlugin from '../plugin.js';
import { BUILTIN_PLUGINS, importBuiltin, installCommand } from '../plugin-packages.js';

/** `judge` and `group_judge`, as the config gives them. */
type JudgesConfig = Pick<ShearsConfig, 'judge' | 'group_judge'>;

export interface PluginStatus {
  name: string;
  loaded: boolean;
  error?: string;
}

interface Composed {
  registry: Registry;
  plugins: PluginStatus[];
}

/** Built-in plugin packages that are not installed, per registry (named in unknown-id errors). */
const notInstalled = new WeakMap<Registry, string[]>();

export async function composeRegistry(
  config: { readonly plugins: readonly string[] },
  options: { cwd: string; logger: Logger; builtins?: readonly string[] },
): Promise<Composed> {
  const registry = createRegistry({ logger: options.logger });
  registry.use(cliPlugin);
  const plugins: PluginStatus[] = [];
  // Imported in parallel; registered in a fixed order so ids resolve the same way every run.
  const builtins = options.builtins ?? BUILTIN_PLUGINS;
  const imported = await Promise.allSettled(builtins.map((name) => importBuiltin(name, options.cwd)));
  const missing: string[] = [];
  imported.forEach((result, index) => {
    const name = builtins[index]!;
    try {
      if (result.status === 'rejected') throw result.reason;
      if (result.value === undefined) {
        missing.push(name);
        throw new Error(`not installed (${installCommand(name)})`);
      }
      if (!isPlugin(result.value)) throw new Error('no plugin manifest as default export');
      registry.use(result.value);
      plugins.push({ name, loaded: true });
    } catch (error) {
      plugins.push({ name, loaded: false, error: (error as Error).message.split('\n')[0] });
      options.logger.debug(`built-in plugin ${name} not available: ${(error as Error).message}`);
    }
  });
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
  notInstalled.set(registry, missing);
  return { registry, plugins };
}

/** Names the built-in plugin packages that are not installed, with the command that adds one. */
function notInstalledHint(registry: Registry): string {
  const missing = notInstalled.get(registry) ?? [];
  if (missing.length === 0) return '';
  return `. Not installed here: ${missing.join(', ')}; \`${installCommand('<package>')}\` in your project adds one`;
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
        message: `${field}: unknown ${cause.kind} "${id}" (allowed: ${available.join(', ') || 'none registered'}; add the package that provides it to "plugins")${notInstalledHint(registry)}`,
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
function settingsConfigError(error: InvalidSettingsError, settingsField: string): ConfigError {
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

export async function createEnv(
  registry: Registry,
  plan: Pick<EnvPlan, 'name' | 'settings' | 'judged'>,
): Promise<EnvV1> {
  const env = await createFromConfig(registry, 'envs', plan.name, 'env.name', plan.settings, 'env.settings');
  // A task file's rubrics are for the judge: without one they would be silently unused.
  const rubricTasks = (env as { rubricTasks?: () => string[] }).rubricTasks?.() ?? [];
  if (rubricTasks.length > 0 && !plan.judged)
    throw new ConfigError({
      message: `judge: required, because the task file gives rubrics for the judge (${rubricTasks.slice(0, 5).join('; ')}${rubricTasks.length > 5 ? '; …' : ''}); configure a judge (judge: { server: ..., weight: ... }) or remove the rubrics`,
      issues: [{ path: 'judge', message: 'required for tasks with a rubric', value: undefined }],
    });
  return env;
}

/** Optional extras an env may offer the CLI (the SWE env does). */
interface EnvExtras {
  /** A scripted policy that plays this env's tasks, used when `server.provider` is `scripted`. */
  demoPolicy?: () => Promise<unknown> | unknown;
  /** The sandbox backend the env's items need (e.g. `docker` for container images). */
  preferredSandbox?: string;
}

/**
 * The server the plan names. The scripted server plays the env's own demo policy when the env has
 * one (the SWE env does), unless server.settings gives another.
 */
export async function createServer(registry: Registry, plan: ServerPlan, env?: EnvV1): Promise<ServerV1> {
  let settings = plan.settings;
  if (plan.provider === 'scripted' && settings.policy === undefined) {
    const extras = env as (EnvV1 & EnvExtras) | undefined;
    const policy = typeof extras?.demoPolicy === 'function' ? await extras.demoPolicy() : undefined;
    if (policy) settings = { ...settings, policy };
  }
  return createFromConfig(registry, 'servers', plan.provider, 'server.provider', settings, 'server.settings');
}

export async function createSandboxProvider(
  registry: Registry,
  plan: SandboxPlan,
  env?: EnvV1,
): Promise<SandboxProviderV1> {
  const id = sandboxProviderId(plan, env);
  return createFromConfig(
    registry,
    'sandboxes',
    id,
    'sandbox.provider',
    sandboxSettings(plan, id),
    'sandbox.settings',
  );
}

/** sandbox.provider, else the env's preferred backend, else local. */
export function sandboxProviderId(plan: { provider?: string | undefined }, env?: EnvV1): string {
  const preferred = (env as (EnvV1 & EnvExtras) | undefined)?.preferredSandbox;
  return plan.provider ?? (typeof preferred === 'string' ? preferred : 'local');
}

/**
 * Checks the sandbox an env asks for (`env.sandboxSpec(item)`) against what the provider can
 * give, before any sandbox starts: an image, or `network: none`, that a local/ssh sandbox cannot
 * honour is a ConfigError (the task would run in the wrong place, or with network it must not
 * have); resource limits it cannot enforce are a warning, once.
 */
export function checkSandboxSpec(
  providerId: string,
  spec: SandboxSpec | undefined,
  context: { envName: string; warn: (message: string) => void; warned: Set<string> },
): void {
  const unsupported = SANDBOX_SPEC_UNSUPPORTED[providerId];
  if (!spec || !unsupported) return;
  const where = `the ${providerId} sandbox ${SANDBOX_NATURE[providerId]}`;
  if (spec.image && unsupported.includes('image')) {
    throw new ConfigError({
      message: `sandbox.provider: env ${context.envName} runs its tasks in the container image "${spec.image}", but ${where}; use sandbox.provider: docker`,
      issues: [{ path: 'sandbox.provider', message: "cannot run the env's image", value: providerId }],
    });
  }
  if (spec.network === 'none' && unsupported.includes('network')) {
    throw new ConfigError({
      message: `sandbox.provider: env ${context.envName} asks for a sandbox without network, but ${where}; use sandbox.provider: docker`,
      issues: [{ path: 'sandbox.provider', message: 'cannot cut the network', value: providerId }],
    });
  }
  const limits = Object.entries(spec.limits ?? {}).filter(([, value]) => value !== undefined);
  if (limits.length > 0 && unsupported.includes('limits') && !context.warned.has('limits')) {
    context.warned.add('limits');
    context.warn(
      `env ${context.envName} asks for resource limits (${limits.map(([key, value]) => `${key} ${value}`).join(', ')}) that the ${providerId} sandbox does not enforce; use sandbox.provider: docker to enforce them`,
    );
  }
}

/** Counts tokens as chat calls return, for tokens/s. */
export function observeServer(server: ServerV1, onTokens: (count: number) => void): ServerV1 {
  const wrapped: ServerV1 = {
    specificationVersion: 'v1',
    provider: server.provider,
    model: server.model,
    async chat(request) {
      const response = await server.chat(request);
      onTokens(response.usage?.totalTokens ?? 0);
      return response;
    },
    close: server.close ? () => server.close!() : undefined,
  };
  if (server.openSession) {
    wrapped.openSession = (options) => {
      const session = server.openSession!(options);
      return {
        chat: async (request) => {
          const response = await session.chat(request);
          onTokens(response.usage?.totalTokens ?? 0);
          return response;
        },
        tokenRecord: () => session.tokenRecord(),
        close: () => session.close(),
      };
    };
  }
  return wrapped;
}

interface ConfiguredJudges {
  /** `judge`: scores every rollout in its reward step. */
  judge?: { judge: JudgeV1; weight: number };
  /** `group_judge`: scores a group's rollouts together, passed to runGroup. */
  groupJudge?: { judge: GroupJudgeV1; weight: number };
  /** The judges' model servers, closed with the run. */
  servers: ServerV1[];
}

type JudgeSection = 'judge' | 'group_judge';

/** Settings of the judge factory, with `<section>.server` built and given as the judge's server. */
async function judgeSettings(
  registry: Registry,
  config: JudgesConfig,
  section: JudgeSection,
  servers: ServerV1[],
): Promise<Record<string, unknown>> {
  const { server, settings } = config[section]!;
  if (!server) return settings;
  if (settings.server !== undefined) {
    throw new ConfigError({
      message: `${section}.settings.server: the judge's server is already given by ${section}.server; set one of them`,
      issues: [{ path: `${section}.settings.server`, message: 'set twice', value: settings.server }],
    });
  }
  if (!server.base_url && server.provider !== 'scripted' && registry.has('servers', server.provider)) {
    throw new ConfigError({
      message: `${section}.server.base_url: required for ${section}.server.provider "${server.provider}" (e.g. https://api.openai.com/v1)`,
      issues: [{ path: `${section}.server.base_url`, message: 'required', value: undefined }],
    });
  }
  const instance = await createFromConfig(
    registry,
    'servers',
    server.provider,
    `${section}.server.provider`,
    {
      ...(server.base_url ? { baseUrl: server.base_url } : {}),
      model: server.model,
      ...(server.api_key ? { apiKey: server.api_key } : {}),
      ...(server.timeout_ms ? { timeoutMs: server.timeout_ms } : {}),
      ...server.settings,
    },
  ).catch((cause: unknown) => {
    if (ConfigError.isInstance(cause)) throw cause;
    throw new ConfigError({
      message: `${section}.server: ${(cause as Error).message}`,
      issues: [{ path: `${section}.server`, message: 'server could not be created', value: server.provider }],
      cause,
    });
  });
  servers.push(instance);
  // A panel's members that name no server of their own use this one.
  if (Array.isArray(settings.judges)) {
    return {
      ...settings,
      judges: settings.judges.map((member) =>
        member && typeof member === 'object' && !Array.isArray(member) && !('server' in member)
          ? { ...member, server: instance }
          : member,
      ),
    };
  }
  return { ...settings, server: instance };
}

async function createJudge(
  registry: Registry,
  config: JudgesConfig,
  section: JudgeSection,
  servers: ServerV1[],
): Promise<JudgeV1 | GroupJudgeV1> {
  const { id } = config[section]!;
  const settings = await judgeSettings(registry, config, section, servers);
  try {
    return await createFromConfig(registry, 'judges', id, `${section}.id`, settings);
  } catch (cause) {
    if (ConfigError.isInstance(cause)) throw cause;
    if (InvalidSettingsError.isInstance(cause)) throw settingsConfigError(cause, `${section}.settings`);
    if (InvalidArgumentError.isInstance(cause) || ShearsError.isInstance(cause)) {
      // The judges plugin names a setting as `judges.<id>.<setting>`; in the config it is `<section>.settings.<setting>`.
      let message = cause.message.replace(/\bjudges\.(?:rubric|panel|group)\b/g, `${section}.settings`);
      if (!config[section]!.server && /settings(?:\.judges\[\d+\])?\.server\b/.test(message))
        message += `; or give the judge's model server as ${section}.server: { provider, base_url, model }`;
      const field = InvalidArgumentError.isInstance(cause)
        ? cause.argument.replace(/^judges\.(?:rubric|panel|group)\b/, `${section}.settings`)
        : `${section}.settings`;
      // Name the value of the setting the error is about.
      const parts = field
        .slice(`${section}.settings.`.length)
        .split(/\.|\[(\d+)\]/)
        .filter((part) => part !== undefined && part !== '');
      const value = field.startsWith(`${section}.settings.`)
        ? valueAtPath(config[section]!.settings, parts)
        : undefined;
      if (value !== undefined && !field.endsWith('.server') && !message.includes('; '))
        message += ` (got ${describeValue(value, parts)})`;
      throw new ConfigError({
        message: message.includes(`${section}.settings`) ? message : `${section}.settings: ${message}`,
        issues: [{ path: field, message: 'invalid judge settings', value }],
        cause,
      });
    }
    throw cause;
  }
}

/**
 * `judge` and `group_judge`, created through the registry (the @shears/judges plugin registers
 * rubric, panel/jury and group/listwise). A per-rollout judge under `group_judge`, or a group
 * judge under `judge`, is a config error naming the field.
 */
export async function createJudges(registry: Registry, config: JudgesConfig): Promise<ConfiguredJudges> {
  const servers: ServerV1[] = [];
  const configured: ConfiguredJudges = { servers };
  try {
    if (config.judge) {
      const judge = await createJudge(registry, config, 'judge', servers);
      if (typeof (judge as JudgeV1).judge !== 'function') {
        throw new ConfigError({
          message: `judge.id: "${config.judge.id}" is a group judge (it scores a whole group at once); put it under group_judge`,
          issues: [{ path: 'judge.id', message: 'not a per-rollout judge', value: config.judge.id }],
        });
      }
      configured.judge = { judge: judge as JudgeV1, weight: config.judge.weight };
    }
    if (config.group_judge) {
      const judge = await createJudge(registry, config, 'group_judge', servers);
      if (typeof (judge as GroupJudgeV1).judgeGroup !== 'function') {
        throw new ConfigError({
          message: `group_judge.id: "${config.group_judge.id}" scores one rollout at a time; put it under judge (group judges: group, listwise)`,
          issues: [{ path: 'group_judge.id', message: 'not a group judge', value: config.group_judge.id }],
        });
      }
      configured.groupJudge = { judge: judge as GroupJudgeV1, weight: config.group_judge.weight };
    }
    return configured;
  } catch (error) {
    await Promise.all(servers.map((server) => Promise.resolve(server.close?.()).catch(() => undefined)));
    throw error;
  }
}

/**
 * The env with `judge` in its reward step: the env's reward and the verdict are computed
 * together and blended, `(1 - weight) × env reward + weight × judge score` (components
 * `env_reward` and `judge`, next to the env's own). The verdict joins `details.verdicts`; a failed
 * verdict throws a JudgeError, so the rollout is a judge failure, retried and never counted as 0.
 */
export function withJudge<TItem extends EnvItem>(
  env: EnvV1<TItem>,
  judge: JudgeV1,
  weight: number,
): EnvV1<TItem> {
  const own = new WeakMap<object, RewardResult>();
  const ownMs = new WeakMap<object, number>();
  const reward = judgeReward<TItem>(judge, {
    name: 'judge',
    weight,
    rewards: [
      {
        name: 'env_reward',
        weight: 1 - weight,
        async fn({ item, rollout, context }) {
          const started = performance.now();
          const result = await env.computeReward(item, rollout, context);
          ownMs.set(context, performance.now() - started);
          own.set(context, result);
          return result.score;
        },
      },
    ],
  });
  const computeReward: EnvV1<TItem>['computeReward'] = async (item, rollout, context) => {
    const started = performance.now();
    const judged = await reward(item, rollout, context);
    // The judge's share of the reward time (the run metrics' latency split): the whole reward
    // less the env's own verifier, which judgeReward runs before the judge.
    const judgeMs = Math.max(0, performance.now() - started - (ownMs.get(context) ?? 0));
    const envResult = own.get(context);
    const envVerdicts = envResult?.details?.verdicts;
    return {
      score: judged.score,
      components: { ...envResult?.components, ...judged.components },
      details: {
        ...envResult?.details,
        verdicts: [
          ...(Array.isArray(envVerdicts) ? envVerdicts : []),
          ...((judged.details?.verdicts as unknown[] | undefined) ?? []),
        ],
        judgeMs,
      },
    };
  };
  // Everything else (and any extras the CLI reads, like demoPolicy) is the env's own.
  return new Proxy(env, {
    get(target, key) {
      if (key === 'computeReward') return computeReward;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
