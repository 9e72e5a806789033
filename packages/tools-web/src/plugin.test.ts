import { createRegistry, InvalidSettingsError, resolveToolset, type ToolV1 } from '@shears/core';
import { describe, expect, it } from 'vitest';
import plugin from './index.js';
import { safeParseWebExtractSettings } from './settings.js';

async function createError(tool: string, settings: Record<string, unknown>): Promise<InvalidSettingsError> {
  const registry = createRegistry().use(plugin);
  const error = await Promise.resolve()
    .then(() => registry.create('tools', tool, settings))
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  expect(InvalidSettingsError.isInstance(error), `${JSON.stringify(settings)} should be refused`).toBe(true);
  return error as InvalidSettingsError;
}

describe('@shears/tools-web manifest', () => {
  it('registers web_search and web_extract and the web toolset', async () => {
    const registry = createRegistry().use(plugin);
    expect(registry.list('tools')).toEqual(['web_extract', 'web_search']);
    expect(resolveToolset('web', registry.toolsets())).toEqual(['web_extract', 'web_search']);
    const search = await registry.create('tools', 'web_search', { provider: 'searxng' });
    expect(Array.isArray(search) ? search[0]!.name : search.name).toBe('web_search');
  });

  it('accepts valid settings, functions included', async () => {
    const registry = createRegistry().use(plugin);
    const extract = (await registry.create('tools', 'web_extract', {
      ssrf: { enabled: true, allowlist: ['10.0.0.0/8', '*.corp.example'], resolver: async () => [] },
      timeoutMs: 10_000,
      maxRedirects: 0,
      minIntervalMsPerHost: 0,
      ca: ['-----BEGIN CERTIFICATE-----'],
      now: () => 0,
    })) as ToolV1;
    expect(extract.name).toBe('web_extract');
    const search = (await registry.create('tools', 'web_search', {
      provider: 'Brave',
      baseUrl: 'http://127.0.0.1:8888',
      env: { BRAVE_API_KEY: 'key' },
    })) as ToolV1;
    expect(search.name).toBe('web_search');
  });

  it('refuses a misspelt SSRF key instead of silently keeping the guard as it was', async () => {
    const error = await createError('web_extract', { ssrf: { enable: false } });
    expect(error.message).toBe(
      'Invalid settings for tool "web_extract": settings.ssrf.enable: unknown setting (did you mean "enabled"?); allowed: enabled, allowlist, resolver',
    );
    expect(error.issues).toEqual([expect.objectContaining({ path: 'ssrf.enable', value: false })]);
  });

  it('names the field, the value and what is allowed for each bad setting', async () => {
    const error = await createError('web_extract', {
      timeoutMs: '30s',
      maxRedirects: -1,
      ssrf: { allowlist: '127.0.0.1' },
      cacheTTL: 0,
    });
    expect(error.message).toContain('timeoutMs: expected number, got "30s"');
    expect(error.message).toContain('maxRedirects: must be >= 0, got -1');
    expect(error.message).toContain('ssrf.allowlist: expected array, got "127.0.0.1"');
    expect(error.message).toMatch(
      /settings\.cacheTTL: unknown setting \(did you mean "cacheTtlMs"\?\); allowed: ssrf, timeoutMs, .*cacheTtlMs/,
    );
    expect(error.issues.map((issue) => issue.path).sort()).toEqual([
      'cacheTTL',
      'maxRedirects',
      'ssrf.allowlist',
      'timeoutMs',
    ]);
  });

  it('refuses an unknown web_search provider and a malformed base URL when the tool is created', async () => {
    const error = await createError('web_search', { provider: 'bravee', baseUrl: 'not a url' });
    expect(error.message).toContain(
      'provider: got "bravee"; allowed: "firecrawl", "tavily", "exa", "brave", "searxng"',
    );
    expect(error.message).toContain('baseUrl: expected a valid URL, got "not a url"');
    const custom = await createRegistry()
      .use(plugin)
      .create('tools', 'web_search', {
        provider: 'kagi',
        customProvider: { id: 'kagi', envVars: [], configured: () => true, search: async () => [] },
      });
    expect((custom as ToolV1).name).toBe('web_search');
  });

  it('has a safe twin that returns the error instead of throwing', () => {
    const result = safeParseWebExtractSettings({ maxBytes: 0 });
    expect(result.success).toBe(false);
    if (!result.success)
      expect(result.error.message).toBe('Invalid web_extract settings: maxBytes: must be > 0, got 0');
  });
});
