// The `server` and `sandbox` sections as the registry's entries take them: the inference server's
// settings (camelCase, the API key read, the tokenizer folder made absolute), the parsers the agent
// loop uses when the server returns no native tool calls, and the sandbox provider's settings.
// What cannot be right whatever the env is refused here, before anything starts; what depends on
// the env (its preferred sandbox, the demo policy of the scripted server) is settled when the
// runtime creates them (runtime/compose.ts).
import { resolve } from 'node:path';
import { ConfigError } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';

export interface ServerPlan {
  /** The server entry's id (server.provider). */
  provider: string;
  /** The entry's settings, the API key among them: never printed or recorded. */
  settings: Record<string, unknown>;
  /** `server.tool_parser`: parses tool calls from the text whenever the server returns none. */
  parser: string | undefined;
  /** `server.fallback_parser`: parses text holding `<tool_call>` when the server returns none (unless `parser`, or `none`). */
  fallbackParser: string | undefined;
  /** The model's tokenizer folder (server.tokenizer), absolute. */
  tokenizer: string | undefined;
  temperature: number | undefined;
  maxTokens: number | undefined;
  /** Whether rollouts of this server carry per-token logprobs (undefined: a plugin's server, known once created). */
  recordsLogprobs: boolean | undefined;
}

export interface SandboxPlan {
  /** sandbox.provider; unset: the env's preferred backend, else local. */
  provider: string | undefined;
  image: string | undefined;
  settings: Record<string, unknown>;
}

/** Servers that apply the chat template themselves (token-in/token-out) and record tokens. */
export const MANAGED_SERVERS: readonly string[] = ['vllm', 'sglang'];

/** Server ids whose rollouts carry no per-token logprobs for the trainer (phase 1: chat). */
export const CHAT_SERVERS: readonly string[] = ['scripted', 'openai', 'openrouter', 'openai-compatible'];

/** Whether server.provider is one shears knows to record tokens and logprobs. */
export function recordsLogprobs(provider: string): boolean | undefined {
  if (MANAGED_SERVERS.includes(provider)) return true;
  if (CHAT_SERVERS.includes(provider)) return false;
  return undefined;
}

/** `server.tool_parser`, and `server.fallback_parser` unless tool_parser is set or it is `none`. */
export function parserIds(config: ShearsConfig): Pick<ServerPlan, 'parser' | 'fallbackParser'> {
  const { tool_parser: parser, fallback_parser: fallback } = config.server;
  // The fallback only matters without a parser; `none` turns it off.
  return { parser, fallbackParser: !parser && fallback !== 'none' ? fallback : undefined };
}

export function resolveServer(
  config: ShearsConfig,
  options: { apiKey: string | undefined; cwd: string },
): ServerPlan {
  const server = config.server;
  const common = {
    provider: server.provider,
    ...parserIds(config),
    tokenizer: server.tokenizer === undefined ? undefined : resolve(options.cwd, server.tokenizer),
    temperature: server.temperature,
    maxTokens: server.max_tokens,
    recordsLogprobs: recordsLogprobs(server.provider),
  };
  if (server.provider === 'scripted') {
    // The scripted demo policy talks to no endpoint: an endpoint or key set for it means
    // the user forgot server.provider, and would otherwise get the demo policy silently.
    for (const field of ['base_url', 'api_key', 'api_key_env'] as const) {
      if (server[field] === undefined) continue;
      throw new ConfigError({
        message: `server.${field}: set, but server.provider is "scripted" (the bundled demo policy, which uses no endpoint); set server.provider (openai, vllm, sglang, ...) or remove server.${field}`,
        issues: [
          { path: `server.${field}`, message: 'not used by the scripted server', value: server[field] },
        ],
      });
    }
    return {
      ...common,
      settings: {
        seed: config.env.seed,
        ...(server.model ? { model: server.model } : {}),
        ...(server.timeout_ms ? { timeoutMs: server.timeout_ms } : {}),
        ...server.settings,
      },
    };
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
  // Token-in/token-out servers apply the chat template and parse tool calls from the text
  // themselves: they get server.tokenizer and server.tool_parser.
  const managed = MANAGED_SERVERS.includes(server.provider);
  return {
    ...common,
    settings: {
      baseUrl: server.base_url,
      model: server.model,
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      ...(server.timeout_ms ? { timeoutMs: server.timeout_ms } : {}),
      ...(managed && common.tokenizer ? { tokenizer: common.tokenizer } : {}),
      ...(managed && server.tool_parser ? { parser: server.tool_parser } : {}),
      ...server.settings,
    },
  };
}

export function resolveSandbox(config: ShearsConfig): SandboxPlan {
  const { provider, image, settings } = config.sandbox;
  if (image && settings.image !== undefined) {
    throw new ConfigError({
      message: `sandbox.image and sandbox.settings.image are both set ("${image}" and ${JSON.stringify(settings.image)}); set one`,
      issues: [{ path: 'sandbox.settings.image', message: 'set twice', value: settings.image }],
    });
  }
  return { provider, image, settings };
}
