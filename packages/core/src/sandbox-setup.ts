// The set-up every sandbox provider runs before handing a sandbox out (`SandboxSpec.setup`):
// one loop, one time limit and one error, whatever the backend.
import type { SandboxV1 } from './contracts/sandbox.js';
import { SandboxError } from './errors.js';

/** Time limit of one set-up command (installs and builds can be slow). */
export const SANDBOX_SETUP_TIMEOUT_MS = 600_000;

/**
 * Runs `commands` in order in `sandbox`. The first one that exits non-zero or times out throws a
 * SandboxError naming the command, its position, its exit code and the last 2,000 characters of
 * its output; the rest do not run. The caller disposes the sandbox on a throw.
 */
export async function runSandboxSetup(
  sandbox: SandboxV1,
  commands: readonly string[] = [],
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  for (const [index, command] of commands.entries()) {
    const result = await sandbox.exec(command, {
      timeoutMs: SANDBOX_SETUP_TIMEOUT_MS,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (result.exitCode === 0 && !result.timedOut) continue;
    const how = result.timedOut
      ? `timed out after ${SANDBOX_SETUP_TIMEOUT_MS} ms`
      : `exit ${result.exitCode}`;
    throw new SandboxError({
      sandboxId: sandbox.id,
      message: `Sandbox ${sandbox.id}: setup command ${index + 1} of ${commands.length} failed (${how}): ${command}\n${result.output.slice(-2000)}`,
    });
  }
}
