// web_extract: fetch up to five URLs under the SSRF guard and return each page's main content
// as markdown, in hermes-agent's shape `{"results": [{url, title, content, error}]}`.
import { defineTool, type ToolV1 } from '@shears/core';
import { z } from 'zod';
import { WebToolError } from './errors.js';
import { htmlToMarkdown } from './html-to-markdown.js';
import { createHostRateLimiter, type HostRateLimiter } from './rate-limit.js';
import { safeFetch } from './safe-fetch.js';
import { createSsrfGuard, type HostResolver } from './ssrf-guard.js';

const WEB_EXTRACT_DESCRIPTION =
  'Extract content from web page URLs. Returns page content in markdown format (the main text of the page, without navigation, ads or scripts). ' +
  'Works with HTML pages, plain text and JSON. Pass up to 5 URLs at once. If a URL fails or times out, try another source.';

export const webExtractJsonSchema = {
  type: 'object',
  properties: {
    urls: {
      type: 'array',
      items: { type: 'string' },
      description: 'List of URLs to extract content from (max 5 URLs per call)',
      maxItems: 5,
    },
  },
  required: ['urls'],
} as const;

export const webExtractInputSchema = z.object({
  urls: z.array(z.string()).min(1, 'urls must name at least one URL'),
});
export type WebExtractArgs = z.output<typeof webExtractInputSchema>;

export interface WebExtractSettings {
  /** The SSRF guard (default on): set `enabled: false` only where every URL is trusted. */
  ssrf?: { enabled?: boolean; allowlist?: readonly string[]; resolver?: HostResolver };
  /** Per-URL fetch timeout (default 30 000 ms). */
  timeoutMs?: number;
  /** Redirects followed per URL (default 5). */
  maxRedirects?: number;
  /** Largest response body read (default 5 MiB). */
  maxBytes?: number;
  /** Longest content returned per page (default 100 000 characters). */
  maxContentChars?: number;
  /** Minimum spacing between requests to one host, redirect hops included (default 500 ms; 0 disables). */
  minIntervalMsPerHost?: number;
  /** How long an extracted page is reused (default 15 minutes; 0 disables the cache). */
  cacheTtlMs?: number;
  cacheMaxEntries?: number;
  userAgent?: string;
  /** Extra trusted CA certificates (PEM) for intranet sites; public CAs stay trusted. */
  ca?: string | readonly string[];
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface ExtractResult {
  url: string;
  title: string;
  content: string;
  error?: string;
}

const MAX_URLS = 5;

// Secret-looking tokens in a URL: fetching it would hand the secret to a third party.
const SECRET_IN_URL =
  /(sk-[A-Za-z0-9_-]{20,}|sk-ant-[A-Za-z0-9_-]{20,}|ghp_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})/;

function decodeFully(url: string): string {
  let current = url;
  for (let round = 0; round < 3; round++) {
    try {
      const next = decodeURIComponent(current);
      if (next === current) break;
      current = next;
    } catch {
      break;
    }
  }
  return current;
}

function mediaType(contentType: string): string {
  return contentType.split(';')[0]!.trim().toLowerCase();
}

function charsetOf(contentType: string): string {
  const match = /charset=["']?([\w-]+)/i.exec(contentType);
  return match?.[1]?.toLowerCase() ?? 'utf-8';
}

function decodeBody(body: Buffer, contentType: string): string {
  try {
    return new TextDecoder(charsetOf(contentType)).decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

/** A fetched body as markdown, by content type; other types are refused. */
export function bodyToMarkdown(
  body: Buffer,
  contentType: string,
  url: string,
): { title: string; content: string } {
  const type = mediaType(contentType);
  const text = decodeBody(body, contentType);
  if (
    type === 'text/html' ||
    type === 'application/xhtml+xml' ||
    (type === '' && /^\s*<(!doctype html|html)/i.test(text))
  ) {
    const page = htmlToMarkdown(text, url);
    return { title: page.title, content: page.markdown };
  }
  if (type === 'application/json' || type.endsWith('+json')) {
    let pretty = text;
    try {
      pretty = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // not valid JSON after all: show it as it came
    }
    return { title: '', content: `\`\`\`json\n${pretty}\n\`\`\`` };
  }
  if (type.startsWith('text/')) return { title: '', content: text.trim() };
  throw new WebToolError(
    `Unsupported content type "${type || 'unknown'}" at ${url} (supported: HTML, plain text, JSON)`,
    { url },
  );
}

export function createWebExtractTool(settings: WebExtractSettings = {}): ToolV1<WebExtractArgs> {
  const guard = createSsrfGuard(settings.ssrf);
  const limiter: HostRateLimiter = createHostRateLimiter({
    minIntervalMs: settings.minIntervalMsPerHost ?? 500,
    now: settings.now,
    sleep: settings.sleep,
  });
  const now = settings.now ?? Date.now;
  const ttl = settings.cacheTtlMs ?? 15 * 60_000;
  const cacheMax = settings.cacheMaxEntries ?? 100;
  const cache = new Map<string, { expires: number; result: ExtractResult }>();
  const maxChars = settings.maxContentChars ?? 100_000;

  const extractOne = async (url: string, signal: AbortSignal): Promise<ExtractResult> => {
    if (SECRET_IN_URL.test(decodeFully(url))) {
      return {
        url,
        title: '',
        content: '',
        error: 'Blocked: the URL appears to contain an API key or secret token; it was not fetched',
      };
    }
    const key = url.replace(/#.*$/, '');
    const cached = cache.get(key);
    if (cached && cached.expires > now()) return cached.result;
    try {
      const page = await safeFetch(url, {
        guard,
        rateLimiter: limiter,
        signal,
        timeoutMs: settings.timeoutMs ?? 30_000,
        maxRedirects: settings.maxRedirects ?? 5,
        maxBytes: settings.maxBytes ?? 5 * 1024 * 1024,
        userAgent: settings.userAgent ?? 'Mozilla/5.0 (compatible; shears-web-extract/0.1)',
        ca: settings.ca,
      });
      if (page.status >= 400) throw new WebToolError(`HTTP ${page.status} fetching ${page.url}`, { url });
      const converted = bodyToMarkdown(page.body, page.contentType, page.url);
      let content = converted.content;
      if (content.length > maxChars)
        content = `${content.slice(0, maxChars)}\n\n[... content truncated at ${maxChars.toLocaleString('en-US')} characters ...]`;
      const result: ExtractResult = { url: page.url, title: converted.title, content };
      if (ttl > 0) {
        cache.set(key, { expires: now() + ttl, result });
        while (cache.size > cacheMax) cache.delete(cache.keys().next().value!);
      }
      return result;
    } catch (error) {
      if (signal.aborted) throw error;
      return { url, title: '', content: '', error: error instanceof Error ? error.message : String(error) };
    }
  };

  return defineTool<WebExtractArgs>({
    name: 'web_extract',
    description: WEB_EXTRACT_DESCRIPTION,
    inputSchema: webExtractInputSchema,
    jsonSchema: webExtractJsonSchema,
    toolset: 'web',
    maxResultChars: 100_000,
    async execute(args, context) {
      const urls = args.urls.slice(0, MAX_URLS);
      const results = await Promise.all(urls.map((url) => extractOne(url, context.signal)));
      if (results.length === 0)
        return { content: JSON.stringify({ error: 'Content was inaccessible or not found' }), isError: true };
      const shown = results.map((result) =>
        result.error ? result : { url: result.url, title: result.title, content: result.content },
      );
      return {
        content: JSON.stringify({ results: shown }, null, 2),
        data: {
          results: results.map((result) => ({
            url: result.url,
            chars: result.content.length,
            error: result.error,
          })),
        },
        isError: results.every((result) => result.error !== undefined),
      };
    },
  });
}
