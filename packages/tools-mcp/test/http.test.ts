// Streamable-HTTP MCP servers: a real SDK McpServer behind a real node:http server speaking the
// streamable HTTP transport. Checks the header from the environment reaches the server, one MCP
// session per rollout (and one shared with pool: true), and the result mapping the model sees.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { type EnvV1, runGroup, type ToolContext, type ToolV1 } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createMcpTools, McpServerError } from '../src/index.js';

const PNG_1x1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

function newMcpServer(): McpServer {
  const server = new McpServer({ name: 'http-test', version: '1.0.0' });
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: String(a + b) }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool('session', { description: 'Which MCP session this is' }, async (extra) => ({
    content: [{ type: 'text', text: String(extra.sessionId) }],
  }));
  server.registerTool('picture', { description: 'An image' }, async () => ({
    content: [
      { type: 'text', text: 'here it is' },
      { type: 'image', data: PNG_1x1, mimeType: 'image/png' },
    ],
  }));
  server.registerTool('fail', { description: 'Reports an error' }, async () => ({
    content: [{ type: 'text', text: 'disk full' }],
    isError: true,
  }));
  return server;
}

describe('streamable-HTTP MCP servers', () => {
  let http: Server;
  let url: string;
  const authorizations: Array<string | undefined> = [];
  const sessions = new Set<string>();
  const deleted: string[] = [];
  const provider = createLocalSandboxProvider();

  beforeAll(async () => {
    const transports = new Map<string, StreamableHTTPServerTransport>();
    http = createServer(async (request, response) => {
      authorizations.push(request.headers.authorization);
      if (request.headers.authorization !== 'Bearer s3cret') {
        response.writeHead(401).end('unauthorized');
        return;
      }
      const sessionId = request.headers['mcp-session-id'] as string | undefined;
      if (request.method === 'DELETE' && sessionId) deleted.push(sessionId);
      let transport = sessionId ? transports.get(sessionId) : undefined;
      if (!transport) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            sessions.add(id);
            transports.set(id, transport!);
          },
        });
        await newMcpServer().connect(transport);
      }
      await transport.handleRequest(request, response);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    await provider.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });

  const settings = (extra: Record<string, unknown> = {}) => ({
    servers: {
      calc: {
        transport: 'http' as const,
        url,
        headers: { Authorization: 'Bearer ${MCP_TEST_TOKEN}' },
        ...extra,
      },
    },
  });

  async function call(tools: ToolV1[], name: string, args: Record<string, unknown>, context: ToolContext) {
    const tool = tools.find((candidate) => candidate.name === name)!;
    const output = await tool.execute(tool.inputSchema.parse(args), context);
    return typeof output === 'string' ? { content: output } : output;
  }

  async function rolloutContext(): Promise<ToolContext> {
    const sandbox = await provider.acquire();
    return {
      sandbox,
      taskId: 't',
      rolloutId: randomUUID(),
      signal: new AbortController().signal,
      logger: console as never,
      state: new Map(),
    };
  }

  it('offers the tools with prefixed names and passes their JSON Schemas through', async () => {
    const tools = await createMcpTools(settings(), { env: { MCP_TEST_TOKEN: 's3cret' } });
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'calc__add',
      'calc__fail',
      'calc__picture',
      'calc__session',
    ]);
    const add = tools.find((tool) => tool.name === 'calc__add')!;
    expect(add.jsonSchema).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
    });
    expect(add.toolset).toBe('mcp');
    // Arguments the schema refuses never reach the server.
    expect(add.inputSchema.safeParse({ a: 1, b: 'two' }).success).toBe(false);
  });

  it('maps results: text, structured content, images as a note, isError', async () => {
    const tools = await createMcpTools(settings(), { env: { MCP_TEST_TOKEN: 's3cret' } });
    const context = await rolloutContext();
    try {
      const added = await call(tools, 'calc__add', { a: 2, b: 40 }, context);
      expect(added.content).toBe('42');
      expect(added.data).toEqual({ structuredContent: { sum: 42 } });
      const picture = await call(tools, 'calc__picture', {}, context);
      expect(picture.content).toBe(
        'here it is\n[image image/png of 70 bytes omitted: tool results are text here]',
      );
      expect(picture.data).toEqual({ omitted: [{ type: 'image', mimeType: 'image/png', bytes: 70 }] });
      const failed = await call(tools, 'calc__fail', {}, context);
      expect(failed).toMatchObject({ content: 'disk full', isError: true });
    } finally {
      await context.sandbox.dispose();
    }
  });

  it('sends the header from the environment, and refuses an unset variable at start', async () => {
    authorizations.length = 0;
    await createMcpTools(settings(), { env: { MCP_TEST_TOKEN: 's3cret' } });
    expect(authorizations.length).toBeGreaterThan(0);
    expect(new Set(authorizations)).toEqual(new Set(['Bearer s3cret']));
    await expect(createMcpTools(settings(), { env: {} })).rejects.toThrow(
      'header Authorization uses ${MCP_TEST_TOKEN}, but the environment variable MCP_TEST_TOKEN is not set',
    );
    const refused = await createMcpTools(settings(), { env: { MCP_TEST_TOKEN: 'wrong' } }).catch(
      (error) => error,
    );
    expect(McpServerError.isInstance(refused)).toBe(true);
    expect(refused.message).toMatch(/^MCP server "calc" could not be started: .*401/);
  });

  it('gives each rollout its own MCP session, and one shared session with pool: true', async () => {
    const tools = await createMcpTools(settings(), { env: { MCP_TEST_TOKEN: 's3cret' } });
    const [first, second] = [await rolloutContext(), await rolloutContext()];
    try {
      const a1 = (await call(tools, 'calc__session', {}, first)).content;
      const a2 = (await call(tools, 'calc__session', {}, first)).content;
      const b1 = (await call(tools, 'calc__session', {}, second)).content;
      expect(a1).toBe(a2);
      expect(b1).not.toBe(a1);
      expect(sessions.has(a1)).toBe(true);

      const pooled = await createMcpTools(settings({ pool: true }), { env: { MCP_TEST_TOKEN: 's3cret' } });
      const p1 = (await call(pooled, 'calc__session', {}, first)).content;
      const p2 = (await call(pooled, 'calc__session', {}, second)).content;
      expect(p1).toBe(p2);
      expect([a1, b1]).not.toContain(p1);
    } finally {
      await first.sandbox.dispose();
      await second.sandbox.dispose();
    }
  });

  it('in a group of rollouts, ends the MCP session of each rollout when it ends', async () => {
    const tools = await createMcpTools(settings(), { env: { MCP_TEST_TOKEN: 's3cret' } });
    const model = await createScriptedServer({
      policy: (request) =>
        request.messages.some((message) => message.role === 'tool')
          ? { content: 'done' }
          : { toolCalls: [{ name: 'calc__session', arguments: {} }] },
    });
    const used: string[] = [];
    const env: EnvV1<{ id: string; prompt: string }> = {
      specificationVersion: 'v1',
      id: 'mcp-http-test',
      nextItem: async () => ({ id: 'task-1', prompt: 'go' }),
      buildMessages: () => [{ role: 'user', content: 'go' }],
      tools: () => tools,
      async computeReward(_item, rollout) {
        const session = String(rollout.messages.find((message) => message.role === 'tool')?.content);
        used.push(session);
        return { score: sessions.has(session) ? 1 : 0 };
      },
    };
    deleted.length = 0;
    try {
      const record = await runGroup({
        env,
        item: { id: 'task-1', prompt: 'go' },
        server: createScriptedServerClient({ baseUrl: model.url, model: 'm', timeoutMs: 20_000 }),
        sandboxes: provider,
        groupSize: 2,
      });
      expect(record.scores).toEqual([1, 1]);
    } finally {
      await model.close();
    }
    expect(new Set(used).size).toBe(2);
    expect([...deleted].sort()).toEqual([...used].sort());
  });
});
