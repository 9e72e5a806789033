// A sandbox provider's health in one step, for `check()` entries and `shears doctor`: acquire a
// real sandbox, run one command in it, dispose it and close the provider. A failure is a result.
import type { SandboxProviderV1 } from './contracts/sandbox.js';
import type { PluginCheckResult } from './registry.js';

export interface ProbeSandboxOptions {
  /** The provider id, named in the result (`local: opened a sandbox ...`). */
  id: string;
  /** What to do when it fails. */
  fix: string;
  signal?: AbortSignal;
}

/** Opens one sandbox with `provider`, runs `echo` in it, and closes both. */
export async function probeSandboxProvider(
  create: () => SandboxProviderV1 | Promise<SandboxProviderV1>,
  options: ProbeSandboxOptions,
): Promise<PluginCheckResult> {
  const { id, fix, signal } = options;
  let provider: SandboxProviderV1 | undefined;
  try {
    provider = await create();
    const sandbox = await provider.acquire({}, { signal });
    try {
      const result = await sandbox.exec('echo shears-doctor', { timeoutMs: 15_000, signal });
      if (result.exitCode !== 0 || !result.output.includes('shears-doctor'))
        return {
          name: 'sandbox',
          status: 'fail',
          detail: `${id}: a test command exited ${result.exitCode}: ${result.output.trim().slice(0, 120)}`,
          fix,
        };
      return {
        name: 'sandbox',
        status: 'ok',
        detail: `${id}: opened a sandbox (${sandbox.isolated ? 'isolated' : 'NOT isolated'}) and ran a command in ${sandbox.workdir}`,
      };
    } finally {
      await sandbox.dispose();
    }
  } catch (error) {
    const message = ((error as Error)?.message ?? String(error)).split('\n')[0];
    return { name: 'sandbox', status: 'fail', detail: `${id}: ${message}`, fix };
  } finally {
    await provider?.close().catch(() => undefined);
  }
}
