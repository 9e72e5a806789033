import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send, startServer, type TestServer } from '../test/http-server.js';
import { call } from '../test/tool-context.js';
import { SsrfBlockedError } from './errors.js';
import { classifyAddress } from './ip-address.js';
import { createSsrfGuard, type HostResolver } from './ssrf-guard.js';
import { createWebExtractTool } from './web-extract.js';

// Only vet() is called for non-loopback addresses: nothing in this file connects anywhere but 127.0.0.1.
const noDns: HostResolver = async (hostname) => {
  throw new Error(`unexpected DNS lookup of ${hostname}`);
};

async function blocked(url: string, resolver: HostResolver = noDns): Promise<SsrfBlockedError> {
  const guard = createSsrfGuard({ resolver });
  const error = await guard.vet(url).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(SsrfBlockedError.isInstance(error), `${url} should be blocked`).toBe(true);
  return error as SsrfBlockedError;
}

describe('SSRF guard', () => {
  it.each([
    ['http://127.0.0.1/', 'loopback'],
    ['http://127.8.9.10:8080/admin', 'loopback'],
    ['http://localhost./', 'loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://0x7f.0.0.1/', 'loopback'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://10.1.2.3/', 'private'],
    ['http://172.16.5.4/', 'private'],
    ['http://172.31.255.255/', 'private'],
    ['http://192.168.0.1/', 'private'],
    ['http://169.254.169.254/latest/meta-data/', 'cloud metadata'],
    ['http://169.254.10.20/', 'link-local'],
    ['http://100.64.0.1/', 'carrier-grade NAT'],
    ['http://100.127.255.254/', 'carrier-grade NAT'],
    ['http://[::1]/', 'loopback'],
    ['http://[::]/', 'unspecified'],
    ['http://[fd12:3456::1]/', 'unique-local'],
    ['http://[fc00::5]/', 'unique-local'],
    ['http://[fd00:ec2::254]/', 'cloud metadata'],
    ['http://[fe80::1]/', 'link-local'],
    ['http://[::ffff:127.0.0.1]/', 'IPv4-mapped IPv6'],
    ['http://[::ffff:a9fe:a9fe]/', 'IPv4-mapped IPv6'],
    ['http://[::ffff:8.8.8.8]/', 'IPv4-mapped IPv6'],
    ['http://[64:ff9b::a00:1]/', 'IPv4-translated IPv6'],
    ['http://224.0.0.1/', 'multicast'],
  ])('blocks %s (%s)', async (url, category) => {
    const resolver: HostResolver = async (hostname) =>
      hostname === 'localhost.' ? [{ address: '127.0.0.1', family: 4 }] : noDns(hostname);
    const error = await blocked(url, resolver);
    expect(error.category).toBe(category);
    expect(error.message).toMatch(
      /^Blocked: .* address\. Requests to private or internal network addresses are not allowed$/,
    );
  });

  it.each([
    'file:///etc/passwd',
    'ftp://example.com/file',
    'gopher://example.com/',
    'data:text/html,hi',
    'javascript:alert(1)',
  ])('blocks the non-http(s) scheme of %s', async (url) => {
    const error = await blocked(url);
    expect(error.category).toBe('scheme');
    expect(error.message).toMatch(/only http and https URLs can be fetched/);
  });

  it('blocks a public-looking host name that resolves to 127.0.0.1', async () => {
    const resolver: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const error = await blocked('https://totally-public.example.com/page', resolver);
    expect(error.message).toBe(
      'Blocked: totally-public.example.com resolves to 127.0.0.1, which is a loopback address. Requests to private or internal network addresses are not allowed',
    );
  });

  it('blocks a host with one public and one private answer', async () => {
    const resolver: HostResolver = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    expect((await blocked('http://mixed.example/', resolver)).address).toBe('10.0.0.7');
  });

  it.each([
    ['::1', 'loopback'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['fd7a:115c:a1e0::1', 'unique-local'],
    ['::ffff:10.0.0.7', 'IPv4-mapped IPv6'],
  ])('blocks a name whose A answer is public but whose AAAA answer is %s (%s)', async (address, category) => {
    const resolver: HostResolver = async () => [
      { address: '93.184.215.14', family: 4 },
      { address, family: 6 },
    ];
    const error = await blocked('https://dual-stack.example/', resolver);
    expect(error.address).toBe(address);
    expect(error.category).toBe(category);
    expect(error.message).toBe(
      `Blocked: dual-stack.example resolves to ${address}, which is a ${category} address. Requests to private or internal network addresses are not allowed`,
    );
  });

  it('passes public addresses and honours the allowlist', async () => {
    const resolver: HostResolver = async () => [{ address: '93.184.215.14', family: 4 }];
    const target = await createSsrfGuard({ resolver }).vet('https://example.org/a?b=c');
    expect(target).toMatchObject({ hostname: 'example.org', address: '93.184.215.14', family: 4 });
    expect(classifyAddress('2606:4700::1111')).toBe('public');
    const byCidr = createSsrfGuard({
      allowlist: ['10.0.0.0/8'],
      resolver: async () => [{ address: '10.2.3.4', family: 4 }],
    });
    expect((await byCidr.vet('http://intranet.corp/')).address).toBe('10.2.3.4');
    const byName = createSsrfGuard({
      allowlist: ['*.corp.example'],
      resolver: async () => [{ address: '192.168.1.9', family: 4 }],
    });
    expect((await byName.vet('http://wiki.corp.example/')).address).toBe('192.168.1.9');
    await expect(byName.vet('http://corp.example.evil.test/')).rejects.toThrow(/private address/);
  });
});

describe('SSRF guard inside web_extract', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
    server.route('/page', send('text/plain', 'secret intranet page'));
    server.route('/redirect-to-loopback', (_request, response) =>
      response.writeHead(302, { location: `http://127.0.0.1:${server.port}/page` }).end(),
    );
    server.route('/redirect-to-file', (_request, response) =>
      response.writeHead(302, { location: 'file:///etc/passwd' }).end(),
    );
    server.route('/redirect-to-intranet', (_request, response) =>
      response.writeHead(301, { location: `http://intranet.example:${server.port}/page` }).end(),
    );
  });
  afterAll(() => server.close());

  it('refuses loopback by default and never connects', async () => {
    const tool = createWebExtractTool({ minIntervalMsPerHost: 0 });
    const before = server.requests.length;
    const { json, output } = await call(tool, { urls: [`${server.origin}/page`] });
    expect(output.isError).toBe(true);
    expect(json.results[0].error).toMatch(/^Blocked: 127\.0\.0\.1 is a loopback address/);
    expect(server.requests.length).toBe(before);
  });

  it('refuses a public-looking host name that resolves to 127.0.0.1, without connecting', async () => {
    const resolver: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const tool = createWebExtractTool({ minIntervalMsPerHost: 0, ssrf: { resolver } });
    const before = server.requests.length;
    const { json } = await call(tool, { urls: [`http://www.public-news.example:${server.port}/page`] });
    expect(json.results[0].error).toBe(
      'Blocked: www.public-news.example resolves to 127.0.0.1, which is a loopback address. Requests to private or internal network addresses are not allowed',
    );
    expect(server.requests.length).toBe(before);
  });

  it('re-checks after a redirect: a public-looking host redirecting to a private address is blocked', async () => {
    const resolver: HostResolver = async (hostname) => {
      if (hostname === 'news.example') return [{ address: '127.0.0.1', family: 4 }];
      throw new Error(`no such host ${hostname}`);
    };
    // news.example is allowlisted by name (think: an intranet mirror); its redirect target is not.
    const tool = createWebExtractTool({
      minIntervalMsPerHost: 0,
      ssrf: { allowlist: ['news.example'], resolver },
    });
    const { json } = await call(tool, { urls: [`http://news.example:${server.port}/redirect-to-loopback`] });
    expect(json.results[0].error).toMatch(/^Blocked: 127\.0\.0\.1 is a loopback address/);
    expect(server.requests.filter((request) => request.path === '/page')).toHaveLength(0);
    expect(server.requests.filter((request) => request.path === '/redirect-to-loopback')).toHaveLength(1);
  });

  it('refuses a redirect to a file: URL', async () => {
    const tool = createWebExtractTool({ minIntervalMsPerHost: 0, ssrf: { allowlist: ['127.0.0.1'] } });
    const { json, output } = await call(tool, { urls: [`${server.origin}/redirect-to-file`] });
    expect(output.isError).toBe(true);
    expect(json.results[0].error).toBe(
      'Blocked: file:///etc/passwd uses the "file" scheme; only http and https URLs can be fetched',
    );
    expect(json.results[0].content).toBe('');
  });

  it('re-resolves a redirect target: a host name that resolves to a private address is blocked, without connecting', async () => {
    const lookups: string[] = [];
    const resolver: HostResolver = async (hostname) => {
      lookups.push(hostname);
      if (hostname === 'news.example' || hostname === 'intranet.example')
        return [{ address: '127.0.0.1', family: 4 }];
      throw new Error(`no such host ${hostname}`);
    };
    // Only news.example is allowlisted; intranet.example reaches the same test server, so a
    // guard that skipped the redirect would fetch /page and return its text.
    const tool = createWebExtractTool({
      minIntervalMsPerHost: 0,
      ssrf: { allowlist: ['news.example'], resolver },
    });
    const before = server.requests.filter((request) => request.path === '/page').length;
    const { json } = await call(tool, { urls: [`http://news.example:${server.port}/redirect-to-intranet`] });
    expect(json.results[0].error).toBe(
      'Blocked: intranet.example resolves to 127.0.0.1, which is a loopback address. Requests to private or internal network addresses are not allowed',
    );
    expect(lookups).toEqual(['news.example', 'intranet.example']);
    expect(server.requests.filter((request) => request.path === '/page')).toHaveLength(before);
  });

  it('refuses a name whose AAAA answer is private even when its A answer is allowed, without connecting', async () => {
    const resolver: HostResolver = async () => [
      { address: '127.0.0.1', family: 4 },
      { address: 'fd12:3456::7', family: 6 },
    ];
    // 127.0.0.1 is allowlisted, fd12:3456::7 is not: connecting to the A answer would succeed.
    const tool = createWebExtractTool({
      minIntervalMsPerHost: 0,
      ssrf: { allowlist: ['127.0.0.1'], resolver },
    });
    const before = server.requests.length;
    const { json } = await call(tool, { urls: [`http://dual-stack.example:${server.port}/page`] });
    expect(json.results[0].error).toBe(
      'Blocked: dual-stack.example resolves to fd12:3456::7, which is a unique-local address. Requests to private or internal network addresses are not allowed',
    );
    expect(server.requests.length).toBe(before);
  });

  it('connects to the address it vetted, not to a fresh DNS answer', async () => {
    let lookups = 0;
    // `rebind.invalid` cannot resolve in real DNS: the fetch only works if undici uses the vetted address.
    const resolver: HostResolver = async () => {
      lookups++;
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const tool = createWebExtractTool({
      minIntervalMsPerHost: 0,
      cacheTtlMs: 0,
      ssrf: { allowlist: ['127.0.0.1'], resolver },
    });
    const { json } = await call(tool, { urls: [`http://rebind.invalid:${server.port}/page`] });
    expect(json.results[0].content).toBe('secret intranet page');
    expect(lookups).toBe(1);
    expect(server.requests.at(-1)!.headers.host).toBe(`rebind.invalid:${server.port}`);
  });
});
