// A real MCP server from npm (@modelcontextprotocol/server-memory) started over stdio inside a
// real SSH sandbox (the test infra's sshd on this machine, so node and the package are there too):
// the rollout stores an entity and reads it back through the server, the server's file lands in the
// sandbox's remote workdir, and the server dies with the sandbox.
import { createRequire } from 'node:module';
import { runAgent } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createSshSandboxProvider } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpTools } from '../src/index.js';
import { countProcesses } from './processes.js';

const require = createRequire(import.meta.url);
const MEMORY = require.resolve('@modelcontextprotocol/server-memory/dist/index.js');

const env = process.env;
const available = Boolean(env.SHEARS_TEST_SSH_HOST && env.SHEARS_TEST_SSH_PORT && env.SHEARS_TEST_SSH_KEY);
if (!available && env.CI === 'true') {
  throw new Error(
    'SSH tests must run under CI=true, but the sshd test service did not start (see packages/test-infra/src/sshd.ts)',
  );
}

describe.skipIf(!available)('a stdio MCP server in an SSH sandbox', () => {
  const provider = available
    ? createSshSandboxProvider({
        host: env.SHEARS_TEST_SSH_HOST!,
        port: Number(env.SHEARS_TEST_SSH_PORT),
        username: env.SHEARS_TEST_SSH_USER ?? 'root',
        privateKeyPath: env.SHEARS_TEST_SSH_KEY,
        knownHostsPath: env.SHEARS_TEST_SSH_KNOWN_HOSTS,
        root: '/tmp/shears-ssh-mcp-test',
      })
    : undefined;
  afterAll(() => provider?.close());

  it('runs over SSH: tools called, effects in the remote workdir, no server outlives the sandbox', async () => {
    const tools = await createMcpTools({
      servers: {
        memory: {
          transport: 'stdio',
          command: process.execPath,
          args: [MEMORY],
          env: { MEMORY_FILE_PATH: '{workdir}/memory.jsonl' },
          prefix: 'mem_',
          include: ['create_entities', 'read_graph'],
        },
      },
    });
    const model = await createScriptedServer({
      replies: [
        {
          toolCalls: [
            {
              id: 'c1',
              name: 'mem_create_entities',
              arguments: { entities: [{ name: 'over-ssh', entityType: 'test', observations: ['hi'] }] },
            },
          ],
        },
        { toolCalls: [{ id: 'c2', name: 'mem_read_graph', arguments: {} }] },
        { content: 'done' },
      ],
    });
    const before = await countProcesses(MEMORY);
    const sandbox = await provider!.acquire();
    expect(sandbox.backend).toBe('ssh');
    let result: Awaited<ReturnType<typeof runAgent>>;
    let stored: string;
    try {
      result = await runAgent({
        server: createScriptedServerClient({ baseUrl: model.url, model: 'm', timeoutMs: 20_000 }),
        messages: [{ role: 'user', content: 'go' }],
        tools,
        sandbox,
      });
      stored = new TextDecoder().decode(await sandbox.readFile(`${sandbox.workdir}/memory.jsonl`));
      // The server runs while the sandbox lives.
      expect(await countProcesses(MEMORY)).toBe(before + 1);
    } finally {
      await sandbox.dispose();
      await model.close();
    }
    const toolMessages = result.messages
      .filter((message) => message.role === 'tool')
      .map((message) => String(message.content));
    expect(toolMessages).toHaveLength(2);
    expect(JSON.parse(toolMessages[1]!)).toMatchObject({
      entities: [{ name: 'over-ssh', entityType: 'test', observations: ['hi'] }],
    });
    expect(stored).toContain('"over-ssh"');
    expect(result.finalResponse).toBe('done');
    for (let tries = 0; tries < 50 && (await countProcesses(MEMORY)) !== before; tries++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await countProcesses(MEMORY)).toBe(before);
  });
});
