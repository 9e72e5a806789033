// The parts of one runtime, created from the plan through the registry's `create` (errors name
// the config field): the tools `env.tools` adds, the env, the sandbox provider (the env's
// preferred backend unless sandbox.provider says), the server (the env's demo policy for the
// scripted server), the parsers; in the order that refuses a bad config before anything costly
// (an env's set-up, a sandbox image) is done.
import {
  ConfigError,
  type EnvV1,
  NoSuchEntryError,
  type Registry,
  resolveToolset,
  type SandboxProviderV1,
  type ServerV1,
  type ToolCallParserV1,
  type ToolV1,
} from '@shears/core';
import { closestName } from '@shears/core/internal';
import { type EnvEntry, missingEnvError, type ToolRequest } from '../plan/env-plan.js';
import type { RunPlan } from '../plan/run-plan.js';
import type { SandboxPlan, ServerPlan } from '../plan/server-plan.js';
import { SANDBOX_NATURE, SANDBOX_SPEC_UNSUPPORTED } from './env-tools.js';
import type { RunRegistry } from './registry.js';

/** What parts are created through: the registry (its tools and toolsets) and its `create`. */
type PartRegistry = Pick<RunRegistry, 'registry' | 'create'>;

/** `env.tools`: each entry a tool id or a toolset name from the loaded plugins, created with its settings. */
async function createExtraTools(run: PartRegistry, requests: readonly ToolRequest[]): Promise<ToolV1[]> {
  const { registry } = run;
  const table = registry.toolsets();
  const tools: ToolV1[] = [];
  for (const { id, settings, field } of requests) {
    let names: string[];
    if (registry.has('tools', id)) names = [id];
    else if (Object.hasOwn(table, id)) {
      try {
        names = resolveToolset(id, table);
      } catch (cause) {
        if (!NoSuchEntryError.isInstance(cause)) throw cause;
        throw new ConfigError({ message: `${field}: toolset "${id}": ${cause.message}`, cause });
      }
      const missing = names.filter((name) => !registry.has('tools', name));
      if (missing.length > 0)
        throw new ConfigError({
          message: `${field}: toolset "${id}" (from ${registry.toolsetOwner(id) ?? 'a plugin'}) names ${missing.map((name) => `"${name}"`).join(', ')}, which no loaded plugin registers as a tool; add the package that provides it to "plugins"`,
          issues: [{ path: field, message: 'toolset names unregistered tools', value: id }],
        });
    } else {
      const known = [...registry.list('tools'), ...Object.keys(table)];
      const suggestion = closestName(id, known);
      throw new ConfigError({
        message: `${field}: no tool or toolset "${id}" in the loaded plugins${suggestion ? ` (did you mean "${suggestion}"?)` : ''} (tools: ${registry.list('tools').join(', ') || 'none'}; toolsets: ${Object.keys(table).sort().join(', ') || 'none'}); add the package that provides it to "plugins"`,
        issues: [{ path: field, message: 'unknown tool or toolset', value: id }],
      });
    }
    for (const name of names) {
      const created = await run.create('tools', name, field, settings, `${field}.settings`);
      tools.push(...(Array.isArray(created) ? created : [created]));
    }
  }
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name))
      throw new ConfigError({
        message: `env.tools: tool "${tool.name}" is added twice (once by name, once through a toolset?); list it once`,
        issues: [{ path: 'env.tools', message: 'duplicate tool', value: tool.name }],
      });
    seen.add(tool.name);
  }
  return tools;
}

/**
 * No env chosen (no env.name, no --env, no tasks.task_file): refused with the envs the loaded
 * plugins offer, never a silent default (a run of the demo would pass for the user's own env).
 */
export async function createEnv(
  run: Pick<RunRegistry, 'create' | 'registry'>,
  plan: EnvEntry,
): Promise<EnvV1> {
  if (plan.name === undefined) throw missingEnvError(run.registry);
  const settings =
    plan.taskFile === undefined
      ? plan.settings
      : withTaskFile(run.registry, plan.name, plan.settings, plan.taskFile);
  const env = await run.create('envs', plan.name, 'env.name', settings, 'env.settings');
  // A task file's rubrics are for the judge: without one they would be silently unused.
  const rubricTasks = (env as { rubricTasks?: () => string[] }).rubricTasks?.() ?? [];
  if (rubricTasks.length > 0 && !plan.judged)
    throw new ConfigError({
      message: `judge: required, because the task file gives rubrics for the judge (${rubricTasks.slice(0, 5).join('; ')}${rubricTasks.length > 5 ? '; …' : ''}); configure a judge (judge: { server: ..., weight: ... }) or remove the rubrics`,
      issues: [{ path: 'judge', message: 'required for tasks with a rubric', value: undefined }],
    });
  return env;
}

/**
 * `tasks.task_file` (the seed's spelling) for the env `name`: its file in the setting the env's
 * entry declares for rows from a file (`taskFileSetting`: a `defineEnv` env's `tasks`). An env that
 * declares none makes its own tasks, and the file is refused rather than silently unused.
 */
function withTaskFile(
  registry: Registry,
  name: string,
  settings: Record<string, unknown>,
  file: string,
): Record<string, unknown> {
  if (!registry.has('envs', name)) return settings; // refused by create, naming env.name
  const entry = registry.resolve('envs', name);
  const setting = entry.taskFileSetting;
  if (setting === undefined)
    throw new ConfigError({
      message: `tasks.task_file: the env "${name}" takes no task rows from a file: its tasks come from its own code (its plugin declares no tasks-file setting), so the file would be silently unused; remove tasks.task_file, or choose an env that reads rows (the tasks env, an env written with defineEnv)`,
      issues: [{ path: 'tasks.task_file', message: `env "${name}" takes no task file`, value: file }],
    });
  if (settings[setting] !== undefined)
    throw new ConfigError({
      message: `tasks.task_file: it is the "${name}" env's env.settings.${setting}, which is set too (${JSON.stringify(settings[setting])}); keep one of the two`,
      issues: [{ path: 'tasks.task_file', message: `conflicts with env.settings.${setting}`, value: file }],
    });
  return { ...settings, [setting]: file };
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
export async function createServer(
  run: Pick<RunRegistry, 'create'>,
  plan: ServerPlan,
  env?: EnvV1,
): Promise<ServerV1> {
  let settings = plan.settings;
  if (plan.provider === 'scripted' && settings.policy === undefined) {
    const extras = env as (EnvV1 & EnvExtras) | undefined;
    const policy = typeof extras?.demoPolicy === 'function' ? await extras.demoPolicy() : undefined;
    if (policy) settings = { ...settings, policy };
  }
  return run.create('servers', plan.provider, 'server.provider', settings, 'server.settings');
}

export async function createSandboxProvider(
  run: Pick<RunRegistry, 'create'>,
  plan: SandboxPlan,
  env?: EnvV1,
): Promise<SandboxProviderV1> {
  const id = sandboxProviderId(plan, env);
  return run.create('sandboxes', id, 'sandbox.provider', sandboxSettings(plan, id), 'sandbox.settings');
}

/**
 * The settings the sandbox provider `id` gets: `sandbox.settings` with `sandbox.image`. An image
 * for a sandbox that runs no image is a ConfigError.
 */
export function sandboxSettings(sandbox: SandboxPlan, id: string): Record<string, unknown> {
  const unsupported = SANDBOX_SPEC_UNSUPPORTED[id];
  if (sandbox.image && unsupported?.includes('image')) {
    throw new ConfigError({
      message: `sandbox.image: the ${id} sandbox runs no container image (it ${SANDBOX_NATURE[id]}); use sandbox.provider: docker for an image, or remove sandbox.image`,
      issues: [
        { path: 'sandbox.image', message: `not supported by the ${id} sandbox`, value: sandbox.image },
      ],
    });
  }
  return { ...(sandbox.image ? { image: sandbox.image } : {}), ...sandbox.settings };
}

/** sandbox.provider, else the env's preferred backend, else local. */
export function sandboxProviderId(plan: { provider?: string | undefined }, env?: EnvV1): string {
  const preferred = (env as (EnvV1 & EnvExtras) | undefined)?.preferredSandbox;
  return plan.provider ?? (typeof preferred === 'string' ? preferred : 'local');
}

/** Counts tokens as chat calls return, for tokens/s. */
function observeServer(server: ServerV1, onTokens: (count: number) => void): ServerV1 {
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

/** `server.tool_parser` and `server.fallback_parser`, resolved by name in the parsers registry. */
export async function resolveParsers(
  run: Pick<RunRegistry, 'create'>,
  server: Pick<ServerPlan, 'parser' | 'fallbackParser'>,
): Promise<{ parser?: ToolCallParserV1; fallbackParser?: ToolCallParserV1 }> {
  const parser = server.parser
    ? await run.create('parsers', server.parser, 'server.tool_parser', {})
    : undefined;
  const fallbackParser = server.fallbackParser
    ? await run.create('parsers', server.fallbackParser, 'server.fallback_parser', {})
    : undefined;
  return { parser, fallbackParser };
}

/** The created parts of a runtime, and how to release them. */
interface RuntimeParts {
  /** The env as created, with the judge (the run adds its tools, toolset and sandbox checks). */
  env: EnvV1;
  extraTools: ToolV1[];
  toolsets: ReturnType<Registry['toolsets']>;
  sandboxes: SandboxProviderV1;
  /** Which sandbox provider the env's items run in. */
  sandboxProvider: string;
  /** The server, its tokens counted as chat calls return. */
  server: ServerV1;
  parser: ToolCallParserV1 | undefined;
  fallbackParser: ToolCallParserV1 | undefined;
}

/**
 * Creates a runtime's parts: parsers and `env.tools` first (a typo is named before any env is
 * set up), then the env, the sandbox provider, the env's set-up (a scripted demo policy may need
 * its prepared tasks), the server. Each created part is handed to `own` as soon as it exists, so
 * that the caller releases it however this ends.
 */
export async function createRuntimeParts(
  run: PartRegistry,
  plan: Pick<RunPlan, 'env' | 'sandbox' | 'server' | 'session'>,
  options: {
    own: (close: () => Promise<void> | void) => void;
    onTokens: (count: number) => void;
    /** The env with the judge in its reward step (`judge`), or as it is. */
    judged: (env: EnvV1) => EnvV1;
  },
): Promise<RuntimeParts> {
  const { parser, fallbackParser } = await resolveParsers(run, plan.server);
  const extraTools = await createExtraTools(run, plan.env.tools);
  const created = await createEnv(run, plan.env);
  options.own(() => created.close?.());
  const env = options.judged(created);
  const sandboxes = await createSandboxProvider(run, plan.sandbox, env);
  options.own(() => sandboxes.close());
  await env.setup?.({ signal: plan.session.signal, logger: plan.session.logger });
  const server = await createServer(run, plan.server, env);
  options.own(() => server.close?.());
  return {
    env,
    extraTools,
    toolsets: run.registry.toolsets(),
    sandboxes,
    sandboxProvider: sandboxProviderId(plan.sandbox, env),
    server: observeServer(server, options.onTokens),
    parser,
    fallbackParser,
  };
}
