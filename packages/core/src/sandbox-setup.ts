// The set-up every sandbox provider runs before handing a sandbox out (`SandboxSpec.setup`):
// one loop, one time limit and one error, whatever the backend.
import type { SandboxSpec, SandboxV1 } from './contracts/sandbox.js';
import { SandboxError } from './errors.js';

/** Time limit of one set-up command (installs and builds can be slow). */
export const SANDBOX_SETUP_TIMEOUT_MS = 600_000;

/**
 * Writes the spec's `files` into `sandbox` (with its `writeFile`), then runs its `setup` commands
 * in order (a bare list is the commands alone). A file that cannot be written throws a
 * SandboxError naming it; the first command that exits non-zero or times out throws a
 * SandboxError naming the command, its position, its exit code and the last 2,000 characters of
 * its output; the rest do not run. The caller disposes the sandbox on a throw.
 */
export async function runSandboxSetup(
  sandbox: SandboxV1,
  spec: readonly string[] | Pick<SandboxSpec, 'files' | 'setup'> = [],
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  const commands = Array.isArray(spec) ? spec : ((spec as SandboxSpec).setup ?? []);
  const files = Array.isArray(spec) ? {} : ((spec as SandboxSpec).files ?? {});
  for (const [path, content] of Object.entries(files)) {
    options.signal?.throwIfAborted();
    if (typeof content !== 'string' && !(content instanceof Uint8Array))
      throw new SandboxError({
        sandboxId: sandbox.id,
        message: `Sandbox ${sandbox.id}: file "${path}" has no content a sandbox can hold (a string or a Uint8Array), got ${content === null ? 'null' : typeof content}`,
      });
    try {
      await sandbox.writeFile(path, content, options.signal ? { signal: options.signal } : {});
    } catch (cause) {
      throw new SandboxError({
        sandboxId: sandbox.id,
        message: `Sandbox ${sandbox.id}: could not write file "${path}": ${(cause as Error).message}`,
        cause,
      });
    }
  }
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
