// Per-call overhead of an MCP tool against the same tool called natively: an `echo` tool as a
// plain shears tool, over MCP stdio (the fixture server spawned in a local sandbox), over stdio
// from a pool of 2 processes on this machine, and over streamable HTTP (an SDK McpServer in this
// process), plus the first call of a rollout (per rollout: spawn + initialize + call; with a
// warm pool: just the call; the pool's own cold start once). Prints one JSON line per figure,
// with the load average and the CPU count.
// Usage: pnpm --filter @shears/tools-mcp bench [-- --calls 200]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { defineTool, type ToolContext, type ToolV1 } from '@shears/core';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { z } from 'zod';
import { closeMcpTools, createMcpTools } from '../src/index.js';

const machine = () => ({ load_1m: Number(loadavg()[0]!.toFixed(2)), cpus: cpus().length });

const callsFlag = process.argv.indexOf('--calls');
const CALLS = callsFlag > 0 ? Number(process.argv[callsFlag + 1]) : 200;
const ROLLOUTS = 10;
const BAD_SERVER = fileURLToPath(new URL('../test/fixtures/bad-server.mjs', import.meta.url));

const native = defineTool({
  name: 'echo',
  description: 'Echo text',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => `echo: ${text}`,
});

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function timeCalls(label: string, tool: ToolV1, context: () => ToolContext) {
  const samples: number[] = [];
  for (let index = 0; index < CALLS; index++) {
    const started = performance.now();
    await tool.execute(tool.inputSchema.parse({ text: `hello ${index}` }), context());
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      bench: 'mcp-call',
      transport: label,
      calls: CALLS,
      median_ms: Number(percentile(samples, 50).toFixed(3)),
      p90_ms: Number(percentile(samples, 90).toFixed(3)),
      ...machine(),
    }),
  );
}

const provider = createLocalSandboxProvider();
const sandbox = await provider.acquire();
const state = new Map<string, unknown>();
const contextFor = (rolloutState: Map<string, unknown>, rolloutSandbox = sandbox): ToolContext => ({
  sandbox: rolloutSandbox,
  taskId: 'bench',
  rolloutId: 'bench',
  signal: new AbortController().signal,
  logger: console as never,
  state: rolloutState,
});

const http = createServer(async (request, response) => {
  const server = new McpServer({ name: 'bench', version: '1.0.0' });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `echo: ${text}` }],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await server.connect(transport);
  await transport.handleRequest(request, response);
});
await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;

try {
  await timeCalls('native', native, () => contextFor(state));
  const [stdioEcho] = await createMcpTools({
    servers: {
      s: { transport: 'stdio', command: process.execPath, args: [BAD_SERVER, 'tools'], include: ['echo'] },
    },
  });
  await stdioEcho!.execute({ text: 'warm' }, contextFor(state));
  await timeCalls('stdio', stdioEcho!, () => contextFor(state));
  const stdioServer = {
    transport: 'stdio' as const,
    command: process.execPath,
    args: [BAD_SERVER, 'tools'],
    include: ['echo'],
  };
  const poolTools = await createMcpTools({ servers: { p: { ...stdioServer, pool: { size: 2 } } } });
  const poolEcho = poolTools[0]!;
  const poolStarted = performance.now();
  await poolEcho.execute({ text: 'warm' }, contextFor(new Map()));
  const poolColdMs = performance.now() - poolStarted;
  await timeCalls('stdio-pool', poolEcho, () => contextFor(state));
  const [httpEcho] = await createMcpTools({ servers: { h: { transport: 'http', url, include: ['echo'] } } });
  const httpState = new Map<string, unknown>();
  await httpEcho!.execute({ text: 'warm' }, contextFor(httpState));
  await timeCalls('http', httpEcho!, () => contextFor(httpState));

  // Server start per rollout: each rollout's first call starts its own stdio server.
  const starts: number[] = [];
  for (let index = 0; index < ROLLOUTS; index++) {
    const rolloutSandbox = await provider.acquire();
    const started = performance.now();
    await stdioEcho!.execute({ text: 'first' }, contextFor(new Map(), rolloutSandbox));
    starts.push(performance.now() - started);
    await rolloutSandbox.dispose();
  }
  starts.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      bench: 'mcp-first-call',
      transport: 'stdio',
      rollouts: ROLLOUTS,
      median_ms: Number(percentile(starts, 50).toFixed(1)),
      max_ms: Number(starts.at(-1)!.toFixed(1)),
      ...machine(),
    }),
  );

  // With a warm pool, a rollout's first call starts nothing: it is an ordinary call.
  const poolFirst: number[] = [];
  for (let index = 0; index < ROLLOUTS; index++) {
    const rolloutSandbox = await provider.acquire();
    const started = performance.now();
    await poolEcho.execute({ text: 'first' }, contextFor(new Map(), rolloutSandbox));
    poolFirst.push(performance.now() - started);
    await rolloutSandbox.dispose();
  }
  poolFirst.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      bench: 'mcp-first-call',
      transport: 'stdio-pool',
      rollouts: ROLLOUTS,
      median_ms: Number(percentile(poolFirst, 50).toFixed(1)),
      max_ms: Number(poolFirst.at(-1)!.toFixed(1)),
      pool_cold_start_ms: Number(poolColdMs.toFixed(1)),
      ...machine(),
    }),
  );
  await closeMcpTools(poolTools);
} finally {
  http.closeAllConnections();
  http.close();
  await sandbox.dispose();
  await provider.close();
}
