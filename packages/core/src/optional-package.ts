// Packages a plugin loads only when one of its providers is used (dockerode for the docker
// sandbox, ssh2 for the ssh sandbox): declared as optional peer dependencies, so installing the
// plugin does not install them. When one is missing, the user gets a ConfigError naming the
// package, what needs it and the install command, at provider creation (before a run starts)
// and in `shears doctor`, instead of a module-resolution stack trace mid-run.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './errors.js';
import type { PluginCheckResult } from './registry.js';

export interface OptionalPackageUse {
  /** What needs the package, in config terms: `the docker sandbox (sandbox.provider: docker)`. */
  usedBy: string;
  /** The config field that selected it (ConfigError issues name it). */
  field?: string;
}

function missingPackageError(name: string, use: OptionalPackageUse, cause: unknown): ConfigError {
  const who = use.usedBy.charAt(0).toUpperCase() + use.usedBy.slice(1);
  const message = `${who} needs the "${name}" package, which is not installed: run \`npm install ${name}\` in your project`;
  return new ConfigError({
    message,
    issues: [{ path: use.field ?? name, message }],
    cause,
  });
}

/** The package an ERR_MODULE_NOT_FOUND error names (undefined for any other error). */
function missingModuleName(error: unknown): string | undefined {
  if ((error as { code?: unknown } | undefined)?.code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  return /Cannot find package '((?:@[^/']+\/)?[^/']+)/.exec((error as Error).message)?.[1];
}

/**
 * The folder `import(name)` from the module at `from` (pass `import.meta.url`) would load the
 * package from, or undefined: ESM's lookup of a bare specifier, a `node_modules/<name>` folder in
 * the module's directory or one above it. Written out rather than `require.resolve` because require
 * also searches NODE_PATH, which `import()` ignores and pnpm sets for scripts: require would find a
 * package the import then cannot.
 */
export function packageDirectory(name: string, from: string | URL): string | undefined {
  let directory = dirname(fileURLToPath(from));
  for (;;) {
    const candidate = join(directory, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

/** Whether `import(name)` from the module at `from` would find the package (packageDirectory). */
export function isPackageInstalled(name: string, from: string | URL): boolean {
  return packageDirectory(name, from) !== undefined;
}

/** Throws a ConfigError naming `name` and `npm install <name>` when it does not resolve from `from`. */
export function requireOptionalPackage(name: string, from: string | URL, use: OptionalPackageUse): void {
  if (!isPackageInstalled(name, from))
    throw missingPackageError(name, use, new Error(`no node_modules/${name} from ${String(from)}`));
}

/**
 * Runs `load` (a literal `import('<name>')` in the caller's file, so it resolves from there); a
 * failure because `name` itself is not installed becomes the ConfigError above. Any other error
 * (a broken install, a missing dependency of the package) is thrown as it is.
 */
export async function importOptionalPackage<T>(
  name: string,
  load: () => Promise<T>,
  use: OptionalPackageUse,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (missingModuleName(error) === name) throw missingPackageError(name, use, error);
    throw error;
  }
}

/** A `shears doctor` line for an optional package: undefined when it is installed. */
export function optionalPackageCheck(
  name: string,
  from: string | URL,
  use: OptionalPackageUse,
): PluginCheckResult | undefined {
  if (isPackageInstalled(name, from)) return undefined;
  return {
    name: `package ${name}`,
    status: 'fail',
    detail: `not installed; ${use.usedBy} needs it`,
    fix: `npm install ${name}`,
  };
}
