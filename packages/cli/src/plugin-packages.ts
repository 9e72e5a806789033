// The plugin packages shipped with shears, and where the CLI finds them. @shears/cli depends on the
// ones a local run uses (core, tools-terminal, tools-file, parsers, servers, judges); the others
// pull native or heavy dependencies a local run does not need, so the user installs them in their
// project when a run names what they provide (see docs/decisions/cli-dependencies.md).
import { isPlugin, type PluginManifest, resolvePluginUrl, ShearsError } from '@shears/core';

/** Plugin packages shipped with shears, registered when installed (in this order). */
const BUILTIN_PLUGINS = [
  '@shears/tools-terminal',
  '@shears/tools-file',
  '@shears/tools-web',
  '@shears/tools-mcp',
  '@shears/servers',
  '@shears/parsers',
  '@shears/judges',
  '@shears/grpo',
  '@shears/envs-swe',
  '@shears/gateway',
] as const;

/** The command that adds a package to the user's project. */
function installCommand(name: string): string {
  return `npm install ${name}`;
}

/** The package an ERR_MODULE_NOT_FOUND error says is missing (undefined for any other error). */
export function missingPackage(error: unknown): string | undefined {
  if ((error as { code?: unknown })?.code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  return /Cannot find package '((?:@[^/']+\/)?[^/']+)/.exec((error as Error).message)?.[1];
}

/**
 * Imports a built-in plugin package: from beside the CLI first (one project, or a global install
 * with its plugins), then from the user's project (`cwd`). Returns `undefined` when it is
 * installed in neither; any other failure (a broken package) throws.
 */
export async function importBuiltin(name: string, cwd: string): Promise<unknown> {
  let module: { default?: unknown; plugin?: unknown };
  try {
    // A variable specifier: a literal per package would tie the build to each package's presence.
    module = (await import(name)) as typeof module;
  } catch (error) {
    if (missingPackage(error) !== name) throw error;
    let url: string;
    try {
      url = resolvePluginUrl(name, { from: cwd });
    } catch {
      return undefined;
    }
    module = (await import(url)) as typeof module;
  }
  return module.default ?? module.plugin;
}

/** The built-in plugin packages, imported: each one's manifest, or why it is not there. */
export interface ImportedBuiltins {
  packages: Array<{ name: string; plugin?: PluginManifest; error?: string }>;
  /** What unknown-id errors add about the packages not installed ('' when all are). */
  missingHint: string;
}

/**
 * Imports the built-in plugin packages (in parallel; listed in `names` order, so ids resolve the
 * same way every run): those installed neither beside the CLI nor in `cwd` are named, with the
 * command that adds one.
 */
export async function importBuiltins(
  cwd: string,
  names: readonly string[] = BUILTIN_PLUGINS,
): Promise<ImportedBuiltins> {
  const imported = await Promise.allSettled(names.map((name) => importBuiltin(name, cwd)));
  const missing: string[] = [];
  const packages = imported.map((result, index) => {
    const name = names[index]!;
    if (result.status === 'rejected')
      return { name, error: String((result.reason as Error)?.message ?? result.reason).split('\n')[0] };
    if (result.value === undefined) {
      missing.push(name);
      return { name, error: `not installed (${installCommand(name)})` };
    }
    if (!isPlugin(result.value)) return { name, error: 'no plugin manifest as default export' };
    return { name, plugin: result.value };
  });
  return {
    packages,
    missingHint:
      missing.length === 0
        ? ''
        : `. Not installed here: ${missing.join(', ')}; \`${installCommand('<package>')}\` in your project adds one`,
  };
}

/**
 * A command whose modules import a shears package that is not installed (`shears api`, `serve` and
 * `train` need @shears/grpo): an error naming the package and the command that installs it.
 * Other errors are returned as they are.
 */
export function explainMissingPackage(error: unknown, command: string): unknown {
  const name = missingPackage(error);
  if (name === undefined || !name.startsWith('@shears/')) return error;
  return new ShearsError(
    `shears ${command} needs ${name}, which is not installed: run \`${installCommand(name)}\` in your project (beside @shears/cli)`,
    { code: 'SHEARS_PLUGIN_MISSING', cause: error },
  );
}
