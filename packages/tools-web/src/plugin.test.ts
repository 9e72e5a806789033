import { createRegistry, resolveToolset } from '@shears/core';
import { describe, expect, it } from 'vitest';
import plugin from './index.js';

describe('@shears/tools-web manifest', () => {
  it('registers web_search and web_extract and the web toolset', async () => {
    const registry = createRegistry().use(plugin);
    expect(registry.list('tools')).toEqual(['web_extract', 'web_search']);
    expect(resolveToolset('web', registry.toolsets())).toEqual(['web_extract', 'web_search']);
    const search = await registry.create('tools', 'web_search', { provider: 'searxng' });
    expect(Array.isArray(search) ? search[0]!.name : search.name).toBe('web_search');
  });
});
