import type { RetrySettings } from '@shears/core/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../test/http-server.js';
import { call, webContext } from '../test/tool-context.js';
import { createWebSearchTool } from './web-search.js';

// Each route answers with the response shape the provider documents.
const json = (body: unknown) => (_request: unknown, response: import('node:http').ServerResponse) =>
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));

describe('web_search providers against local servers speaking each API', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
    server.route(
      '/search',
      json({
        query: 'rust async',
        number_of_results: 2,
        results: [
          {
            url: 'https://tokio.rs/',
            title: 'Tokio',
            content: 'An asynchronous runtime for Rust',
            engine: 'duckduckgo',
            engines: ['duckduckgo'],
            score: 2,
          },
          {
            url: 'https://rust-lang.github.io/async-book/',
            title: 'Async book',
            content: 'Asynchronous Programming in Rust',
            engine: 'bing',
          },
          { url: 'https://example.com/3', title: 'Third', content: 'three' },
        ],
        answers: [],
        suggestions: [],
        unresponsive_engines: [],
      }),
    );
    server.route(
      '/res/v1/web/search',
      json({
        type: 'search',
        query: { original: 'rust async' },
        web: {
          type: 'search',
          results: [
            {
              title: 'Tokio',
              url: 'https://tokio.rs/',
              description: 'An <strong>asynchronous</strong> runtime',
              age: '2 days ago',
            },
          ],
        },
      }),
    );
    server.route(
      '/tavily/search',
      json({
        query: 'rust async',
        answer: null,
        images: [],
        results: [
          {
            title: 'Tokio',
            url: 'https://tokio.rs/',
            content: 'Tokio is an asynchronous runtime.',
            score: 0.93,
            raw_content: null,
          },
        ],
        response_time: 0.8,
      }),
    );
    server.route(
      '/exa/search',
      json({
        requestId: 'b5947044c4b78efa9552a7c89b306d95',
        resolvedSearchType: 'neural',
        results: [
          {
            id: 'https://tokio.rs/',
            title: 'Tokio',
            url: 'https://tokio.rs/',
            publishedDate: '2024-01-01',
            author: null,
            highlights: ['Tokio is a runtime', 'for writing reliable apps'],
          },
        ],
      }),
    );
    server.route(
      '/v2/search',
      json({
        success: true,
        data: {
          web: [
            {
              url: 'https://tokio.rs/',
              title: 'Tokio',
              description: 'Build reliable network applications',
              position: 1,
            },
          ],
        },
      }),
    );
    server.route('/broken/search', (_request, response) =>
      response.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded'),
    );
  });
  afterAll(() => server.close());

  const last = () => server.requests.at(-1)!;

  it('SearXNG: GET /search?format=json, results[].content', async () => {
    const tool = createWebSearchTool({ provider: 'searxng', env: { SEARXNG_URL: `${server.origin}/` } });
    const { json: body } = await call(tool, { query: 'rust async', limit: 2 });
    expect(last().method).toBe('GET');
    expect(last().path).toBe('/search?q=rust+async&format=json');
    expect(body).toEqual({
      success: true,
      data: {
        web: [
          {
            title: 'Tokio',
            url: 'https://tokio.rs/',
            description: 'An asynchronous runtime for Rust',
            position: 1,
          },
          {
            title: 'Async book',
            url: 'https://rust-lang.github.io/async-book/',
            description: 'Asynchronous Programming in Rust',
            position: 2,
          },
        ],
      },
    });
  });

  it('Brave: GET /res/v1/web/search with X-Subscription-Token, web.results[]', async () => {
    const tool = createWebSearchTool({
      provider: 'brave',
      baseUrl: server.origin,
      env: { BRAVE_API_KEY: 'brave-key' },
    });
    const { json: body } = await call(tool, { query: 'rust async', limit: 50 });
    expect(last().path).toBe('/res/v1/web/search?q=rust+async&count=20');
    expect(last().headers['x-subscription-token']).toBe('brave-key');
    expect(body.data.web[0]).toEqual({
      title: 'Tokio',
      url: 'https://tokio.rs/',
      description: 'An <strong>asynchronous</strong> runtime',
      position: 1,
    });
  });

  it('Tavily: POST /search with api_key in the body, results[].content', async () => {
    const tool = createWebSearchTool({
      provider: 'tavily',
      env: { TAVILY_API_KEY: 'tvly-key', TAVILY_BASE_URL: `${server.origin}/tavily` },
    });
    const { json: body } = await call(tool, { query: 'rust async' });
    expect(last().method).toBe('POST');
    expect(JSON.parse(last().body)).toMatchObject({
      api_key: 'tvly-key',
      query: 'rust async',
      max_results: 5,
    });
    expect(last().headers.authorization).toBe('Bearer tvly-key');
    expect(body.data.web).toEqual([
      {
        title: 'Tokio',
        url: 'https://tokio.rs/',
        description: 'Tokio is an asynchronous runtime.',
        position: 1,
      },
    ]);
  });

  it('Exa: POST /search with x-api-key and numResults, highlights as description', async () => {
    const tool = createWebSearchTool({
      provider: 'exa',
      env: { EXA_API_KEY: 'exa-key', EXA_BASE_URL: `${server.origin}/exa` },
    });
    const { json: body } = await call(tool, { query: 'rust async', limit: 3 });
    expect(last().headers['x-api-key']).toBe('exa-key');
    expect(JSON.parse(last().body)).toMatchObject({ query: 'rust async', numResults: 3 });
    expect(body.data.web[0].description).toBe('Tokio is a runtime … for writing reliable apps');
  });

  it('Firecrawl: POST /v2/search with a bearer key, data.web[]', async () => {
    const tool = createWebSearchTool({
      provider: 'firecrawl',
      env: { FIRECRAWL_API_KEY: 'fc-key', FIRECRAWL_API_URL: server.origin },
    });
    const { json: body } = await call(tool, { query: 'rust async', limit: 1 });
    expect(last().path).toBe('/v2/search');
    expect(last().headers.authorization).toBe('Bearer fc-key');
    expect(JSON.parse(last().body)).toEqual({ query: 'rust async', limit: 1 });
    expect(body.data.web[0]).toMatchObject({
      url: 'https://tokio.rs/',
      description: 'Build reliable network applications',
    });
  });

  it('reads keys lazily and names the missing variable', async () => {
    const env: Record<string, string | undefined> = {};
    const tool = createWebSearchTool({ provider: 'tavily', env });
    const missing = await call(tool, { query: 'x' });
    expect(missing.output.isError).toBe(true);
    expect(missing.json.error).toBe(
      'Error searching web: web_search provider "tavily" needs TAVILY_API_KEY to be set in the environment',
    );
    env.TAVILY_API_KEY = 'late-key';
    env.TAVILY_BASE_URL = `${server.origin}/tavily`;
    expect((await call(tool, { query: 'x' })).json.success).toBe(true);
  });

  it('picks the configured provider from the environment, and explains unknown or absent ones', async () => {
    const chosen = createWebSearchTool({ env: { EXA_API_KEY: 'k', EXA_BASE_URL: `${server.origin}/exa` } });
    expect((await call(chosen, { query: 'x' })).output.data).toMatchObject({ provider: 'exa' });
    const none = await call(createWebSearchTool({ env: {} }), { query: 'x' });
    expect(none.json.error).toMatch(
      /^Error searching web: No web_search provider is configured: set one of FIRECRAWL_API_KEY, TAVILY_API_KEY, EXA_API_KEY, BRAVE_API_KEY, SEARXNG_URL/,
    );
    const unknown = await call(createWebSearchTool({ provider: 'bingo', env: {} }), { query: 'x' });
    expect(unknown.json.error).toBe(
      'Error searching web: No web_search provider "bingo" (available: firecrawl, tavily, exa, brave, searxng)',
    );
  });

  it('reports provider HTTP errors, a server-side one after its retries', async () => {
    const waits: number[] = [];
    const tool = createWebSearchTool({
      provider: 'searxng',
      env: { SEARXNG_URL: `${server.origin}/broken` },
      retry: { sleep: async (ms) => void waits.push(ms) },
    });
    const before = server.requests.length;
    const { json: body } = await call(tool, { query: 'x' });
    expect(body.error).toBe(
      'Error searching web: SearXNG answered HTTP 500: upstream exploded (gave up after 3 attempts)',
    );
    expect(server.requests.length - before).toBe(3);
    expect(waits).toHaveLength(2);
  });
});

describe('web_search retries a rate-limited provider (core’s one retry policy)', () => {
  let server: TestServer;
  let answers: Array<{ status: number; headers?: Record<string, string> }> = [];
  beforeAll(async () => {
    server = await startServer();
    server.route('/search', (_request, response) => {
      const answer = answers.shift();
      if (answer) response.writeHead(answer.status, answer.headers).end('slow down');
      else
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(
            JSON.stringify({ results: [{ url: 'https://tokio.rs/', title: 'Tokio', content: 'runtime' }] }),
          );
    });
  });
  afterAll(() => server.close());

  const searxng = (retry: RetrySettings) =>
    createWebSearchTool({ provider: 'searxng', env: { SEARXNG_URL: server.origin }, retry });

  it('waits the Retry-After a 429 gives, as seconds or as an HTTP date', async () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    answers = [
      { status: 429, headers: { 'retry-after': '2' } },
      { status: 429, headers: { 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' } },
    ];
    const waits: number[] = [];
    const { json: body } = await call(searxng({ sleep: async (ms) => void waits.push(ms), now: () => now }), {
      query: 'x',
    });
    expect(body.data.web).toHaveLength(1);
    expect(waits).toEqual([2000, 7000]);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs, and does not retry a 4xx', async () => {
    answers = [{ status: 429, headers: { 'retry-after': '3600' } }];
    const waits: number[] = [];
    const { json: body } = await call(searxng({ sleep: async (ms) => void waits.push(ms) }), { query: 'x' });
    expect(body.error).toBe(
      'Error searching web: SearXNG answered HTTP 429: slow down (Retry-After 3600 s exceeds maxRetryAfterMs 60000 ms; not waiting)',
    );
    answers = [{ status: 403 }];
    const before = server.requests.length;
    const refused = await call(searxng({ sleep: async (ms) => void waits.push(ms) }), { query: 'x' });
    expect(refused.json.error).toBe('Error searching web: SearXNG answered HTTP 403: slow down');
    expect(server.requests.length - before).toBe(1);
    expect(waits).toEqual([]);
    answers = [];
  });

  it('the rollout’s stop signal ends a wait at once', async () => {
    answers = [{ status: 503 }];
    const tool = searxng({ baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 });
    const stop = new AbortController();
    const context = { ...webContext(), signal: stop.signal };
    const before = server.requests.length;
    const pending = tool.execute(tool.inputSchema.parse({ query: 'x' }), context);
    while (server.requests.length === before) await new Promise((resolve) => setTimeout(resolve, 5));
    stop.abort();
    const output = await pending;
    expect(typeof output === 'string' ? output : output.isError).toBe(true);
    expect(server.requests.length - before).toBe(1);
    answers = [];
  });
});
