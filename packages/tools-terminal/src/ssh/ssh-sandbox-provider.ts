// placeholder, replaced below
import type { SandboxProviderV1 } from '@shears/core';
export async function createSshSandboxProvider(_settings: Record<string, unknown>): Promise<SandboxProviderV1> {
  throw new Error('not yet');
}
