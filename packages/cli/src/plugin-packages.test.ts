// Plugin packages the CLI does not depend on: found in the user's project, or named with the
// command that installs them. Real module resolution (Node's import and core's resolvePluginUrl)
// over packages written to a temporary project.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, createRegistry, definePlugin, ShearsError, silentLogger } from '@shears/core';
import { requireOptionalPackage } from '@shears/core/internal';
import { afterAll, describe, expect, it } from 'vitest';
import type { ShearsConfig } from './config/config-schema.js';
import { explainMissingPackage, importBuiltin, importBuiltins, missingPackage } from './plugin-packages.js';
import { composeRegistry, createFromConfig } from './runtime/registry.js';

const project = mkdtempSync(join(tmpdir(), 'shears-plugin-packages-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));

/** Writes an ESM package (import condition only, as shears publishes them) into the project. */
function installInProject(name: string, source: string): void {
  const directory = join(project, 'node_modules', ...name.split('/'));
  mkdirSync(directory, { recursive: true });
  writeFileSync(
    join(directory, 'package.json'),
    JSON.stringify({ name, version: '0.0.0', type: 'module', exports: { '.': { import: './index.js' } } }),
  );
  writeFileSync(join(directory, 'index.js'), source);
}

async function importFailure(specifier: string): Promise<unknown> {
  return import(specifier).then(
    () => {
      throw new Error(`${specifier} imported`);
    },
    (error: unknown) => error,
  );
}

describe('built-in plugin packages the CLI does not depend on', () => {
  it("loads one installed only in the user's project (not beside the CLI)", async () => {
    installInProject('@shears/project-only-plugin', "export default { name: 'project-only', tools: {} };\n");
    await expect(importBuiltin('@shears/project-only-plugin', project)).resolves.toEqual({
      name: 'project-only',
      tools: {},
    });
  });

  it('reports one installed nowhere as not installed (undefined), not as a crash', async () => {
    await expect(importBuiltin('@shears/installed-nowhere', project)).resolves.toBeUndefined();
  });

  it('lets a broken installed package fail with its own error', async () => {
    installInProject('@shears/broken-plugin', "throw new Error('broken at import');\n");
    await expect(importBuiltin('@shears/broken-plugin', project)).rejects.toThrow('broken at import');
  });

  it('turns a command module that imports a missing shears package into an error naming it and the install command', async () => {
    const error = await importFailure('@shears/grpo-not-installed');
    expect(missingPackage(error)).toBe('@shears/grpo-not-installed');
    const explained = explainMissingPackage(error, 'api');
    expect(ShearsError.isInstance(explained)).toBe(true);
    expect((explained as ShearsError).code).toBe('SHEARS_PLUGIN_MISSING');
    expect((explained as Error).message).toBe(
      'shears api needs @shears/grpo-not-installed, which is not installed: run `npm install @shears/grpo-not-installed` in your project (beside @shears/cli)',
    );
  });

  it('leaves other errors as they are (a missing third-party module, a missing file)', async () => {
    const thirdParty = await importFailure('left-pad-not-installed');
    expect(explainMissingPackage(thirdParty, 'api')).toBe(thirdParty);
    const file = await importFailure(join(project, 'no-such-file.js'));
    expect(missingPackage(file)).toBeUndefined();
    expect(explainMissingPackage(file, 'api')).toBe(file);
  });

  it('a config naming an entry no installed package provides lists the built-ins that are not installed', async () => {
    const { registry, plugins } = await composeRegistry({ plugins: [] } as unknown as ShearsConfig, {
      cwd: project,
      logger: silentLogger,
      imported: await importBuiltins(project, ['@shears/tools-file', '@shears/swe-not-installed']),
    });
    expect(plugins.find((plugin) => plugin.name === '@shears/swe-not-installed')).toEqual({
      name: '@shears/swe-not-installed',
      loaded: false,
      error: 'not installed (npm install @shears/swe-not-installed)',
    });
    const error = await createFromConfig(registry, 'envs', 'swe', 'env.name', {}).catch(
      (cause: unknown) => cause,
    );
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(
      'Not installed here: @shears/swe-not-installed; `npm install <package>` in your project adds one',
    );
  });
});

describe('a package the chosen provider needs', () => {
  it('is reported against the provider field (sandbox.provider), not its settings', async () => {
    const registry = createRegistry().use(
      definePlugin({
        id: 'needs-a-package',
        sandboxes: {
          needy: {
            create: () => {
              requireOptionalPackage('shears-no-such-package', import.meta.url, {
                usedBy: 'the needy sandbox',
                field: 'sandbox.provider',
              });
              throw new Error('unreachable: the package is not installed');
            },
          },
        },
      }),
    );
    const error = await createFromConfig(
      registry,
      'sandboxes',
      'needy',
      'sandbox.provider',
      {},
      'sandbox.settings',
    ).catch((cause: unknown) => cause);
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).message).toBe(
      'sandbox.provider: The needy sandbox needs the "shears-no-such-package" package, which is not installed: run `npm install shears-no-such-package` in your project',
    );
    expect((error as ConfigError).issues.map((issue) => issue.path)).toEqual(['sandbox.provider']);
  });
});
