// Real sandbox backends reached the way a config file reaches them: through the
// @shears/tools-terminal plugin manifest and the registry.
import { createRegistry, type SandboxProviderV1 } from '@shears/core';
import terminalPlugin from '@shears/tools-terminal';

export async function createBackend(
  id: 'local' | 'docker' | 'ssh',
  settings: Record<string, unknown> = {},
): Promise<SandboxProviderV1> {
  const registry = createRegistry().use(terminalPlugin);
  return (await registry.create('sandboxes', id, settings)) as SandboxProviderV1;
}
