// Conformance suite for the Tool contract: every tool package runs it for each tool. The tool
// describes itself well (name, description, an object JSON schema), validates its arguments,
// returns text in a real sandbox, and works end to end inside the agent loop.
import { describe, expect, it } from 'vitest';
import { runAgent } from '../agent-loop.js';
import { silentLogger } from '../contracts/logger.js';
import type { SandboxProviderV1, SandboxSpec, SandboxV1 } from '../contracts/sandbox.js';
import type { ToolContext, ToolV1 } from '../contracts/tool.js';
import { toolParametersSchema, toolSchemas } from '../tool-schemas.js';
import { createScriptedServer } from './scripted-server.js';
import { createScriptedServerClient } from './scripted-server-client.js';
import { createTempSandboxProvider } from './temp-sandbox-provider.js';

export interface ToolConformanceOptions {
  name?: string;
  tool: ToolV1 | (() => ToolV1);
  /** Arguments the tool must accept and run (as the model would send them). */
  validArguments: Record<string, unknown>[];
  /** Arguments the tool's schema must reject. */
  invalidArguments?: Record<string, unknown>[];
  /** Where the tool runs (default: a temp-directory sandbox). */
  sandboxes?: SandboxProviderV1;
  sandboxSpec?: SandboxSpec;
  /** Prepares the sandbox before each run (e.g. writes a file the tool reads). */
  prepare?: (sandbox: SandboxV1) => Promise<void>;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function describeToolConformance(options: ToolConformanceOptions): void {
  const resolveTool = () => (typeof options.tool === 'function' ? options.tool() : options.tool);
  const label = options.name ?? resolveTool().name;

  const withSandbox = async (body: (sandbox: SandboxV1) => Promise<void>) => {
    const provider = options.sandboxes ?? createTempSandboxProvider();
    const sandbox = await provider.acquire(options.sandboxSpec);
    try {
      await options.prepare?.(sandbox);
      await body(sandbox);
    } finally {
      await sandbox.dispose();
      if (!options.sandboxes) await provider.close();
    }
  };

  describe(`ToolV1 conformance: ${label}`, () => {
    it('describes itself with a valid name, a description and an object schema', () => {
      const tool = resolveTool();
      expect(tool.specificationVersion).toBe('v1');
      expect(tool.name).toMatch(TOOL_NAME);
      expect(tool.description.trim().length).toBeGreaterThan(0);
      const schema = toolParametersSchema(tool);
      expect(schema.type).toBe('object');
      expect(() => JSON.stringify(toolSchemas([tool]))).not.toThrow();
      if (tool.maxResultChars !== undefined) expect(tool.maxResultChars).toBeGreaterThan(0);
    });

    it('accepts its valid arguments and rejects invalid ones', () => {
      const tool = resolveTool();
      for (const args of options.validArguments) {
        const parsed = tool.inputSchema.safeParse(args);
        expect(parsed.success, `valid arguments rejected: ${JSON.stringify(args)}`).toBe(true);
      }
      for (const args of options.invalidArguments ?? []) {
        expect(
          tool.inputSchema.safeParse(args).success,
          `invalid arguments accepted: ${JSON.stringify(args)}`,
        ).toBe(false);
      }
    });

    it('returns text when executed in a sandbox', () =>
      withSandbox(async (sandbox) => {
        const tool = resolveTool();
        const context: ToolContext = {
          sandbox,
          taskId: 'conformance',
          rolloutId: 'conformance-r0',
          signal: new AbortController().signal,
          logger: silentLogger,
          userTask: 'conformance',
          state: new Map(),
        };
        for (const args of options.validArguments) {
          const output = await tool.execute(tool.inputSchema.parse(args), context);
          const content = typeof output === 'string' ? output : output.content;
          expect(typeof content).toBe('string');
        }
      }));

    it('runs inside the agent loop when the model calls it', () =>
      withSandbox(async (sandbox) => {
        const tool = resolveTool();
        const args = options.validArguments[0] ?? {};
        const server = await createScriptedServer({
          replies: [
            { toolCalls: [{ id: 'call_conformance', name: tool.name, arguments: args }] },
            { content: 'done' },
          ],
        });
        try {
          const result = await runAgent({
            server: createScriptedServerClient({ baseUrl: server.url, model: 'conformance' }),
            messages: [{ role: 'user', content: 'use the tool' }],
            tools: [tool],
            sandbox,
          });
          expect(result.stopReason).toBe('answer');
          const toolMessage = result.messages.find((message) => message.role === 'tool');
          expect(toolMessage?.tool_call_id).toBe('call_conformance');
          expect(typeof toolMessage?.content).toBe('string');
          expect(String(toolMessage?.content)).not.toMatch(
            /^\{"error": "(Unknown tool|Invalid JSON|Invalid arguments)/,
          );
          const sent = server.chatRequests[0]?.tools?.map((entry) => entry.function.name);
          expect(sent).toEqual([tool.name]);
        } finally {
          await server.close();
        }
      }));
  });
}
