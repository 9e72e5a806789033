// Misbehaving MCP servers (a real SDK server, test/fixtures/bad-server.mjs) started in real local
// sandboxes: each fault is a typed error naming the server (a big result under the SDK's
// 10 MB stdio limit is persisted under the tool-result budget instead), the rollout goes on to its final answer, and no server process
// outlives its sandbox.
import { fileURLToPath } from 'node:url';
import { runAgent } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpTools, McpServerError, McpToolDefinitionError } from '../src/index.js';
import { countProcesses } from './processes.js';

const BAD_SERVER = fileURLToPath(new URL('./fixtures/bad-server.mjs', import.meta.url));
const stdio = (mode: string, extra: Record<string, unknown> = {}) => ({
  transport: 'stdio' as const,
  command: process.execPath,
  args: [BAD_SERVER, mode],
  ...extra,
});

describe('bad MCP servers', () => {
  const provider = createLocalSandboxProvider();
  afterAll(() => provider.close());

  it('a server that crashes at start: a typed error at start, with its stderr', async () => {
    const error = await createMcpTools({ servers: { db: stdio('crash-at-start') } }).catch(
      (thrown) => thrown,
    );
    expect(McpServerError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ server: 'db', phase: 'start' });
    expect(error.message).toContain('MCP server "db" could not be started');
    expect(error.message).toContain('fatal: cannot open database /nowhere/db.sqlite');
  });

  it('a tool with an invalid JSON Schema: a typed error at start naming server and tool', async () => {
    const error = await createMcpTools({ servers: { bad: stdio('invalid-schema') } }).catch(
      (thrown) => thrown,
    );
    expect(McpToolDefinitionError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ server: 'bad', tool: 'broken' });
    expect(error.message).toMatch(
      /MCP server "bad" lists tool "broken" with an invalid input schema: .*type/,
    );
  });

  it('two tools with one name are refused with both origins', async () => {
    const error = await createMcpTools({
      servers: { one: stdio('tools', { prefix: 'x_' }), two: stdio('tools', { prefix: 'x_' }) },
    }).catch((thrown) => thrown);
    expect(McpToolDefinitionError.isInstance(error)).toBe(true);
    expect(error.message).toBe(
      'Tool name "x_echo" is taken twice: by "echo" of MCP server "one" and by "echo" of MCP server "two"; give one a different prefix or rename it',
    );
  });

  it('an aborted call (the rollout stopped) sends the MCP cancellation to the server', async () => {
    const [hang] = await createMcpTools({ servers: { bad: stdio('tools', { include: ['hang'] }) } });
    const sandbox = await provider.acquire();
    try {
      const controller = new AbortController();
      const call = hang!.execute(
        {},
        {
          sandbox,
          taskId: 't',
          rolloutId: 'r',
          signal: controller.signal,
          logger: console as never,
          state: new Map(),
        },
      );
      // Abort once the call has reached the server.
      for (let tries = 0; tries < 400; tries++) {
        if ((await sandbox.exec('test -e hang-started.txt')).exitCode === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      controller.abort(new Error('rollout stopped'));
      await expect(call).rejects.toThrow();
      let cancelled = '';
      for (let tries = 0; tries < 100 && !cancelled; tries++) {
        cancelled = (await sandbox.exec('cat cancelled.txt 2>/dev/null')).stdout;
        if (!cancelled) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(cancelled).toContain('rollout stopped');
    } finally {
      await sandbox.dispose();
    }
  });

  it('big results: 5 MB is persisted whole with a preview, 50 MB (over the SDK stdio limit) is a tool error at once; the rollout goes on, nothing leaks', async () => {
    const tools = await createMcpTools({
      servers: { bad: stdio('tools', { include: ['huge', 'echo'] }) },
    });
    const server = await createScriptedServer({
      replies: [
        { toolCalls: [{ id: 'big5', name: 'bad__huge', arguments: { mb: 5 } }] },
        { toolCalls: [{ id: 'big50', name: 'bad__huge', arguments: { mb: 50 } }] },
        { toolCalls: [{ id: 'c3', name: 'bad__echo', arguments: { text: 'after' } }] },
        { content: 'done' },
      ],
    });
    const before = await countProcesses(BAD_SERVER);
    const sandbox = await provider.acquire();
    let result: Awaited<ReturnType<typeof runAgent>>;
    let saved: { bytes: string; first: string; last: string };
    try {
      result = await runAgent({
        server: createScriptedServerClient({ baseUrl: server.url, model: 'm', timeoutMs: 60_000 }),
        messages: [{ role: 'user', content: 'go' }],
        tools,
        sandbox,
      });
      const [persisted] = result.messages.filter((message) => message.role === 'tool');
      const path = /Full output saved to: (\S+)/.exec(String(persisted?.content))?.[1];
      expect(path, String(persisted?.content).slice(0, 500)).toBeDefined();
      const probe = async (command: string) => (await sandbox.exec(command)).stdout.trim();
      saved = {
        bytes: await probe(`wc -c < '${path}'`),
        first: await probe(`head -n 1 '${path}'`),
        last: await probe(`tail -n 1 '${path}'`),
      };
    } finally {
      await sandbox.dispose();
      await server.close();
    }
    const toolMessages = result.messages
      .filter((message) => message.role === 'tool')
      .map((message) => String(message.content))
      .map((content) =>
        content.startsWith('{"error"') ? (JSON.parse(content) as { error: string }).error : content,
      );
    expect(toolMessages).toHaveLength(3);
    // 5 MB: the model sees hermes' persisted-output block (size and a bounded preview)...
    expect(toolMessages[0]).toContain('<persisted-output>');
    expect(toolMessages[0]).toMatch(/This tool result was too large \([\d,]+ characters, 5\.\d MB\)/);
    expect(toolMessages[0]).toContain(`line 0 ${'x'.repeat(80)}`);
    expect(toolMessages[0]!.length).toBeLessThan(10_000);
    // ...and the whole result is in the sandbox's file, to its last line.
    expect(Number(saved!.bytes)).toBeGreaterThanOrEqual(5 * 1024 * 1024);
    expect(saved!.first).toBe(`line 0 ${'x'.repeat(80)}`);
    expect(saved!.last).toMatch(/^line \d{5} x{80}$/);
    // 50 MB: over the SDK's 10 MB stdio message limit, a typed error naming the limit (not a hang).
    expect(toolMessages[1]).toContain('MCP server "bad" failed in a call of "huge"');
    expect(toolMessages[1]).toContain("larger than the MCP SDK's stdio limit of 10 MB");
    // The next call gets a fresh server; the rollout ends naturally.
    expect(toolMessages[2]).toBe('echo: after');
    expect(result.finishedNaturally).toBe(true);
    expect(result.finalResponse).toBe('done');
    // Nothing of the big results stays in the rollout's record, and no server outlives the sandbox.
    expect(JSON.stringify(result.messages).length).toBeLessThan(50_000);
    expect(await countProcesses(BAD_SERVER)).toBe(before);
  }, 120_000);

  it('crash at start in the sandbox, death mid-call, a hang (cancelled) and malformed output: tool errors, the rollout goes on, nothing leaks', async () => {
    const tools = [
      ...(await createMcpTools({
        servers: {
          // Listed with the good server on this machine; in the sandbox the command crashes.
          crashy: stdio('crash-at-start', {
            discovery: { command: process.execPath, args: [BAD_SERVER, 'tools'] },
            include: ['echo'],
          }),
          bad: stdio('tools', { timeoutMs: 3_000 }),
        },
      })),
    ];
    const server = await createScriptedServer({
      replies: [
        { toolCalls: [{ id: 'c1', name: 'crashy__echo', arguments: { text: 'hi' } }] },
        { toolCalls: [{ id: 'c2', name: 'bad__echo', arguments: { text: 'hi' } }] },
        { toolCalls: [{ id: 'c3', name: 'bad__exit', arguments: {} }] },
        { toolCalls: [{ id: 'c4', name: 'bad__echo', arguments: { text: 'again' } }] },
        { toolCalls: [{ id: 'c5', name: 'bad__hang', arguments: {} }] },
        { toolCalls: [{ id: 'c6', name: 'bad__garbage', arguments: {} }] },
        { content: 'done' },
      ],
    });
    const before = await countProcesses(BAD_SERVER);
    const sandbox = await provider.acquire();
    let result: Awaited<ReturnType<typeof runAgent>>;
    let cancelled: string;
    try {
      result = await runAgent({
        server: createScriptedServerClient({ baseUrl: server.url, model: 'm', timeoutMs: 10_000 }),
        messages: [{ role: 'user', content: 'go' }],
        tools,
        sandbox,
      });
      cancelled = new TextDecoder().decode(await sandbox.readFile(`${sandbox.workdir}/cancelled.txt`));
    } finally {
      await sandbox.dispose();
      await server.close();
    }
    // Failed calls reach the model as hermes' `{"error": "Tool execution failed: ..."}`.
    const toolMessages = result.messages
      .filter((message) => message.role === 'tool')
      .map((message) => String(message.content))
      .map((content) =>
        content.startsWith('{"error"') ? (JSON.parse(content) as { error: string }).error : content,
      );
    expect(toolMessages).toHaveLength(6);
    expect(toolMessages[0]).toContain('MCP server "crashy" could not be started');
    expect(toolMessages[0]).toContain('fatal: cannot open database');
    expect(toolMessages[1]).toBe('echo: hi');
    expect(toolMessages[2]).toContain('MCP server "bad" failed in a call of "exit"');
    expect(toolMessages[2]).toContain('exit code 9');
    expect(toolMessages[2]).toContain('segfault in tool exit');
    // The next call starts a fresh server for this rollout.
    expect(toolMessages[3]).toBe('echo: again');
    expect(toolMessages[4]).toContain(
      'MCP server "bad" failed in a call of "hang": no result within 3000 ms (the call was cancelled)',
    );
    expect(toolMessages[5]).toContain('MCP server "bad" failed in a call of "garbage"');
    expect(toolMessages[5]).toContain('not JSON-RPC');
    // The server got the MCP cancellation for the hung call.
    expect(cancelled).toMatch(/timed out|cancel/i);
    expect(result.finishedNaturally).toBe(true);
    expect(result.finalResponse).toBe('done');
    expect(await countProcesses(BAD_SERVER)).toBe(before);
  });
});
