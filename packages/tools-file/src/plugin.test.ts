import { ConfigError, createRegistry, resolveToolset, type ToolV1 } from '@shears/core';
import { describe, expect, it } from 'vitest';
import plugin, { createFileTools } from './index.js';

describe('@shears/tools-file manifest', () => {
  it('registers the four file tools and the file toolset', async () => {
    const registry = createRegistry().use(plugin);
    expect(registry.list('tools')).toEqual(['patch', 'read_file', 'search_files', 'write_file']);
    expect(resolveToolset('file', registry.toolsets())).toEqual([
      'patch',
      'read_file',
      'search_files',
      'write_file',
    ]);
    const tool = (await registry.create('tools', 'read_file', { confine: false })) as ToolV1;
    expect(tool.name).toBe('read_file');
    expect(tool.maxResultChars).toBe(Number.POSITIVE_INFINITY);
  });

  it('gives hermes-agent schemas and rejects unknown settings by name', () => {
    const [read, write, patch, search] = createFileTools();
    expect(read!.jsonSchema).toMatchObject({
      required: ['path'],
      properties: { offset: { default: 1 }, limit: { default: 500, maximum: 2000 } },
    });
    expect(write!.jsonSchema).toMatchObject({ required: ['path', 'content'] });
    expect(patch!.jsonSchema).toMatchObject({ required: ['mode'] });
    expect(search!.jsonSchema).toMatchObject({ required: ['pattern'] });
    expect(() => createFileTools({ confined: true } as never)).toThrow(ConfigError);
    expect(() => createFileTools({ confined: true } as never)).toThrow(/valid keys: confine, maxReadChars/);
  });
});
