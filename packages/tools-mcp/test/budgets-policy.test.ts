// MCP tools go through the kernel like native ones: a result over the tool's `maxResultChars` is
// persisted into the rollout's sandbox with a preview, the action policy hook (`beforeToolCall`)
// can refuse a call before it reaches the server.
import { fileURLToPath } from 'node:url';
import { runAgent } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpTools } from '../src/index.js';

const BAD_SERVER = fileURLToPath(new URL('./fixtures/bad-server.mjs', import.meta.url));

describe('MCP tools under the tool-result budget and the action policy', () => {
  const provider = createLocalSandboxProvider();
  afterAll(() => provider.close());

  it('persists an oversized result into the sandbox and lets the policy refuse a call', async () => {
    const tools = await createMcpTools({
      servers: {
        srv: {
          transport: 'stdio',
          command: process.execPath,
          args: [BAD_SERVER, 'tools'],
          include: ['echo'],
          maxResultChars: 100,
        },
      },
    });
    const long = 'x'.repeat(5_000);
    const model = await createScriptedServer({
      replies: [
        { toolCalls: [{ id: 'c1', name: 'srv__echo', arguments: { text: long } }] },
        { toolCalls: [{ id: 'c2', name: 'srv__echo', arguments: { text: 'forbidden' } }] },
        { content: 'done' },
      ],
    });
    const sandbox = await provider.acquire();
    try {
      const result = await runAgent({
        server: createScriptedServerClient({ baseUrl: model.url, model: 'm', timeoutMs: 10_000 }),
        messages: [{ role: 'user', content: 'go' }],
        tools,
        sandbox,
        beforeToolCall: (call) =>
          call.arguments.text === 'forbidden'
            ? { allow: false, message: 'Refused by the action policy: no forbidden words' }
            : { allow: true },
      });
      const [persisted, refused] = result.messages
        .filter((message) => message.role === 'tool')
        .map((message) => String(message.content));
      expect(persisted).toContain('<persisted-output>');
      const path = /Full output saved to: (\S+)/.exec(persisted!)?.[1];
      expect(path, persisted).toBeDefined();
      expect(new TextDecoder().decode(await sandbox.readFile(path!))).toBe(`echo: ${long}`);
      expect(refused).toContain('Refused by the action policy: no forbidden words');
      expect(result.policyRefusals).toBe(1);
    } finally {
      await sandbox.dispose();
      await model.close();
    }
  });
});
