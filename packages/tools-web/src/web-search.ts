// web_search: one query to the configured provider, answered in hermes-agent's shape
// `{"success": true, "data": {"web": [{title, url, description, position}]}}`.
import { defineTool, ShearsError, type ToolV1 } from '@shears/core';
import { type RetrySettings, resolveRetrySettings } from '@shears/core/http';
import { z } from 'zod';
import { DEFAULT_SEARCH_RETRIES, type SearchProvider, selectSearchProvider } from './search-providers.js';

const WEB_SEARCH_DESCRIPTION =
  'Search the web for information on any topic. Returns up to 5 relevant results with titles, URLs, and descriptions.';

export const webSearchJsonSchema = {
  type: 'object',
  properties: {
    query: { type: 'string', description: 'The search query to look up on the web' },
    limit: {
      type: 'integer',
      description: 'Maximum number of results to return (default: 5, max: 100)',
      default: 5,
      minimum: 1,
      maximum: 100,
    },
  },
  required: ['query'],
} as const;

export const webSearchInputSchema = z.object({
  query: z.string().min(1, 'query must not be empty'),
  limit: z
    .preprocess((value) => {
      const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      return typeof number === 'number' && Number.isFinite(number)
        ? Math.min(100, Math.max(1, Math.trunc(number)))
        : 5;
    }, z.number().int())
    .optional(),
});
export type WebSearchArgs = z.output<typeof webSearchInputSchema>;

export interface WebSearchSettings {
  /** `searxng`, `brave`, `tavily`, `exa` or `firecrawl`; default: SHEARS_WEB_SEARCH_PROVIDER, else the first configured. */
  provider?: string;
  /** Overrides the provider's API base URL. */
  baseUrl?: string;
  /** Environment to read keys from (default: process.env, read at each call). */
  env?: Record<string, string | undefined>;
  fetch?: typeof globalThis.fetch;
  /** Request timeout in milliseconds (default 60 000, as hermes-agent), retries included. */
  timeoutMs?: number;
  /**
   * Retries of a rate limit (429) or a provider failure (5xx, connection): core's policy, 2
   * retries by default, Retry-After honoured up to `maxRetryAfterMs`.
   */
  retry?: RetrySettings;
  /** An extra provider implementation, used when `provider` names it. */
  customProvider?: SearchProvider;
}

export function createWebSearchTool(settings: WebSearchSettings = {}): ToolV1<WebSearchArgs> {
  const retry = resolveRetrySettings(settings.retry, { maxRetries: DEFAULT_SEARCH_RETRIES });
  return defineTool<WebSearchArgs>({
    name: 'web_search',
    description: WEB_SEARCH_DESCRIPTION,
    inputSchema: webSearchInputSchema,
    jsonSchema: webSearchJsonSchema,
    toolset: 'web',
    maxResultChars: 100_000,
    async execute(args, context) {
      const env = settings.env ?? process.env;
      try {
        const provider =
          settings.customProvider &&
          (settings.provider === undefined || settings.provider === settings.customProvider.id)
            ? settings.customProvider
            : selectSearchProvider(settings.provider, env);
        const timeout = AbortSignal.timeout(settings.timeoutMs ?? 60_000);
        const hits = await provider.search(args.query, args.limit ?? 5, {
          fetch: settings.fetch ?? globalThis.fetch,
          env,
          baseUrl: settings.baseUrl,
          retry,
          signal: AbortSignal.any([context.signal, timeout]),
        });
        const web = hits.map((hit, index) => ({
          title: hit.title,
          url: hit.url,
          description: hit.description,
          position: index + 1,
        }));
        const data = { success: true, data: { web } };
        return {
          content: JSON.stringify(data, null, 2),
          data: { provider: provider.id, results: web.length },
        };
      } catch (error) {
        const message =
          ShearsError.isInstance(error) || error instanceof Error ? error.message : String(error);
        return {
          content: JSON.stringify({ error: `Error searching web: ${message}` }, null, 2),
          isError: true,
        };
      }
    },
  });
}
