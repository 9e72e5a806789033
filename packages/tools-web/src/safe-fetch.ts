// Fetching a page under the SSRF guard with undici: each hop's host is vetted, and the
// connection is pinned to the vetted address through `connect.lookup`; redirects are followed
// by hand (limited, each one vetted again, each host rate-limited); the body is read by core's
// one body reader (capped while it streams and once decoded).
import { BodyReadError, readBody } from '@shears/core/http';
import { Agent, request } from 'undici';
import { WebToolError } from './errors.js';
import type { HostRateLimiter } from './rate-limit.js';
import type { SsrfGuard, VettedTarget } from './ssrf-guard.js';

export interface SafeFetchOptions {
  guard: SsrfGuard;
  timeoutMs: number;
  maxRedirects: number;
  maxBytes: number;
  userAgent: string;
  /** Extra trusted CA certificates (PEM), e.g. an intranet's own CA. */
  ca?: string | readonly string[];
  /** Spaces requests per host; consulted before every hop, redirect targets included. */
  rateLimiter?: HostRateLimiter;
  signal?: AbortSignal;
}

export interface FetchedPage {
  /** The URL after redirects. */
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  redirects: string[];
}

type LookupCallback = (
  error: Error | null,
  address: string | Array<{ address: string; family: number }>,
  family?: number,
) => void;

/** An undici Agent whose every connection goes to `target.address`, whatever DNS says now. */
function pinnedAgent(target: VettedTarget, ca: string | readonly string[] | undefined): Agent {
  return new Agent({
    connections: 1,
    connect: {
      // TLS still verifies the certificate against the host name (SNI = hostname), only the
      // address is pinned.
      ...(ca ? { ca: typeof ca === 'string' ? ca : [...ca] } : {}),
      lookup: (_hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
        if (options?.all) callback(null, [{ address: target.address, family: target.family }]);
        else callback(null, target.address, target.family);
      },
    } as Record<string, unknown>,
  });
}

export async function safeFetch(input: string, options: SafeFetchOptions): Promise<FetchedPage> {
  const redirects: string[] = [];
  let current = input;
  let timeout: AbortSignal | undefined;
  let signal: AbortSignal | undefined;
  for (let hop = 0; ; hop++) {
    const target = await options.guard.vet(current);
    // Waiting for the first host's turn happens before the timeout starts (a busy host can
    // queue many requests); a redirect target's turn is part of fetching the URL.
    if (hop === 0) await options.rateLimiter?.acquire(target.url.host, options.signal);
    timeout ??= AbortSignal.timeout(options.timeoutMs);
    signal ??= options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const agent = pinnedAgent(target, options.ca);
    try {
      if (hop > 0) await options.rateLimiter?.acquire(target.url.host, signal);
      const response = await request(target.url, {
        method: 'GET',
        dispatcher: agent,
        signal,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        headers: {
          'user-agent': options.userAgent,
          accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5',
        },
      });
      const location = response.headers.location;
      if (response.statusCode >= 300 && response.statusCode < 400 && location) {
        await response.body.dump();
        if (hop >= options.maxRedirects) {
          throw new WebToolError(
            `Too many redirects (more than ${options.maxRedirects}) starting at ${input}`,
            { url: input },
          );
        }
        current = new URL(Array.isArray(location) ? location[0]! : location, target.url).href;
        redirects.push(current);
        continue;
      }
      const declared = response.headers['content-length'];
      let body: Buffer;
      try {
        body = await readBody(response.body, {
          maxBytes: options.maxBytes,
          declaredLength: declared,
          encoding: response.headers['content-encoding'],
          signal,
          what: target.url.href,
        });
      } catch (error) {
        if (!BodyReadError.isInstance(error) || error.reason !== 'too_large') throw error;
        throw new WebToolError(
          Number(declared) > options.maxBytes
            ? `Page too large: ${declared} bytes (the limit is ${options.maxBytes})`
            : `Page too large: more than ${options.maxBytes} bytes`,
          { url: target.url.href, cause: error },
        );
      }
      const contentType = response.headers['content-type'];
      return {
        url: target.url.href,
        status: response.statusCode,
        contentType: (Array.isArray(contentType) ? contentType[0] : contentType) ?? '',
        body,
        redirects,
      };
    } catch (error) {
      if (timeout.aborted && !(options.signal?.aborted ?? false)) {
        throw new WebToolError(
          `Timed out after ${Number((options.timeoutMs / 1000).toFixed(1))}s fetching ${current}`,
          { url: current, cause: error },
        );
      }
      throw error;
    } finally {
      agent.close().catch(() => {});
    }
  }
}
