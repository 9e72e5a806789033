// The action policy (@shears/shell-policy) as the agent loop uses it with this package's
// terminal tool and a real local sandbox: a refused command never runs, and is counted.
import { runAgent } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createActionPolicy } from '@shears/shell-policy';
import { describe, expect, it } from 'vitest';
import { createLocalSandboxProvider } from './local/local-sandbox-provider.js';
import { createTerminalTool } from './terminal-tool.js';

describe('the action policy with the terminal tool', () => {
  it('refuses before execution inside the agent loop and counts it in the trajectory', async () => {
    const server = await createScriptedServer({
      replies: [
        {
          toolCalls: [{ id: 'c1', name: 'terminal', arguments: { command: 'touch made-it; /bin/rm -rf .' } }],
        },
        {
          toolCalls: [
            { id: 'c2', name: 'terminal', arguments: { command: "touch made-it; sed -n '1e rm -rf .' x" } },
          ],
        },
        { toolCalls: [{ id: 'c3', name: 'terminal', arguments: { command: 'touch allowed' } }] },
        { content: 'done' },
      ],
    });
    const provider = createLocalSandboxProvider();
    const sandbox = await provider.acquire();
    try {
      const client = createScriptedServerClient({
        baseUrl: server.url,
        model: 'test-model',
        timeoutMs: 5_000,
      });
      const policy = createActionPolicy({ commands: { deny: ['rm'] } });
      const result = await runAgent({
        server: client,
        messages: [{ role: 'user', content: 'go' }],
        tools: [createTerminalTool()],
        sandbox,
        beforeToolCall: policy.beforeToolCall,
      });
      expect(result.policyRefusals).toBe(2);
      const toolResults = result.messages
        .filter((message) => message.role === 'tool')
        .map((m) => String(m.content));
      expect(toolResults[0]).toContain('Refused by the action policy: \\"rm\\" is not allowed');
      expect(toolResults[1]).toContain("Refused by the action policy: sed's e command");
      expect((await sandbox.exec('ls')).stdout).toBe('allowed\n');
    } finally {
      await sandbox.dispose();
      await provider.close();
      await server.close();
    }
  });
});
