import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { silentLogger } from './contracts/logger.js';
import { NoSuchEntryError } from './errors.js';
import { InvalidSettingsError, type SettingsIssue } from './plugin-settings.js';
import { createRegistry, definePlugin, definePluginEntry } from './registry.js';

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

describe('plugin settings', () => {
  const schema = z.strictObject({
    maxTurns: z.int().min(1).default(8),
    limits: z.object({ memoryMb: z.number().positive().optional() }).default({}),
    hosts: z.array(z.object({ url: z.string() })).optional(),
  });
  function registryWith(
    create = (settings: z.output<typeof schema>): never => ({ ...fakeEnv, settings }) as never,
  ) {
    const registry = createRegistry();
    registry.use(definePlugin({ id: 'p', envs: { demo: definePluginEntry({ settings: schema, create }) } }));
    return registry;
  }
  const fakeEnv = { specificationVersion: 'v1' } as const;

  it('parses the settings once with the entry schema and hands create the typed, defaulted result', async () => {
    const seen: unknown[] = [];
    const registry = registryWith((settings) => {
      expectTypeOf(settings.maxTurns).toEqualTypeOf<number>();
      seen.push(settings);
      return { ...fakeEnv } as never;
    });
    await registry.create('envs', 'demo', { limits: { memoryMb: 512 } });
    expect(seen).toEqual([{ maxTurns: 8, limits: { memoryMb: 512 } }]);
  });

  it('refuses an unknown key, at the top or nested, naming the allowed keys and the closest one', async () => {
    const registry = registryWith();
    await expect(registry.create('envs', 'demo', { maxturns: 3 })).rejects.toThrowError(
      'Invalid settings for environment "demo": settings.maxturns: unknown setting (did you mean "maxTurns"?); allowed: maxTurns, limits, hosts',
    );
    // `limits` is a plain z.object, which zod would strip silently: refused here too.
    const error = await registry.create('envs', 'demo', { limits: { swap: 1 } }).catch((caught) => caught);
    expect(InvalidSettingsError.isInstance(error)).toBe(true);
    expect(error.issues).toEqual([
      { path: 'limits.swap', message: 'unknown setting; allowed: memoryMb', value: 1 },
    ]);
    await expect(
      registry.create('envs', 'demo', { hosts: [{ url: 'a' }, { url: 'b', tls: true }] }),
    ).rejects.toThrowError('settings.hosts[1].tls: unknown setting; allowed: url');
  });

  it('names every field a value does not fit, with the value given', async () => {
    const registry = registryWith();
    const error = await registry
      .create('envs', 'demo', { maxTurns: 0, limits: { memoryMb: 'lots' } })
      .catch((caught) => caught);
    expect(error.message).toBe(
      'Invalid settings for environment "demo": settings.maxTurns: must be >= 1, got 0; settings.limits.memoryMb: expected number, got "lots"',
    );
    expect(error.issues.map((issue: SettingsIssue) => issue.path)).toEqual(['maxTurns', 'limits.memoryMb']);
  });

  it('passes settings as given to an entry without a schema, and warns once that they are unchecked', async () => {
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (message: string) => warnings.push(message) };
    const registry = createRegistry({ logger });
    const seen: unknown[] = [];
    registry.use(
      definePlugin({
        id: 'old-pack',
        envs: {
          legacy: {
            create: (settings) => {
              seen.push(settings);
              return { ...fakeEnv } as never;
            },
          },
        },
      }),
    );
    await registry.create('envs', 'legacy', {});
    await registry.create('envs', 'legacy', { tasks: 'x', anything: 1 });
    await registry.create('envs', 'legacy', { tasks: 'y' });
    expect(seen).toEqual([{}, { tasks: 'x', anything: 1 }, { tasks: 'y' }]);
    expect(warnings).toEqual([
      'environment "legacy" (plugin "old-pack") declares no settings schema: its settings (tasks, anything) are passed to it unchecked',
    ]);
  });

  it('refuses an instance of a contract version this kernel does not implement, naming the plugin', async () => {
    const registry = createRegistry();
    registry.use(
      definePlugin({
        id: 'future-pack',
        servers: { next: { create: () => ({ specificationVersion: 'v2' }) as never } },
        tools: {
          pair: {
            create: () => [{ specificationVersion: 'v1', name: 'a' }, { name: 'b' }] as never,
          },
        },
      }),
    );
    await expect(registry.create('servers', 'next')).rejects.toThrowError(
      'server "next" of plugin "future-pack" created an object with specificationVersion "v2"; this version of @shears/core implements server contract v1',
    );
    await expect(registry.create('tools', 'pair')).rejects.toThrowError(
      'tool "pair" of plugin "future-pack" created an object with specificationVersion undefined',
    );
  });

  it("check(): the entry's own check with parsed settings; undefined for an entry without one", async () => {
    const registry = createRegistry();
    registry.use(
      definePlugin({
        id: 'p',
        sandboxes: {
          probe: definePluginEntry({
            settings: z.strictObject({ host: z.string() }),
            create: () => ({}) as never,
            check: (settings, context) => [
              { name: 'probe', status: 'ok', detail: `${settings.host} via ${context.settingsField}` },
            ],
          }),
          plain: { create: () => ({}) as never },
        },
      }),
    );
    expect(
      await registry.check(
        'sandboxes',
        'probe',
        { host: 'h' },
        { env: {}, settingsField: 'sandbox.settings' },
      ),
    ).toEqual([{ name: 'probe', status: 'ok', detail: 'h via sandbox.settings' }]);
    await expect(
      registry.check('sandboxes', 'probe', { hots: 'h' }, { env: {}, settingsField: 'sandbox.settings' }),
    ).rejects.toThrowError('settings.hots: unknown setting (did you mean "host"?)');
    expect(await registry.check('sandboxes', 'plain', {}, { env: {}, settingsField: 's' })).toBeUndefined();
  });
});
