// A third-party pack is loaded by npm package name at run time, and its tool and env work in
// the kernel: the registry imports `shears-pack-hello` (examples/hello-pack, plain JS) from the
// repository root.
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { EnvV1 } from './contracts/env.js';
import type { ToolV1 } from './contracts/tool.js';
import { runGroup } from './group-runner.js';
import { createRegistry } from './registry.js';
import { createScriptedServer } from './test/scripted-server.js';
import { createScriptedServerClient } from './test/scripted-server-client.js';
import { createTempSandboxProvider } from './test/temp-sandbox-provider.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const provider = createTempSandboxProvider();
afterAll(() => provider.close());

describe('loading shears-pack-hello by package name', () => {
  it('registers the pack and runs its tool in a sandbox', async () => {
    const registry = createRegistry();
    const manifest = await registry.load('shears-pack-hello', { from: repoRoot });
    expect(manifest.id).toBe('shears-pack-hello');
    expect(registry.list('tools')).toContain('hello');
    expect(registry.list('envs')).toContain('hello');
    const tool = (await registry.create('tools', 'hello', { punctuation: '?' })) as ToolV1;
    const sandbox = await provider.acquire();
    try {
      const output = await tool.execute(tool.inputSchema.parse({ name: 'Ada' }), {
        sandbox,
        taskId: 't',
        rolloutId: 'r',
        signal: new AbortController().signal,
        logger: { debug() {}, info() {}, warn() {}, error() {} },
        state: new Map(),
      });
      expect(output).toBe('Hello, Ada?');
      expect(new TextDecoder().decode(await sandbox.readFile('greeting.txt'))).toBe('Hello, Ada?\n');
    } finally {
      await sandbox.dispose();
    }
  });

  it('runs a group of its env against the scripted server', async () => {
    const registry = createRegistry();
    await registry.load('shears-pack-hello', { from: repoRoot });
    const env = (await registry.create('envs', 'hello', { names: ['Grace'] })) as EnvV1;
    const server = await createScriptedServer({
      policy: (request, { callIndex }) =>
        request.messages.at(-1)?.role === 'tool'
          ? { content: 'done' }
          : { toolCalls: [{ name: 'hello', arguments: { name: callIndex % 2 === 0 ? 'Grace' : 'Nobody' } }] },
    });
    try {
      const record = await runGroup({
        env,
        item: (await env.nextItem())!,
        server: createScriptedServerClient({ baseUrl: server.url, model: 'scripted' }),
        sandboxes: provider,
        groupSize: 2,
      });
      expect([...record.scores].sort()).toEqual([0, 1]);
      expect(provider.liveCount).toBe(0);
    } finally {
      await server.close();
    }
  });
});
