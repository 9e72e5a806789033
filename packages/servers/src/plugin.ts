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

const OPENAI_SETTINGS = [
  'baseUrl',
  'model',
  'apiKey',
  'apiKeyEnv',
  'provider',
  'timeoutMs',
  'retry',
  'extraBody',
  'headers',
  'stripReasoningFromHistory',
  'fetch',
] as const;
const MANAGED_SETTINGS = [
  'baseUrl',
  'model',
  'tokenizer',
  'parser',
  'reasoning',
  'templateVariables',
  'defaultMaxTokens',
  'timeoutMs',
  'retry',
  'headers',
  'fetch',
  'newToolCallId',
] as const;

/** Edit distance, for a "did you mean" on a misspelt setting. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const kept = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = kept;
    }
  }
  return row[b.length]!;
}

/**
 * A setting the server does not have is refused, never ignored: `extra_body` instead of
 * `extraBody` would otherwise send every request without what the user asked for.
 */
function refuseUnknownSettings(
  server: string,
  settings: Record<string, unknown>,
  allowed: readonly string[],
) {
  for (const key of Object.keys(settings)) {
    if (allowed.includes(key)) continue;
    const squash = (text: string) => text.toLowerCase().replace(/[_-]/g, '');
    const near = allowed.find((name) => squash(name) === squash(key) || distance(name, key) <= 2);
    throw new InvalidArgumentError({
      argument: key,
      value: settings[key],
      message: `server "${server}" has no setting "${key}"${near ? ` (did you mean "${near}"?)` : ''}; its settings: ${allowed.filter((name) => !['fetch', 'newToolCallId', 'baseUrl', 'model'].includes(name)).join(', ')}`,
    });
  }
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
      create: (settings) => {
        refuseUnknownSettings('openai', settings, OPENAI_SETTINGS);
        return createOpenAICompatibleServer(settings as unknown as OpenAICompatibleServerSettings);
      },
    },
    vllm: {
      description:
        'Managed token-in/token-out vLLM server (/generate or /v1/completions) recording tokens, masks and logprobs',
      create: async (settings, context) => {
        refuseUnknownSettings('vllm', settings, [...MANAGED_SETTINGS, 'api']);
        return createVllmServer({
          ...(await resolveManaged(settings, context)),
          api: settings.api as 'generate' | 'completions' | undefined,
        });
      },
    },
    sglang: {
      description:
        'Managed token-in/token-out SGLang server (/generate) recording tokens, masks and logprobs',
      create: async (settings, context) => {
        refuseUnknownSettings('sglang', settings, MANAGED_SETTINGS);
        return createSglangServer(await resolveManaged(settings, context));
      },
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
