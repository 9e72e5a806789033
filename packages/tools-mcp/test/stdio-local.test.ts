// Real MCP servers from npm (@modelcontextprotocol/server-filesystem and server-memory) started over
// stdio inside real local sandboxes, in a group of rollouts run by core's group runner with a
// scripted policy: each rollout writes a file through the filesystem server and stores an entity
// in its own memory server; the reward checks the file in that rollout's sandbox and asks that
// rollout's memory server (through the same tools) what it holds. No server outlives its sandbox.
import { createRequire } from 'node:module';
import { type EnvV1, runGroup } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpTools } from '../src/index.js';
import { countProcesses } from './processes.js';

const require = createRequire(import.meta.url);
const FILESYSTEM = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const MEMORY = require.resolve('@modelcontextprotocol/server-memory/dist/index.js');

describe('stdio MCP servers from npm in local sandboxes', () => {
  const provider = createLocalSandboxProvider();
  afterAll(() => provider.close());

  it('a group of rollouts calls them, each in its own sandbox, and the reward sees the effects', async () => {
    const tools = await createMcpTools({
      servers: {
        fs: {
          transport: 'stdio',
          command: process.execPath,
          args: [FILESYSTEM, '{workdir}'],
          include: ['write_file', 'read_text_file'],
        },
        memory: {
          transport: 'stdio',
          command: process.execPath,
          args: [MEMORY],
          env: { MEMORY_FILE_PATH: '{workdir}/memory.jsonl' },
          prefix: 'mem_',
        },
      },
    });
    expect(tools.map((tool) => tool.name)).toContain('fs__write_file');
    expect(tools.map((tool) => tool.name)).toContain('mem_create_entities');
    expect(tools.map((tool) => tool.name)).not.toContain('fs__list_directory');

    let rollout = 0;
    const model = await createScriptedServer({
      policy: (request) => {
        const done = request.messages.filter((message) => message.role === 'tool').length;
        const name = `rollout-${request.messages.length === 2 ? ++rollout : rollout}`;
        if (done === 0)
          return {
            toolCalls: [
              { name: 'fs__write_file', arguments: { path: 'notes.txt', content: 'written over MCP' } },
            ],
          };
        if (done === 1) {
          const who = String(request.messages.find((message) => message.role === 'user')?.content);
          return {
            toolCalls: [
              {
                name: 'mem_create_entities',
                arguments: { entities: [{ name: who, entityType: 'task', observations: [name] }] },
              },
            ],
          };
        }
        return { content: 'done' };
      },
    });
    const env: EnvV1<{ id: string; prompt: string }> = {
      specificationVersion: 'v1',
      id: 'mcp-test',
      nextItem: async () => ({ id: 'task-1', prompt: 'go' }),
      buildMessages: () => [
        { role: 'system', content: 'Use the tools.' },
        { role: 'user', content: 'remember me' },
      ],
      tools: () => tools,
      async computeReward(_item, _rollout, context) {
        const notes = new TextDecoder().decode(
          await context.sandbox.readFile(`${context.sandbox.workdir}/notes.txt`),
        );
        const graph = JSON.parse(await context.callTool('mem_read_graph', {})) as {
          entities: Array<{ name: string }>;
        };
        // Each rollout's memory server holds its own entity only.
        return { score: notes === 'written over MCP' && graph.entities.length === 1 ? 1 : 0 };
      },
    };
    const before = (await countProcesses(FILESYSTEM)) + (await countProcesses(MEMORY));
    try {
      const record = await runGroup({
        env,
        item: { id: 'task-1', prompt: 'go' },
        server: createScriptedServerClient({ baseUrl: model.url, model: 'm', timeoutMs: 20_000 }),
        sandboxes: provider,
        groupSize: 2,
      });
      expect(record.rollouts.map((entry) => entry.outcome)).toEqual(['scored', 'scored']);
      expect(record.scores).toEqual([1, 1]);
    } finally {
      await model.close();
    }
    expect((await countProcesses(FILESYSTEM)) + (await countProcesses(MEMORY))).toBe(before);
  });
});
