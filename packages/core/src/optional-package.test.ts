// Optional peer packages (dockerode, ssh2): real module resolution (Node's require.resolve and
// import) over packages written to a temporary project, the way a user's install would look.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from './errors.js';
import {
  importOptionalPackage,
  isPackageInstalled,
  optionalPackageCheck,
  requireOptionalPackage,
} from './optional-package.js';

const project = mkdtempSync(join(tmpdir(), 'shears-optional-package-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));
/** The module the lookups resolve from, as a plugin passes its own `import.meta.url`. */
const from = pathToFileURL(join(project, 'plugin.js')).href;
const use = { usedBy: 'the docker sandbox', field: 'sandbox.provider' };

function install(name: string, manifest: Record<string, unknown>, files: Record<string, string>): void {
  const directory = join(project, 'node_modules', name);
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'package.json'), JSON.stringify({ name, version: '1.0.0', ...manifest }));
  for (const [file, source] of Object.entries(files)) writeFileSync(join(directory, file), source);
}

install('present-cjs', { main: 'index.js' }, { 'index.js': 'module.exports = { ok: true };\n' });
install(
  'present-esm-only',
  { type: 'module', exports: { '.': { import: './index.js' } } },
  { 'index.js': 'export const ok = true;\n' },
);
install(
  'needs-missing-dep',
  { type: 'module', exports: { '.': { import: './index.js' } } },
  { 'index.js': "import 'dep-nobody-installed';\nexport const ok = true;\n" },
);
writeFileSync(join(project, 'imports-absent.mjs'), "export * from 'absent-package';\n");
writeFileSync(join(project, 'imports-broken.mjs'), "export * from 'needs-missing-dep';\n");

describe('optional packages', () => {
  it('refuses a missing one at creation with a ConfigError naming it and npm install', () => {
    let thrown: unknown;
    try {
      requireOptionalPackage('absent-package', from, use);
    } catch (error) {
      thrown = error;
    }
    expect(ConfigError.isInstance(thrown)).toBe(true);
    const error = thrown as ConfigError;
    expect(error.message).toBe(
      'The docker sandbox needs the "absent-package" package, which is not installed: run `npm install absent-package` in your project',
    );
    expect(error.issues).toEqual([{ path: 'sandbox.provider', message: error.message }]);
  });

  it('lets an installed one through, CommonJS or ESM-only (exports without a require condition)', () => {
    expect(() => requireOptionalPackage('present-cjs', from, use)).not.toThrow();
    expect(() => requireOptionalPackage('present-esm-only', from, use)).not.toThrow();
    expect(isPackageInstalled('present-esm-only', from)).toBe(true);
    expect(isPackageInstalled('absent-package', from)).toBe(false);
  });

  it('resolves from the module given, not from shears: a package only the user has is found', () => {
    expect(isPackageInstalled('present-cjs', from)).toBe(true);
    expect(isPackageInstalled('present-cjs', import.meta.url)).toBe(false);
  });

  it('ignores NODE_PATH (pnpm sets it for scripts) as import() does: require would find the package, import not', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'shears-node-path-'));
    mkdirSync(join(elsewhere, 'only-on-node-path'));
    writeFileSync(
      join(elsewhere, 'only-on-node-path', 'package.json'),
      '{"name":"only-on-node-path","main":"i.js"}',
    );
    writeFileSync(join(elsewhere, 'only-on-node-path', 'i.js'), 'module.exports = 1;\n');
    writeFileSync(join(project, 'imports-node-path.mjs'), "export * from 'only-on-node-path';\n");
    const saved = process.env.NODE_PATH;
    const initPaths = (Module as unknown as { _initPaths(): void })._initPaths;
    process.env.NODE_PATH = elsewhere;
    initPaths();
    try {
      expect(createRequire(from).resolve('only-on-node-path')).toBe(
        join(elsewhere, 'only-on-node-path', 'i.js'),
      );
      expect(isPackageInstalled('only-on-node-path', from)).toBe(false);
      const failure = await import(pathToFileURL(join(project, 'imports-node-path.mjs')).href).catch(
        (error: unknown) => error,
      );
      expect(failure).toMatchObject({ code: 'ERR_MODULE_NOT_FOUND' });
    } finally {
      if (saved === undefined) delete process.env.NODE_PATH;
      else process.env.NODE_PATH = saved;
      initPaths();
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('turns the import failure of the missing package itself into the same error', async () => {
    const failure = await importOptionalPackage(
      'absent-package',
      () => import(pathToFileURL(join(project, 'imports-absent.mjs')).href),
      use,
    ).catch((error: unknown) => error);
    expect(ConfigError.isInstance(failure)).toBe(true);
    expect((failure as Error).message).toContain('run `npm install absent-package`');
    expect((failure as Error).cause).toMatchObject({ code: 'ERR_MODULE_NOT_FOUND' });
  });

  it("leaves other failures alone: an installed package missing its own dependency is not 'install it'", async () => {
    const failure = await importOptionalPackage(
      'needs-missing-dep',
      () => import(pathToFileURL(join(project, 'imports-broken.mjs')).href),
      use,
    ).catch((error: unknown) => error);
    expect(ConfigError.isInstance(failure)).toBe(false);
    expect((failure as Error).message).toContain('dep-nobody-installed');
  });

  it('gives shears doctor a failing line with the install command, and nothing when installed', () => {
    expect(optionalPackageCheck('absent-package', from, use)).toEqual({
      name: 'package absent-package',
      status: 'fail',
      detail: 'not installed; the docker sandbox needs it',
      fix: 'npm install absent-package',
    });
    expect(optionalPackageCheck('present-cjs', from, use)).toBeUndefined();
  });
});
