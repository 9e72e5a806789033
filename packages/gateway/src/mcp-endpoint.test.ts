// The gateway's per-rollout MCP endpoint, driven by the official MCP SDK client over real HTTP:
// the rollout's tools are listed with the schemas a model would see, a call runs in THAT
// rollout's (real, local) sandbox and is recorded in its session; another rollout's key or URL,
// a wrong key and a closed rollout get 401; a session opened without tools has no endpoint. The
// endpoint is stateful: `initialize` opens an MCP session (its id in `mcp-session-id`) that lives
// in its own rollout only and ends when the client deletes it or the rollout ends.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { defineTool, type SandboxV1, type ToolV1 } from '@shears/core';
import { toolSchemas } from '@shears/core/internal';
import { createLocalSandboxProvider, createTerminalTool } from '@shears/tools-terminal';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { phase1Backend } from '../test/backends.js';
import { createGateway, type Gateway, type GatewaySession } from './gateway.js';
import { gatewayRecordSchema } from './gateway-record.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An env's own tool: writes a note into the rollout's workspace. */
const noteTool: ToolV1<{ text: string }> = defineTool({
  name: 'write_note',
  description: 'Write a note into NOTE.txt in the workspace.',
  inputSchema: z.object({ text: z.string().min(1) }),
  async execute(args, context) {
    await context.sandbox.writeFile('NOTE.txt', args.text);
    return `wrote ${args.text.length} characters to NOTE.txt`;
  },
});
const TOOLS: ToolV1[] = [createTerminalTool(), noteTool];

async function setup(): Promise<{ gateway: Gateway; sandboxes: [SandboxV1, SandboxV1] }> {
  const backend = await phase1Backend({ replies: [] });
  const gateway = await createGateway({ server: backend.server });
  const provider = createLocalSandboxProvider();
  const a = await provider.acquire();
  const b = await provider.acquire();
  cleanups.push(
    () => backend.close(),
    () => provider.close(),
    () => a.dispose(),
    () => b.dispose(),
    () => gateway.close(),
  );
  return { gateway, sandboxes: [a, b] };
}

/** The SDK client, connected to `url` with `key` as its bearer (resuming `sessionId` when given). */
async function connect(url: string, key: string, sessionId?: string): Promise<Client> {
  const client = new Client({ name: 'shears-test', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    ...(sessionId !== undefined ? { sessionId } : {}),
  });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return client;
}
const sessionIdOf = (client: Client) =>
  (client.transport as StreamableHTTPClientTransport | undefined)?.sessionId;

const text = (result: Awaited<ReturnType<Client['callTool']>>) =>
  (result.content as Array<{ type: string; text?: string }>).map((part) => part.text ?? '').join('');

const read = async (sandbox: SandboxV1, path: string) => {
  try {
    return new TextDecoder().decode(await sandbox.readFile(path));
  } catch {
    return null;
  }
};

describe('the gateway MCP endpoint (the official SDK client, real HTTP, real local sandboxes)', () => {
  it("lists the rollout's tools with their model schemas, and a call runs in that rollout's sandbox and is recorded", async () => {
    const { gateway, sandboxes } = await setup();
    const [sandboxA] = sandboxes;
    const session = gateway.openSession({ rolloutId: 'r-a', tools: { tools: TOOLS, sandbox: sandboxA } });
    expect(session.mcpUrl).toBe(`${session.baseUrl}/mcp`);
    const client = await connect(session.mcpUrl!, session.apiKey);

    const listed = await client.listTools();
    expect(listed.tools.map((tool) => tool.name)).toEqual(['terminal', 'write_note']);
    const schemas = toolSchemas(TOOLS);
    expect(listed.tools.map((tool) => tool.inputSchema)).toEqual(
      schemas.map((schema) => schema.function.parameters),
    );
    expect(listed.tools[0]?.description).toBe(schemas[0]?.function.description);

    const ran = await client.callTool({
      name: 'terminal',
      arguments: { command: 'echo from-a > marker.txt && pwd' },
    });
    expect(ran.isError).toBeFalsy();
    // The terminal tool's own result JSON, as the agent loop would give it to a model.
    expect(JSON.parse(text(ran))).toMatchObject({ exit_code: 0, output: sandboxA.workdir });
    expect(await read(sandboxA, 'marker.txt')).toBe('from-a\n');

    const noted = await client.callTool({ name: 'write_note', arguments: { text: 'héllo 🌍' } });
    expect(text(noted)).toBe('wrote 8 characters to NOTE.txt');
    expect(await read(sandboxA, 'NOTE.txt')).toBe('héllo 🌍');

    // Bad arguments and an unknown tool get the agent loop's error results, flagged as errors.
    const bad = await client.callTool({ name: 'write_note', arguments: { text: 1 } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/Invalid arguments for tool 'write_note'/);
    const unknown = await client.callTool({ name: 'rm_rf', arguments: {} });
    expect(unknown.isError).toBe(true);
    expect(JSON.parse(text(unknown))).toEqual({
      error: "Unknown tool 'rm_rf'. Available tools: ['terminal', 'write_note']",
    });

    const record = gatewayRecordSchema.parse(session.record());
    expect(record.toolCalls.map((call) => [call.index, call.name, call.error !== null])).toEqual([
      [0, 'terminal', false],
      [1, 'write_note', false],
      [2, 'write_note', true],
      [3, 'rm_rf', true],
    ]);
    expect(JSON.parse(record.toolCalls[0]!.arguments)).toEqual({
      command: 'echo from-a > marker.txt && pwd',
    });
    expect(record.toolCalls[1]?.result).toBe('wrote 8 characters to NOTE.txt');
    // MCP chatter is not a model request.
    expect(record.requests).toEqual([]);
  });

  it('applies the action policy and the result budget as the agent loop does', async () => {
    const { gateway, sandboxes } = await setup();
    const seen: string[] = [];
    const session = gateway.openSession({
      rolloutId: 'r-policy',
      tools: {
        tools: TOOLS,
        sandbox: sandboxes[0],
        budget: { defaultResultSize: 200, previewSize: 50 },
        beforeToolCall: (call) => {
          seen.push(call.name);
          return call.name === 'write_note'
            ? { allow: false, message: 'notes are not allowed here' }
            : { allow: true };
        },
      },
    });
    const client = await connect(session.mcpUrl!, session.apiKey);
    const refused = await client.callTool({ name: 'write_note', arguments: { text: 'x' } });
    expect(text(refused)).toContain('notes are not allowed here');
    expect(await read(sandboxes[0], 'NOTE.txt')).toBeNull();
    // Over its threshold, the result is written into the sandbox and the client gets the preview.
    const big = await client.callTool({ name: 'terminal', arguments: { command: 'seq 1 400' } });
    expect(text(big)).toContain('<persisted-output>');
    expect(seen).toEqual(['write_note', 'terminal']);
    expect(session.record().toolCalls.map((call) => [call.name, call.refused, call.persisted])).toEqual([
      ['write_note', true, false],
      ['terminal', false, true],
    ]);
  });

  it("one rollout's endpoint never reaches another's sandbox; crossed, wrong and missing keys get 401", async () => {
    const { gateway, sandboxes } = await setup();
    const [sandboxA, sandboxB] = sandboxes;
    const a = gateway.openSession({ rolloutId: 'r-a', tools: { tools: TOOLS, sandbox: sandboxA } });
    const b = gateway.openSession({ rolloutId: 'r-b', tools: { tools: TOOLS, sandbox: sandboxB } });
    const clientA = await connect(a.mcpUrl!, a.apiKey);
    const clientB = await connect(b.mcpUrl!, b.apiKey);
    await clientA.callTool({ name: 'write_note', arguments: { text: 'only in A' } });
    const fromB = await clientB.callTool({
      name: 'terminal',
      arguments: { command: 'pwd; cat NOTE.txt 2>&1 || true' },
    });
    expect(text(fromB)).not.toContain('only in A');
    expect(JSON.parse(text(fromB)).output).toContain(sandboxB.workdir);
    expect(await read(sandboxA, 'NOTE.txt')).toBe('only in A');
    expect(await read(sandboxB, 'NOTE.txt')).toBeNull();
    expect(a.record().toolCalls.map((call) => call.name)).toEqual(['write_note']);
    expect(b.record().toolCalls.map((call) => call.name)).toEqual(['terminal']);

    // A's key at B's URL, a made-up key, no key: 401 for the SDK client and for plain HTTP.
    await expect(connect(b.mcpUrl!, a.apiKey)).rejects.toMatchObject({ code: 401 });
    await expect(connect(a.mcpUrl!, 'sk-shears-wrong')).rejects.toMatchObject({
      code: 401,
      message: expect.stringMatching(/does not belong to this session/),
    });
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '0' } },
    };
    const bare = await fetch(a.mcpUrl!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(initialize),
    });
    expect(bare.status).toBe(401);
    expect(await bare.text()).toMatch(/Missing API key/);
    expect(a.record().toolCalls).toHaveLength(1);
    expect(b.record().toolCalls).toHaveLength(1);
  });

  it("a closed rollout's endpoint answers 401 (its calls stay recorded); a session without tools has no endpoint", async () => {
    const { gateway, sandboxes } = await setup();
    const session: GatewaySession = gateway.openSession({
      rolloutId: 'r-closed',
      tools: { tools: TOOLS, sandbox: sandboxes[0] },
    });
    const client = await connect(session.mcpUrl!, session.apiKey);
    await client.callTool({ name: 'terminal', arguments: { command: 'true' } });
    const record = await session.close();
    expect(record.toolCalls).toHaveLength(1);
    await expect(
      client.callTool({ name: 'terminal', arguments: { command: 'touch late.txt' } }),
    ).rejects.toMatchObject({ code: 401, message: expect.stringMatching(/r-closed.{0,4} has ended/) });
    await expect(connect(session.mcpUrl!, session.apiKey)).rejects.toMatchObject({ code: 401 });
    expect(await read(sandboxes[0], 'late.txt')).toBeNull();

    const plain = gateway.openSession({ rolloutId: 'r-plain' });
    expect(plain.mcpUrl).toBeNull();
    await expect(connect(`${plain.baseUrl}/mcp`, plain.apiKey)).rejects.toMatchObject({
      code: 404,
      message: expect.stringMatching(/serves no tools over MCP/),
    });
    expect(() =>
      gateway.openSession({
        rolloutId: 'r-dup',
        tools: { tools: [noteTool, noteTool], sandbox: sandboxes[1] },
      }),
    ).toThrow(/write_note occur more than once/);
  });

  it('keeps one MCP session per client: it serves every later call, never crosses into another rollout, and ends with the client or the rollout', async () => {
    const { gateway, sandboxes } = await setup();
    const [sandboxA, sandboxB] = sandboxes;
    const a = gateway.openSession({ rolloutId: 'r-a', tools: { tools: TOOLS, sandbox: sandboxA } });
    const b = gateway.openSession({ rolloutId: 'r-b', tools: { tools: TOOLS, sandbox: sandboxB } });
    const clientA = await connect(a.mcpUrl!, a.apiKey);
    const clientB = await connect(b.mcpUrl!, b.apiKey);
    const idA = sessionIdOf(clientA);
    const idB = sessionIdOf(clientB);
    expect(idA).toMatch(/^mcp-[0-9a-f]{24}$/);
    expect(idB).toMatch(/^mcp-[0-9a-f]{24}$/);
    expect(idA).not.toBe(idB);
    // The session serves calls after the handshake, under the same id.
    for (const text of ['one', 'two']) await clientA.callTool({ name: 'write_note', arguments: { text } });
    expect(sessionIdOf(clientA)).toBe(idA);
    expect(await read(sandboxA, 'NOTE.txt')).toBe('two');

    // A's session id at B's endpoint with B's key: not one of B's sessions (404), nothing runs.
    const crossed = await connect(b.mcpUrl!, b.apiKey, idA);
    await expect(
      crossed.callTool({ name: 'write_note', arguments: { text: 'crossed' } }),
    ).rejects.toMatchObject({
      code: 404,
      message: expect.stringMatching(
        /Session not found: MCP session .{0,2}mcp-[0-9a-f]+.{0,2} is not open at the endpoint of rollout .{0,2}r-b/,
      ),
    });
    // A's session id and key at B's URL, and B's key at A's URL with A's session: 401 first.
    await expect(
      (await connect(b.mcpUrl!, a.apiKey, idA)).callTool({
        name: 'write_note',
        arguments: { text: 'crossed' },
      }),
    ).rejects.toMatchObject({ code: 401 });
    await expect(
      (await connect(a.mcpUrl!, b.apiKey, idA)).callTool({
        name: 'write_note',
        arguments: { text: 'crossed' },
      }),
    ).rejects.toMatchObject({ code: 401 });
    expect(await read(sandboxA, 'NOTE.txt')).toBe('two');
    expect(await read(sandboxB, 'NOTE.txt')).toBeNull();
    expect(a.record().toolCalls.map((call) => call.arguments)).toEqual(['{"text":"one"}', '{"text":"two"}']);
    expect(b.record().toolCalls).toEqual([]);

    // The client ends its session (DELETE): the id is no longer served; a new handshake works.
    await (clientB.transport as StreamableHTTPClientTransport).terminateSession();
    await expect(
      (await connect(b.mcpUrl!, b.apiKey, idB)).callTool({
        name: 'terminal',
        arguments: { command: 'true' },
      }),
    ).rejects.toMatchObject({ code: 404 });
    const again = await connect(b.mcpUrl!, b.apiKey);
    expect(sessionIdOf(again)).not.toBe(idB);
    expect((await again.callTool({ name: 'terminal', arguments: { command: 'true' } })).isError).toBeFalsy();

    // A stream a client holds open (GET, here a second client's) ends when the rollout ends.
    const headers = { authorization: `Bearer ${a.apiKey}`, accept: 'application/json, text/event-stream' };
    const opened = await fetch(a.mcpUrl!, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'curl', version: '0' },
        },
      }),
    });
    expect(opened.status).toBe(200);
    const second = opened.headers.get('mcp-session-id');
    expect(second).toMatch(/^mcp-/);
    expect(second).not.toBe(idA);
    const stream = await fetch(a.mcpUrl!, {
      headers: {
        ...headers,
        accept: 'text/event-stream',
        'mcp-session-id': second!,
        'mcp-protocol-version': '2025-06-18',
      },
    });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    const ended = (async () => {
      for (;;) if ((await reader.read()).done) return 'ended';
    })();
    await a.close();
    expect(await ended).toBe('ended');
    await expect(clientA.callTool({ name: 'write_note', arguments: { text: 'late' } })).rejects.toMatchObject(
      { code: 401 },
    );
    expect(await read(sandboxA, 'NOTE.txt')).toBe('two');
  });

  it('holds at most 16 MCP sessions per rollout: a client that never deletes its sessions loses the oldest', async () => {
    const { gateway, sandboxes } = await setup();
    const session = gateway.openSession({
      rolloutId: 'r-many',
      tools: { tools: TOOLS, sandbox: sandboxes[0] },
    });
    const clients: Client[] = [];
    for (let index = 0; index < 17; index++) clients.push(await connect(session.mcpUrl!, session.apiKey));
    await expect(
      clients[0]!.callTool({ name: 'terminal', arguments: { command: 'true' } }),
    ).rejects.toMatchObject({
      code: 404,
    });
    for (const client of clients.slice(1))
      expect(
        (await client.callTool({ name: 'terminal', arguments: { command: 'true' } })).isError,
      ).toBeFalsy();
    expect(session.record().toolCalls).toHaveLength(16);
  });
});
