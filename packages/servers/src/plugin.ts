// The @shears/servers plugin manifest: servers `openai` (aliases `openrouter`,
// `openai-compatible`), `vllm`, `sglang` and `manager`, created from plain config settings. Each
// declares its settings schema, so the registry refuses a setting a server does not have
// (`extra_body` for `extraBody` would otherwise send every request without what was asked for)
// and names every wrong value; a tokenizer folder path and a parser name are resolved here.
import {
  definePlugin,
  definePluginEntry,
  type PluginContext,
  type ServerV1,
  type TokenizerV1,
  type ToolCallParserV1,
} from '@shears/core';
import { z } from 'zod';
import { createHfTokenizer, type HfTokenizerSettings } from './hf-tokenizer.js';
import { createSglangServer, createVllmServer, type ManagedServerSettings } from './managed-server.js';
import { createOpenAICompatibleServer } from './openai-compatible-server.js';
import { createServerManager, type ManagerEndpoint } from './server-manager.js';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const callable = <TFunction>(what: string) =>
  z.custom<TFunction>((value) => typeof value === 'function', { error: `expected ${what} (a function)` });
const isTokenizer = (value: unknown): value is TokenizerV1 =>
  isObject(value) && typeof value.applyChatTemplate === 'function';

const retrySchema = z.strictObject({
  maxRetries: z.int().min(0).optional(),
  baseDelayMs: z.number().min(0).optional(),
  maxDelayMs: z.number().min(0).optional(),
  maxRetryAfterMs: z.number().min(0).optional(),
  sleep: callable<(ms: number, signal?: AbortSignal) => Promise<void>>('a sleep function').optional(),
  random: callable<() => number>('a random source').optional(),
  now: callable<() => number>('a clock').optional(),
});

const connection = {
  baseUrl: z.string().min(1),
  model: z.string().min(1),
  timeoutMs: z.number().positive().optional(),
  retry: retrySchema.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  fetch: callable<typeof globalThis.fetch>('a fetch function').optional(),
};

const openaiSettingsSchema = z.strictObject({
  ...connection,
  apiKey: z.string().optional(),
  apiKeyEnv: z.string().min(1).optional(),
  provider: z.string().min(1).optional(),
  extraBody: z.record(z.string(), z.unknown()).optional(),
  stripReasoningFromHistory: z.boolean().optional(),
});

const managedShape = {
  ...connection,
  /** A folder with tokenizer.json + tokenizer_config.json, HfTokenizerSettings, or a TokenizerV1. */
  tokenizer: z.union(
    [
      z.string().min(1),
      z.custom<TokenizerV1>(isTokenizer),
      z.custom<HfTokenizerSettings>((value) => isObject(value) && !isTokenizer(value)),
    ],
    {
      error:
        'managed servers need "tokenizer": a folder with tokenizer.json + tokenizer_config.json, or { dir }',
    },
  ),
  /** A registered parser name or a ToolCallParserV1. */
  parser: z
    .union([
      z.string().min(1),
      z.custom<ToolCallParserV1>((value) => isObject(value) && typeof value.parse === 'function'),
    ])
    .optional(),
  reasoning: z.union([z.strictObject({ start: z.string(), end: z.string() }), z.literal(false)]).optional(),
  templateVariables: z.record(z.string(), z.unknown()).optional(),
  defaultMaxTokens: z.int().positive().optional(),
  newToolCallId: callable<() => string>('a tool-call id source').optional(),
};
const sglangSettingsSchema = z.strictObject(managedShape);
const vllmSettingsSchema = z.strictObject({
  ...managedShape,
  api: z.enum(['generate', 'completions']).optional(),
});

const endpointLimits = {
  id: z.string().min(1).optional(),
  maxConcurrency: z.int().positive().optional(),
  requestsPerMinute: z.number().positive().optional(),
  tokensPerMinute: z.number().positive().optional(),
  healthUrl: z.string().min(1).optional(),
};
const endpointSchema = z.union([
  z.strictObject({
    ...endpointLimits,
    server: z.custom<ServerV1>((value) => isObject(value) && typeof value.chat === 'function'),
  }),
  openaiSettingsSchema.extend({ ...endpointLimits, kind: z.literal('openai') }),
  vllmSettingsSchema.extend({ ...endpointLimits, kind: z.literal('vllm') }),
  sglangSettingsSchema.extend({ ...endpointLimits, kind: z.literal('sglang') }),
]);

const managerSettingsSchema = z.strictObject({
  endpoints: z.array(endpointSchema).min(1),
  failureThreshold: z.int().positive().optional(),
  cooldownMs: z.number().min(0).optional(),
  healthIntervalMs: z.number().min(0).optional(),
  healthTimeoutMs: z.number().positive().optional(),
  maxAttempts: z.int().positive().optional(),
  rateWindowMs: z.number().positive().optional(),
  retry: retrySchema.pick({ baseDelayMs: true, maxDelayMs: true, random: true, sleep: true }).optional(),
  fetch: connection.fetch,
  now: callable<() => number>('a clock').optional(),
});

type ManagedSettings = z.output<typeof sglangSettingsSchema>;

/** The tokenizer (a folder path or HfTokenizerSettings loaded here) and the parser (a name created through the registry). */
async function resolveManaged<TSettings extends ManagedSettings>(
  settings: TSettings,
  context: PluginContext,
): Promise<Omit<TSettings, 'tokenizer' | 'parser'> & Pick<ManagedServerSettings, 'tokenizer' | 'parser'>> {
  const { tokenizer, parser } = settings;
  return {
    ...settings,
    tokenizer: isTokenizer(tokenizer)
      ? tokenizer
      : createHfTokenizer(typeof tokenizer === 'string' ? { dir: tokenizer } : tokenizer),
    parser: typeof parser === 'string' ? await context.registry.create('parsers', parser) : parser,
  };
}

export default definePlugin({
  id: '@shears/servers',
  servers: {
    openai: definePluginEntry({
      aliases: ['openrouter', 'openai-compatible'],
      description:
        'OpenAI-compatible chat completions through the official SDK (OpenAI, OpenRouter, vLLM/SGLang chat, ...)',
      settings: openaiSettingsSchema,
      create: (settings) => createOpenAICompatibleServer(settings),
    }),
    vllm: definePluginEntry({
      description:
        'Managed token-in/token-out vLLM server (/generate or /v1/completions) recording tokens, masks and logprobs',
      settings: vllmSettingsSchema,
      create: async (settings, context) => createVllmServer(await resolveManaged(settings, context)),
    }),
    sglang: definePluginEntry({
      description:
        'Managed token-in/token-out SGLang server (/generate) recording tokens, masks and logprobs',
      settings: sglangSettingsSchema,
      create: async (settings, context) => createSglangServer(await resolveManaged(settings, context)),
    }),
    manager: definePluginEntry({
      description:
        'Several endpoints behind one server: least-busy routing, failover, health probes, rate limits, circuit breaker',
      settings: managerSettingsSchema,
      create: async (settings, context): Promise<ServerV1> => {
        const endpoints = await Promise.all(
          settings.endpoints.map(async (endpoint): Promise<ManagerEndpoint> => {
            if (!('kind' in endpoint) || endpoint.kind === 'openai') return endpoint;
            if (endpoint.kind === 'vllm') return resolveManaged(endpoint, context);
            return resolveManaged(endpoint, context);
          }),
        );
        return createServerManager({ ...settings, endpoints });
      },
    }),
  },
});
