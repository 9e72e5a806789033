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
