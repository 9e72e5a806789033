import { createRegistry } from '@shears/core';
import { describe, expect, it } from 'vitest';
import plugin from './index.js';

describe('@shears/tools-terminal plugin manifest', () => {
  it('registers the three sandboxes, both tools and the terminal toolset', async () => {
    const registry = createRegistry().use(plugin);
    expect(registry.list('sandboxes')).toEqual(['docker', 'local', 'ssh']);
    expect(registry.list('tools')).toEqual(['process', 'terminal']);
    expect(registry.toolsets().terminal?.tools).toEqual(['terminal', 'process']);
    const provider = await registry.create('sandboxes', 'local');
    const sandbox = await provider.acquire();
    expect((await sandbox.exec('echo via-registry')).stdout).toBe('via-registry\n');
    await provider.close();
  });

  it('names the valid alternatives for an unknown sandbox and rejects bad ssh settings', async () => {
    const registry = createRegistry().use(plugin);
    await expect(registry.create('sandboxes', 'dokcer')).rejects.toThrow(
      'No sandbox provider "dokcer" (available: docker, local, ssh)',
    );
    await expect(registry.create('sandboxes', 'ssh', { host: 'example.invalid' })).rejects.toThrow(
      /username/,
    );
  });
});
