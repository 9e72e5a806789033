import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send, startServer, type TestServer } from '../test/http-server.js';
import { call } from '../test/tool-context.js';
import { createWebExtractTool, type WebExtractSettings } from './web-extract.js';

const fixture = (name: string) => readFileSync(new URL(`../test/fixtures/${name}`, import.meta.url), 'utf8');
const html = 'text/html; charset=utf-8';

describe('web_extract', () => {
  let server: TestServer;
  const local = (settings: WebExtractSettings = {}) =>
    createWebExtractTool({
      minIntervalMsPerHost: 0,
      ...settings,
      ssrf: { allowlist: ['127.0.0.1'], ...settings.ssrf },
    });

  beforeAll(async () => {
    server = await startServer();
    server.route('/article', send(html, fixture('article.html')));
    server.route('/docs', send(html, fixture('docs.html')));
    server.route('/recipe', send(html, fixture('scripts-and-cookies.html')));
    server.route('/NewsItem.aspx', send(html, fixture('webforms.html')));
    server.route('/blog/sticky-dough', send(html, fixture('wrapper-classes.html')));
    server.route('/notes.txt', send('text/plain; charset=utf-8', 'Plain notes\nline two\n'));
    server.route(
      '/data.json',
      send('application/json', '{"name":"shears","tools":["web_search","web_extract"]}'),
    );
    server.route('/logo.png', send('image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47])));
    server.route('/huge', send('text/plain', 'x'.repeat(300_000)));
    // Compressed though no Accept-Encoding asked for it: a small page, and a bomb (1 MB of zeros in ~1 KB).
    server.route('/zipped', (_request, response) =>
      response
        .writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' })
        .end(gzipSync('Zipped notes')),
    );
    server.route('/bomb', (_request, response) =>
      response
        .writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' })
        .end(gzipSync(Buffer.alloc(1 << 20))),
    );
    server.route('/loop', (_request, response) => response.writeHead(302, { location: '/loop' }).end());
    server.route('/hop1', (_request, response) => response.writeHead(301, { location: '/hop2' }).end());
    server.route('/hop2', (_request, response) => response.writeHead(307, { location: '/article' }).end());
    server.route('/slow', () => {}); // never answers
    server.route('/moved', (_request, response) =>
      response.writeHead(302, { location: `${server.origin}/notes.txt?moved` }).end(),
    );
    server.route('/missing', send('text/plain', 'gone', 404));
    server.route('/latin1', send('text/plain; charset=iso-8859-1', Buffer.from([0x63, 0x61, 0x66, 0xe9])));
  });
  afterAll(() => server.close());

  it('turns a news article into clean markdown', async () => {
    const { json } = await call(local(), { urls: [`${server.origin}/article`] });
    const [page] = json.results;
    expect(page.title).toBe('Deep-Sea Vents Host Unexpected Microbial Diversity');
    const content: string = page.content;
    expect(content).toContain('catalogued more than 1,200 previously unknown microbial species');
    expect(content).toContain('## Chemistry instead of sunlight');
    expect(content).toContain('## What comes next');
    expect(content).toContain('Every sample we opened contained something nobody had sequenced before');
    expect(content).toContain(`[Earlier coverage](${server.origin}/science/enceladus-plumes)`);
    for (const boilerplate of [
      'Subscribe for $1',
      'MegaVPN',
      'Share on Facebook',
      'Most read',
      'Ten gadgets',
      'morning briefing',
      'All rights reserved',
      'Privacy policy',
      'gtag',
      'Comments (214)',
    ]) {
      expect(content, boilerplate).not.toContain(boilerplate);
    }
  });

  it('keeps the body of a docs page and drops navigation, sidebar and table of contents', async () => {
    const { json } = await call(local(), { urls: [`${server.origin}/docs`] });
    const content: string = json.results[0].content;
    expect(content).toContain('Fetchly retries failed requests with exponential backoff');
    expect(content).toContain("```ts\nimport { createClient } from 'fetchly';");
    expect(content).toContain('retry: { attempts: 3, baseDelayMs: 200, maxDelayMs: 5000 },');
    expect(content).toContain('## Idempotency');
    expect(content).toContain('`Idempotency-Key`');
    expect(content).toContain(
      '| Option | Default | Meaning |\n| --- | --- | --- |\n| attempts | 2 | How many times a request is retried |',
    );
    for (const boilerplate of [
      'Skip to content',
      'Installation',
      'Quickstart',
      'Interceptors',
      'On this page',
      'Edit this page',
      'Copyright',
      'Search docs',
      'GitHub',
    ]) {
      expect(content, boilerplate).not.toContain(boilerplate);
    }
  });

  it('drops scripts, tracking and the cookie banner of a script-heavy page', async () => {
    const { json } = await call(local(), { urls: [`${server.origin}/recipe`] });
    const content: string = json.results[0].content;
    expect(json.results[0].title).toMatch(/Sourdough Starter: A Beginner's Guide/);
    expect(content).toContain('flour and water colonised by wild yeast');
    expect(content).toMatch(/1\.\s+Every 24 hours, discard all but 50 grams of the starter\./);
    expect(content).toContain('like yoghurt or green apples');
    for (const boilerplate of [
      'We use cookies',
      'Accept all cookies',
      'Cookie settings',
      'fbq',
      '__INITIAL_STATE__',
      'document.write',
      'Sponsored',
      "Don't go",
      'tracking loaded',
      'schema.org',
      'position:fixed',
    ]) {
      expect(content, boilerplate).not.toContain(boilerplate);
    }
  });

  it('keeps the article of an ASP.NET WebForms page, whose whole body sits in one <form>', async () => {
    const { json } = await call(local(), { urls: [`${server.origin}/NewsItem.aspx?id=4821`] });
    const [page] = json.results;
    expect(page.title).toBe('Water main renewal on Harbour Road');
    const content: string = page.content;
    expect(content).toContain('replace 640 metres of cast-iron water main beneath Harbour Road');
    expect(content).toContain('## Water supply during the works');
    expect(content).toContain('Call the works hotline on 0800 555 0142');
    for (const boilerplate of [
      '__VIEWSTATE',
      '__doPostBack',
      'Search the site',
      'Council meetings',
      'Related news',
      'Autumn leaf collection',
      'Accessibility statement',
    ]) {
      expect(content, boilerplate).not.toContain(boilerplate);
    }
  });

  it('keeps the post inside has-sidebar / with-toc / share-enabled wrappers and drops the parts they name', async () => {
    const { json } = await call(local(), { urls: [`${server.origin}/blog/sticky-dough`] });
    const content: string = json.results[0].content;
    expect(content).toContain('Sticky dough is the most common complaint');
    expect(content).toContain('## Hydration');
    expect(content).toContain('firms up noticeably after a series of stretch-and-folds');
    for (const boilerplate of [
      'Contents',
      'Tweet this post',
      'Share this post on Facebook',
      'Popular posts',
      'Get new recipes by email',
      'Search recipes',
      'reader-supported',
    ]) {
      expect(content, boilerplate).not.toContain(boilerplate);
    }
  });

  it('handles plain text, JSON and legacy charsets, and refuses other content types', async () => {
    const { json } = await call(local(), {
      urls: [
        `${server.origin}/notes.txt`,
        `${server.origin}/data.json`,
        `${server.origin}/logo.png`,
        `${server.origin}/latin1`,
      ],
    });
    const [text, data, image, latin1] = json.results;
    expect(text.content).toBe('Plain notes\nline two');
    expect(data.content).toBe(
      '```json\n{\n  "name": "shears",\n  "tools": [\n    "web_search",\n    "web_extract"\n  ]\n}\n```',
    );
    expect(image.error).toBe(
      `Unsupported content type "image/png" at ${server.origin}/logo.png (supported: HTML, plain text, JSON)`,
    );
    expect(latin1.content).toBe('café');
  });

  it('caps size, limits redirects, times out and reports HTTP errors per URL', async () => {
    const tool = local({ maxBytes: 100_000, maxRedirects: 3 });
    const { json } = await call(tool, {
      urls: [
        `${server.origin}/huge`,
        `${server.origin}/loop`,
        `${server.origin}/missing`,
        `${server.origin}/hop1`,
      ],
    });
    const [huge, loop, missing, hops] = json.results;
    const slow = (await call(local({ timeoutMs: 300 }), { urls: [`${server.origin}/slow`] })).json.results[0];
    expect(huge.error).toMatch(
      /^Page too large: (300000 bytes \(the limit is 100000\)|more than 100000 bytes)$/,
    );
    expect(loop.error).toBe(`Too many redirects (more than 3) starting at ${server.origin}/loop`);
    expect(slow.error).toBe(`Timed out after 0.3s fetching ${server.origin}/slow`);
    expect(missing.error).toBe(`HTTP 404 fetching ${server.origin}/missing`);
    expect(hops.url).toBe(`${server.origin}/article`);
    expect(hops.content).toContain('Chemistry instead of sunlight');
  });

  it('decodes a page sent compressed unasked, and caps its size once decoded', async () => {
    const { json } = await call(local({ maxBytes: 100_000 }), {
      urls: [`${server.origin}/zipped`, `${server.origin}/bomb`],
    });
    const [zipped, bomb] = json.results;
    expect(zipped.content).toBe('Zipped notes');
    expect(bomb.error).toBe('Page too large: more than 100000 bytes');
  });

  it('truncates very long content and takes at most five URLs', async () => {
    const tool = local({ maxContentChars: 1000 });
    const urls = Array.from({ length: 7 }, (_, index) => `${server.origin}/notes.txt?${index}`);
    const { json } = await call(tool, { urls });
    expect(json.results).toHaveLength(5);
    const long = await call(local({ maxContentChars: 50 }), { urls: [`${server.origin}/article`] });
    expect(long.json.results[0].content).toMatch(/\n\n\[\.\.\. content truncated at 50 characters \.\.\.\]$/);
  });

  it('serves repeated URLs from the cache and spaces requests to one host', async () => {
    const clock = 1_000;
    const sleeps: number[] = [];
    const tool = local({
      minIntervalMsPerHost: 400,
      now: () => clock,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    const count = () =>
      server.requests.filter((request) => request.path.startsWith('/notes.txt?cache')).length;
    await call(tool, {
      urls: [
        `${server.origin}/notes.txt?cache1`,
        `${server.origin}/notes.txt?cache2`,
        `${server.origin}/notes.txt?cache3`,
      ],
    });
    expect(sleeps).toEqual([400, 800]);
    expect(count()).toBe(3);
    await call(tool, { urls: [`${server.origin}/notes.txt?cache1#section`] });
    expect(count()).toBe(3);
  });

  it('spaces requests to a redirect target host too, not only to the first host', async () => {
    const clock = 5_000;
    const sleeps: number[] = [];
    const tool = local({
      minIntervalMsPerHost: 400,
      cacheTtlMs: 0,
      now: () => clock,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      // mirror.example is another host name for the same test server; it redirects to 127.0.0.1.
      ssrf: { resolver: async () => [{ address: '127.0.0.1', family: 4 }] },
    });
    await call(tool, { urls: [`${server.origin}/notes.txt?direct`] });
    expect(sleeps).toEqual([]);
    const { json } = await call(tool, { urls: [`http://mirror.example:${server.port}/moved`] });
    expect(json.results[0]).toMatchObject({
      url: `${server.origin}/notes.txt?moved`,
      content: 'Plain notes\nline two',
    });
    // mirror.example had not been asked before; 127.0.0.1 was asked 0 ms earlier, so the hop waits.
    expect(sleeps).toEqual([400]);
  });

  it('refuses URLs that carry secrets', async () => {
    const { json } = await call(local(), { urls: [`${server.origin}/notes.txt?key=sk-${'a'.repeat(40)}`] });
    expect(json.results[0].error).toMatch(/^Blocked: the URL appears to contain an API key/);
  });
});
