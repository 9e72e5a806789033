// web_search providers, each speaking its service's real HTTP API: SearXNG (JSON API of a
// self-hosted instance), Brave Search, Tavily, Exa and Firecrawl. Keys and base URLs are read
// from the environment when a search runs, never at import.
import { Readable } from 'node:stream';
import { ConfigError, NoSuchEntryError, ServerError, safeParseJson } from '@shears/core';
import {
  isRetryableStatus,
  parseRetryAfter,
  type ResolvedRetrySettings,
  readBody,
  resolveRetrySettings,
  withRetries,
} from '@shears/core/http';
import { z } from 'zod';
import { WebToolError } from './errors.js';

export interface SearchHit {
  title: string;
  url: string;
  description: string;
}

export interface SearchRequestContext {
  fetch: typeof globalThis.fetch;
  env: Record<string, string | undefined>;
  signal?: AbortSignal;
  /** Overrides the provider's base URL. */
  baseUrl?: string;
  /** Retries of a rate-limited or failing provider (default: core's policy with 2 retries). */
  retry?: ResolvedRetrySettings;
}

export interface SearchProvider {
  readonly id: string;
  /** Environment variables that configure this provider; the first is required. */
  readonly envVars: readonly string[];
  /** Whether the environment holds what this provider needs. */
  configured(env: Record<string, string | undefined>): boolean;
  search(query: string, limit: number, context: SearchRequestContext): Promise<SearchHit[]>;
}

function requireEnv(
  provider: string,
  env: Record<string, string | undefined>,
  names: readonly string[],
): string {
  for (const name of names) {
    const value = env[name];
    if (value) return value;
  }
  throw new ConfigError({
    message: `web_search provider "${provider}" needs ${names.join(' or ')} to be set in the environment`,
    issues: [{ path: names[0]!, message: 'missing environment variable' }],
  });
}

/** The largest search response read (a page of results is a few hundred KB at most). */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** The retries of a search call when the tool's settings give none: 2, after the policy's backoff. */
export const DEFAULT_SEARCH_RETRIES = 2;

/**
 * One search call: a rate limit (429) or a server-side failure is retried by core's policy
 * (honouring Retry-After), within the tool's time limit; any other HTTP error is reported at once.
 */
async function callJson<TSchema extends z.ZodType>(
  provider: string,
  url: string,
  init: RequestInit,
  schema: TSchema,
  context: SearchRequestContext,
): Promise<z.output<TSchema>> {
  const retry = context.retry ?? resolveRetrySettings({ maxRetries: DEFAULT_SEARCH_RETRIES });
  const attempt = async () => {
    let response: Response;
    try {
      response = await context.fetch(url, { ...init, signal: context.signal });
    } catch (cause) {
      if (context.signal?.aborted) throw cause;
      throw new ServerError({
        message: `${provider} request failed: ${(cause as Error).message}`,
        endpoint: url,
        retryable: true,
        cause,
      });
    }
    // fetch has undone any Content-Encoding; the reader caps the size and honours the signal.
    const text = response.body
      ? (
          await readBody(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), {
            maxBytes: MAX_RESPONSE_BYTES,
            signal: context.signal,
            what: `${provider} search response`,
          })
        ).toString('utf8')
      : '';
    if (!response.ok)
      throw new ServerError({
        message: `${provider} answered HTTP ${response.status}: ${text.slice(0, 300)}`,
        endpoint: url,
        status: response.status,
        retryable: isRetryableStatus(response.status),
        retryAfterMs: parseRetryAfter(response.headers, retry.now()),
      });
    return text;
  };
  const text = await withRetries(attempt, retry, { signal: context.signal });
  const parsed = safeParseJson(text, { source: `${provider} search response`, schema });
  if (!parsed.success) throw parsed.error;
  return parsed.value;
}

const base = (value: string) => value.replace(/\/+$/, '');
const clip = (text: string | null | undefined, max = 500) => {
  const clean = (text ?? '').replace(/\s+/g, ' ').trim();
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
};

// Response schemas: only the fields read, each optional (`nullish`), as the APIs document them.
const searxngResponse = z.object({
  results: z
    .array(z.object({ url: z.string(), title: z.string().nullish(), content: z.string().nullish() }))
    .nullish(),
});
const braveResponse = z.object({
  web: z
    .object({
      results: z
        .array(z.object({ url: z.string(), title: z.string().nullish(), description: z.string().nullish() }))
        .nullish(),
    })
    .nullish(),
});
const tavilyResponse = z.object({
  results: z
    .array(z.object({ url: z.string(), title: z.string().nullish(), content: z.string().nullish() }))
    .nullish(),
});
const exaResponse = z.object({
  results: z
    .array(
      z.object({
        url: z.string(),
        title: z.string().nullish(),
        text: z.string().nullish(),
        summary: z.string().nullish(),
        highlights: z.array(z.string()).nullish(),
      }),
    )
    .nullish(),
});
const firecrawlHit = z.object({
  url: z.string(),
  title: z.string().nullish(),
  description: z.string().nullish(),
  markdown: z.string().nullish(),
});
const firecrawlResponse = z.object({
  success: z.boolean().nullish(),
  error: z.string().nullish(),
  // v2 answers `data: {web: [...]}`; v1 answered `data: [...]`.
  data: z.union([z.array(firecrawlHit), z.object({ web: z.array(firecrawlHit).nullish() })]).nullish(),
});

export const searxngProvider: SearchProvider = {
  id: 'searxng',
  envVars: ['SEARXNG_URL'],
  configured: (env) => Boolean(env.SEARXNG_URL),
  async search(query, limit, context) {
    const root = base(context.baseUrl ?? requireEnv('searxng', context.env, ['SEARXNG_URL']));
    const url = `${root}/search?${new URLSearchParams({ q: query, format: 'json' })}`;
    const body = await callJson(
      'SearXNG',
      url,
      { headers: { accept: 'application/json' } },
      searxngResponse,
      context,
    );
    return (body.results ?? [])
      .slice(0, limit)
      .map((hit) => ({ title: hit.title ?? '', url: hit.url, description: clip(hit.content) }));
  },
};

export const braveProvider: SearchProvider = {
  id: 'brave',
  envVars: ['BRAVE_API_KEY', 'BRAVE_SEARCH_API_KEY'],
  configured: (env) => Boolean(env.BRAVE_API_KEY || env.BRAVE_SEARCH_API_KEY),
  async search(query, limit, context) {
    const key = requireEnv('brave', context.env, ['BRAVE_API_KEY', 'BRAVE_SEARCH_API_KEY']);
    const root = base(context.baseUrl ?? context.env.BRAVE_SEARCH_URL ?? 'https://api.search.brave.com');
    // Brave returns at most 20 web results per request.
    const url = `${root}/res/v1/web/search?${new URLSearchParams({ q: query, count: String(Math.min(limit, 20)) })}`;
    const body = await callJson(
      'Brave',
      url,
      { headers: { accept: 'application/json', 'x-subscription-token': key } },
      braveResponse,
      context,
    );
    return (body.web?.results ?? [])
      .slice(0, limit)
      .map((hit) => ({ title: hit.title ?? '', url: hit.url, description: clip(hit.description) }));
  },
};

export const tavilyProvider: SearchProvider = {
  id: 'tavily',
  envVars: ['TAVILY_API_KEY', 'TAVILY_BASE_URL'],
  configured: (env) => Boolean(env.TAVILY_API_KEY),
  async search(query, limit, context) {
    const key = requireEnv('tavily', context.env, ['TAVILY_API_KEY']);
    const root = base(context.baseUrl ?? context.env.TAVILY_BASE_URL ?? 'https://api.tavily.com');
    const body = await callJson(
      'Tavily',
      `${root}/search`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        // hermes-agent sends the key in the body; current Tavily also takes the bearer header.
        body: JSON.stringify({
          api_key: key,
          query,
          max_results: Math.min(limit, 20),
          search_depth: 'basic',
          include_answer: false,
        }),
      },
      tavilyResponse,
      context,
    );
    return (body.results ?? [])
      .slice(0, limit)
      .map((hit) => ({ title: hit.title ?? '', url: hit.url, description: clip(hit.content) }));
  },
};

export const exaProvider: SearchProvider = {
  id: 'exa',
  envVars: ['EXA_API_KEY', 'EXA_BASE_URL'],
  configured: (env) => Boolean(env.EXA_API_KEY),
  async search(query, limit, context) {
    const key = requireEnv('exa', context.env, ['EXA_API_KEY']);
    const root = base(context.baseUrl ?? context.env.EXA_BASE_URL ?? 'https://api.exa.ai');
    const body = await callJson(
      'Exa',
      `${root}/search`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({
          query,
          numResults: Math.min(limit, 100),
          type: 'auto',
          contents: { highlights: true },
        }),
      },
      exaResponse,
      context,
    );
    return (body.results ?? []).slice(0, limit).map((hit) => ({
      title: hit.title ?? '',
      url: hit.url,
      description: clip(hit.highlights?.join(' … ') || hit.summary || hit.text),
    }));
  },
};

export const firecrawlProvider: SearchProvider = {
  id: 'firecrawl',
  envVars: ['FIRECRAWL_API_KEY', 'FIRECRAWL_API_URL'],
  configured: (env) => Boolean(env.FIRECRAWL_API_KEY),
  async search(query, limit, context) {
    const key = requireEnv('firecrawl', context.env, ['FIRECRAWL_API_KEY']);
    const root = base(context.baseUrl ?? context.env.FIRECRAWL_API_URL ?? 'https://api.firecrawl.dev');
    const body = await callJson(
      'Firecrawl',
      `${root}/v2/search`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, limit: Math.min(limit, 100) }),
      },
      firecrawlResponse,
      context,
    );
    if (body.success === false)
      throw new WebToolError(`Firecrawl search failed: ${body.error ?? 'unknown error'}`);
    const hits = Array.isArray(body.data) ? body.data : (body.data?.web ?? []);
    return hits.slice(0, limit).map((hit) => ({
      title: hit.title ?? '',
      url: hit.url,
      description: clip(hit.description ?? hit.markdown),
    }));
  },
};

export const SEARCH_PROVIDERS: Readonly<Record<string, SearchProvider>> = {
  firecrawl: firecrawlProvider,
  tavily: tavilyProvider,
  exa: exaProvider,
  brave: braveProvider,
  searxng: searxngProvider,
};

/**
 * The provider to use: the one named (settings, or SHEARS_WEB_SEARCH_PROVIDER), else the first
 * configured one in the order firecrawl, tavily, exa, brave, searxng.
 */
export function selectSearchProvider(
  name: string | undefined,
  env: Record<string, string | undefined>,
): SearchProvider {
  const wanted = name ?? env.SHEARS_WEB_SEARCH_PROVIDER;
  if (wanted) {
    const provider = SEARCH_PROVIDERS[wanted.toLowerCase()];
    if (!provider)
      throw new NoSuchEntryError({
        kind: 'web_search provider',
        id: wanted,
        available: Object.keys(SEARCH_PROVIDERS),
      });
    return provider;
  }
  const found = Object.values(SEARCH_PROVIDERS).find((provider) => provider.configured(env));
  if (found) return found;
  throw new ConfigError({
    message: `No web_search provider is configured: set one of ${Object.values(SEARCH_PROVIDERS)
      .map((provider) => provider.envVars[0])
      .join(', ')} (or name a provider in the settings)`,
  });
}
