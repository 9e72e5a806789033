// Benchmark: what a tool call costs over the gateway's MCP endpoint against the same call made
// natively (the kernel's tool path, `runTurnToolCalls`, as the agent loop makes it). Two tools:
// `echo` (in process, no sandbox work: the protocol's own cost) and `terminal` running `true` in
// a real local sandbox. The MCP client is the official SDK's (StreamableHTTPClientTransport),
// connected once, as a harness does. Modes are interleaved call by call so machine load hits
// them alike. Besides wall-clock percentiles it reports the process's CPU time per call (client
// and server share the process; the client's share is the same in both builds), which a loaded
// machine disturbs far less than wall-clock time. Prints one JSON line per tool. Run:
//   node --import tsx --conditions=@shears/source bench/mcp-overhead.ts   (BENCH_CALLS=200)
import { loadavg } from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { defineTool, silentLogger, type ToolV1 } from '@shears/core';
import { createBudget, runTurnToolCalls } from '@shears/core/internal';
import { createLocalSandboxProvider, createTerminalTool } from '@shears/tools-terminal';
import { z } from 'zod';
import { createGateway } from '../src/gateway.js';
import { phase1Backend } from '../test/backends.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const echo: ToolV1<{ text: string }> = defineTool({
  name: 'echo',
  description: 'Echo the text.',
  inputSchema: z.object({ text: z.string() }),
  execute: async (args) => args.text,
});
const tools: ToolV1[] = [echo, createTerminalTool()];
const CASES: Array<{ tool: string; args: Record<string, unknown> }> = [
  { tool: 'echo', args: { text: 'hello' } },
  { tool: 'terminal', args: { command: 'true' } },
];

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const round = (value: number) => Math.round(value * 1000) / 1000;

const backend = await phase1Backend({ replies: [] });
const gateway = await createGateway({ server: backend.server });
const provider = createLocalSandboxProvider();
const sandbox = await provider.acquire();
try {
  const session = gateway.openSession({ rolloutId: 'bench', tools: { tools, sandbox } });
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(session.mcpUrl!), {
      requestInit: { headers: { authorization: `Bearer ${session.apiKey}` } },
    }),
  );
  const toolByName = new Map(tools.map((tool) => [tool.name, tool]));
  const budget = createBudget();
  const state = new Map<string, unknown>();
  const native = async (name: string, args: Record<string, unknown>, turn: number) => {
    const result = await runTurnToolCalls(
      [{ id: `n${turn}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
      turn,
      {
        toolByName,
        budget,
        signal: new AbortController().signal,
        sandbox,
        logger: silentLogger,
        rolloutId: 'bench',
        toolContext: { sandbox, taskId: 'bench', rolloutId: 'bench', logger: silentLogger, state },
      },
    );
    if (result.toolErrors.length > 0) throw new Error(JSON.stringify(result.toolErrors));
  };
  for (const { tool, args } of CASES) {
    const times = { native: [] as number[], mcp: [] as number[] };
    const cpu = { native: 0, mcp: 0 };
    const cpuNow = () => {
      const usage = process.cpuUsage();
      return (usage.user + usage.system) / 1000;
    };
    // Warm-up: module loading, JIT, the sandbox's first command.
    for (let index = 0; index < 10; index++) {
      await native(tool, args, index + 1);
      await client.callTool({ name: tool, arguments: args });
    }
    for (let index = 0; index < CALLS; index++) {
      let cpuStarted = cpuNow();
      let started = performance.now();
      await native(tool, args, index + 1);
      times.native.push(performance.now() - started);
      cpu.native += cpuNow() - cpuStarted;
      cpuStarted = cpuNow();
      started = performance.now();
      const result = await client.callTool({ name: tool, arguments: args });
      times.mcp.push(performance.now() - started);
      cpu.mcp += cpuNow() - cpuStarted;
      if (result.isError) throw new Error(JSON.stringify(result.content));
    }
    const p50 = { native: percentile(times.native, 50), mcp: percentile(times.mcp, 50) };
    const p95 = { native: percentile(times.native, 95), mcp: percentile(times.mcp, 95) };
    console.log(
      JSON.stringify({
        bench: 'mcp_tool_call',
        tool,
        calls: CALLS,
        native_p50_ms: round(p50.native),
        mcp_p50_ms: round(p50.mcp),
        added_p50_ms: round(p50.mcp - p50.native),
        native_p95_ms: round(p95.native),
        mcp_p95_ms: round(p95.mcp),
        added_p95_ms: round(p95.mcp - p95.native),
        native_cpu_ms_per_call: round(cpu.native / CALLS),
        mcp_cpu_ms_per_call: round(cpu.mcp / CALLS),
        added_cpu_ms_per_call: round((cpu.mcp - cpu.native) / CALLS),
        load_average_1m: round(loadavg()[0] ?? 0),
        node: process.version,
      }),
    );
  }
  await client.close();
} finally {
  await sandbox.dispose();
  await provider.close();
  await gateway.close();
  await backend.close();
}
