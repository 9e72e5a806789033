// The @shears/servers plugin manifest: servers `openai` (aliases `openrouter`,
// `openai-compatible`), `vllm`, `sglang` and `manager`, created from plain config settings
// (a tokenizer folder path and a parser name are resolved here).
import {
  definePlugin,
  InvalidArgumentError,
  type PluginContext,
  type ServerV1,
  type TokenizerV1,
  type ToolCallParserV1,
} from '@shears/core';
import { createHfTokenizer, type HfTokenizerSettings } from './hf-tokenizer.js';
import { createSglangServer, createVllmServer, type ManagedServerSettings } from './managed-server.js';
import {
  createOpenAICompatibleServer,
  type OpenAICompatibleServerSettings,
} from './openai-compatible-server.js';
import { createServerManager, type ManagerEndpoint, type ServerManagerSettings } from './server-manager.js';

function isTokenizer(value: unknown): value is TokenizerV1 {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as TokenizerV1).applyChatTemplate === 'function'
  );
}

/** `tokenizer`: a TokenizerV1, a folder path, or HfTokenizerSettings. `parser`: an instance or a registered parser name. */
async function resolveManaged(
  settings: Record<string, unknown>,
  context: PluginContext,
): Promise<ManagedServerSettings> {
  const raw = settings.tokenizer;
  let tokenizer: TokenizerV1;
  if (isTokenizer(raw)) tokenizer = raw;
  else if (typeof raw === 'string') tokenizer = createHfTokenizer({ dir: raw });
  else if (typeof raw === 'object' && raw !== null) tokenizer = createHfTokenizer(raw as HfTokenizerSettings);
  else {
    throw new InvalidArgumentError({
      argument: 'tokenizer',
      value: raw,
      message:
        'managed servers need "tokenizer": a folder with tokenizer.json + tokenizer_config.json, or { dir }',
    });
  }
  let parser = settings.parser as ToolCallParserV1 | string | undefined;
  if (typeof parser === 'string')
    parser = (await context.registry.create('parsers', parser)) as ToolCallParserV1;
  return { ...(settings as unknown as ManagedServerSettings), tokenizer, parser };
}

export default definePlugin({
  id: '@shears/servers',
  servers: {
    openai: {
      aliases: ['openrouter', 'openai-compatible'],
      description:
        'OpenAI-compatible chat completions through the official SDK (OpenAI, OpenRouter, vLLM/SGLang chat, ...)',
      create: (settings) =>
        createOpenAICompatibleServer(settings as unknown as OpenAICompatibleServerSettings),
    },
    vllm: {
      description:
        'Managed token-in/token-out vLLM server (/generate or /v1/completions) recording tokens, masks and logprobs',
      create: async (settings, context) =>
        createVllmServer({
          ...(await resolveManaged(settings, context)),
          api: settings.api as 'generate' | 'completions' | undefined,
        }),
    },
    sglang: {
      description:
        'Managed token-in/token-out SGLang server (/generate) recording tokens, masks and logprobs',
      create: async (settings, context) => createSglangServer(await resolveManaged(settings, context)),
    },
    manager: {
      description:
        'Several endpoints behind one server: least-busy routing, failover, health probes, rate limits, circuit breaker',
      create: async (settings, context): Promise<ServerV1> => {
        const endpoints = Array.isArray(settings.endpoints)
          ? (settings.endpoints as Array<Record<string, unknown>>)
          : [];
        const resolved: ManagerEndpoint[] = [];
        for (const endpoint of endpoints) {
          if (endpoint.kind === 'vllm' || endpoint.kind === 'sglang') {
            resolved.push({ ...endpoint, ...(await resolveManaged(endpoint, context)) } as ManagerEndpoint);
          } else resolved.push(endpoint as unknown as ManagerEndpoint);
        }
        return createServerManager({
          ...(settings as unknown as ServerManagerSettings),
          endpoints: resolved,
        });
      },
    },
  },
});
