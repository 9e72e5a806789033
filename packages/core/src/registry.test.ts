import { describe, expect, it } from 'vitest';
import { NoSuchEntryError } from './errors.js';
import { createRegistry, definePlugin } from './registry.js';

describe('registry', () => {
  it('names the available entries when an id is unknown', async () => {
    const registry = createRegistry();
    registry.use(
      definePlugin({
        id: 'p',
        sandboxes: {
          local: { create: () => ({}) as never },
          docker: { create: () => ({}) as never, aliases: ['container'] },
        },
      }),
    );
    expect(registry.has('sandboxes', 'container')).toBe(true);
    expect(() => registry.resolve('sandboxes', 'dokcer')).toThrowError(
      'No sandbox provider "dokcer" (available: docker, local)',
    );
    try {
      registry.resolve('sandboxes', 'dokcer');
    } catch (error) {
      expect(NoSuchEntryError.isInstance(error)).toBe(true);
    }
  });
});

describe('registry.toolsets()', () => {
  it('is the one table of toolsets: what every registered plugin declares, with its owner', () => {
    const registry = createRegistry();
    registry.use(definePlugin({ id: 'tools-a', toolsets: { alpha: { tools: ['a1', 'a2'] } } }));
    registry.use(
      definePlugin({ id: 'third-party', toolsets: { beta: { tools: ['b1'], includes: ['alpha'] } } }),
    );
    expect(registry.toolsets()).toEqual({
      alpha: { tools: ['a1', 'a2'] },
      beta: { tools: ['b1'], includes: ['alpha'] },
    });
    expect(registry.toolsetOwner('beta')).toBe('third-party');
    expect(registry.toolsetOwner('gamma')).toBeUndefined();
  });

  it('refuses a toolset another plugin already declared, and a malformed one, naming both plugins', () => {
    const registry = createRegistry();
    registry.use(definePlugin({ id: 'tools-a', toolsets: { alpha: { tools: ['a1'] } } }));
    expect(() =>
      registry.use(definePlugin({ id: 'tools-b', toolsets: { alpha: { tools: ['b1'] } } })),
    ).toThrowError('Plugin "tools-b" declares toolset "alpha", already declared by plugin "tools-a"');
    expect(() =>
      registry.use(definePlugin({ id: 'tools-c', toolsets: { gamma: { tools: 'c1' } as never } })),
    ).toThrowError(/Plugin "tools-c" declares toolset "gamma" as \{"tools":"c1"\}; expected \{ tools:/);
    // Nothing of a refused plugin is registered.
    expect(Object.keys(registry.toolsets())).toEqual(['alpha']);
  });
});
