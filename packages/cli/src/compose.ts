// The composition root: one registry with the CLI's plugin, the built-in plugin packages that
// are installed, and the plugins the config names; then the env, server and sandbox provider
// the config asks for, with errors that name the config field.

import { resolve as resolvePath } from 'node:path';
import {
  ConfigError,
  createRegistry,
  type EnvV1,
  isPlugin,
  type Logger,
  NoSuchEntryError,
  type PluginKind,
  type Registry,
  type SandboxProviderV1,
  type ServerV1,
} from '@shears/core';
import type { ShearsConfig } from './config/config-schema.js';
import cliPlugin from './plugin.js';

/** Plugin packages shipped with shears, registered when installed. */
export const BUILTIN_PLUGINS = [
  '@shears/tools-terminal',
  '@shears/tools-file',
  '@shears/tools-web',
  '@shears/servers',
  '@shears/parsers',
  '@shears/judges',
  '@shears/grpo',
  '@shears/envs-swe',
] as const;

export interface PluginStatus {
  name: string;
  loaded: boolean;
  error?: string;
}

export interface Composed {
  registry: Registry;
  plugins: PluginStatus[];
}

async function importBuiltin(name: string): Promise<unknown> {
  // Literal specifiers per package would tie the build to each package's presence; a variable
  // keeps a missing or half-built plugin from breaking the CLI.
  const module = (await import(name)) as { default?: unknown; plugin?: unknown };
  return module.default ?? module.plugin;
}

export async function composeRegistry(
  config: ShearsConfig,
  options: { cwd: string; logger: Logger },
): Promise<Composed> {
  const registry = createRegistry({ logger: options.logger });
  registry.use(cliPlugin);
  const plugins: PluginStatus[] = [];
  // Imported in parallel; registered in a fixed order so ids resolve the same way every run.
  const imported = await Promise.allSettled(BUILTIN_PLUGINS.map((name) => importBuiltin(name)));
  imported.forEach((result, index) => {
    const name = BUILTIN_PLUGINS[index]!;
    try {
      if (result.status === 'rejected') throw result.reason;
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
  return { registry, plugins };
}

/** registry.create, but an unknown id becomes a ConfigError naming the field. */
export async function createFromConfig<K extends PluginKind>(
  registry: Registry,
  kind: K,
  id: string,
  field: string,
  settings: Record<string, unknown>,
) {
  try {
    registry.resolve(kind, id);
  } catch (cause) {
    if (NoSuchEntryError.isInstance(cause)) {
      const available = registry.list(kind);
      throw new ConfigError({
        message: `${field}: unknown ${cause.kind} "${id}" (allowed: ${available.join(', ') || 'none registered'}; add the package that provides it to "plugins")`,
        issues: [{ path: field, message: `unknown ${cause.kind}`, value: id }],
        cause,
      });
    }
    throw cause;
  }
  return registry.create(kind, id, settings);
}

export async function createEnv(registry: Registry, config: ShearsConfig): Promise<EnvV1> {
  return createFromConfig(registry, 'envs', config.env.name, 'env.name', {
    seed: config.env.seed,
    ...config.env.settings,
  });
}

/** Optional extras an env may offer the CLI (the SWE env does). */
interface EnvExtras {
  /** A scripted policy that plays this env's tasks, used when `server.provider` is `scripted`. */
  demoPolicy?: () => Promise<unknown> | unknown;
  /** The sandbox backend the env's items need (e.g. `docker` for container images). */
  preferredSandbox?: string;
}

export async function createServer(
  registry: Registry,
  config: ShearsConfig,
  apiKey: string | undefined,
  cwd = process.cwd(),
  env?: EnvV1,
): Promise<ServerV1> {
  const server = config.server;
  if (server.provider === 'scripted') {
    const extras = env as (EnvV1 & EnvExtras) | undefined;
    const policy = typeof extras?.demoPolicy === 'function' ? await extras.demoPolicy() : undefined;
    return createFromConfig(registry, 'servers', 'scripted', 'server.provider', {
      seed: config.env.seed,
      model: server.model,
      ...(policy ? { policy } : {}),
      ...server.settings,
    });
  }
  if (!server.base_url) {
    throw new ConfigError({
      message: `server.base_url: required for server.provider "${server.provider}" (e.g. http://127.0.0.1:8000/v1)`,
      issues: [{ path: 'server.base_url', message: 'required', value: undefined }],
    });
  }
  if (!server.model) {
    throw new ConfigError({
      message: `server.model: required for server.provider "${server.provider}"`,
      issues: [{ path: 'server.model', message: 'required', value: undefined }],
    });
  }
  return createFromConfig(registry, 'servers', server.provider, 'server.provider', {
    baseUrl: server.base_url,
    model: server.model,
    ...(apiKey ? { apiKey } : {}),
    ...(server.timeout_ms ? { timeoutMs: server.timeout_ms } : {}),
    // Token-in/token-out servers apply the chat template themselves.
    ...(server.tokenizer && ['vllm', 'sglang'].includes(server.provider)
      ? { tokenizer: resolvePath(cwd, server.tokenizer) }
      : {}),
    ...server.settings,
  });
}

export async function createSandboxProvider(
  registry: Registry,
  config: ShearsConfig,
  env?: EnvV1,
): Promise<SandboxProviderV1> {
  const preferred = (env as (EnvV1 & EnvExtras) | undefined)?.preferredSandbox;
  const id = config.sandbox.provider ?? (typeof preferred === 'string' ? preferred : 'local');
  return createFromConfig(registry, 'sandboxes', id, 'sandbox.provider', {
    ...(config.sandbox.image ? { image: config.sandbox.image } : {}),
    ...config.sandbox.settings,
  });
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
