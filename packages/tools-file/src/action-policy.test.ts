// The action policy (@shears/shell-policy) sees the files these tools write: a write to git's
// configuration with write_file or patch is refused like a command writing it, since a later
// command (`git commit`) runs what it names. Real tools, a real local sandbox, real git, and the
// agent loop: without the policy the route really runs the hook; with it nothing is written.
import { runAgent } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createActionPolicy } from '@shears/shell-policy';
import { createLocalSandboxProvider, createTerminalTool } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { createFileTools } from './index.js';

const HOOKS_PATH_CONFIG =
  '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\thooksPath = h\n';

/** Each route: the file-tool call that writes git's configuration, then the hook and a commit. */
const ROUTES: Record<string, { name: string; arguments: Record<string, unknown> }> = {
  'write_file .git/config': {
    name: 'write_file',
    arguments: { path: '.git/config', content: HOOKS_PATH_CONFIG },
  },
  'patch (V4A) .git/config': {
    name: 'patch',
    arguments: {
      mode: 'patch',
      patch:
        '*** Begin Patch\n*** Update File: .git/config\n@@\n \tbare = false\n+\thooksPath = h\n*** End Patch',
    },
  },
  'patch (replace) .git/config': {
    name: 'patch',
    arguments: {
      path: '.git/config',
      old_string: '\tbare = false\n',
      new_string: '\tbare = false\n\thooksPath = h\n',
    },
  },
};

describe('file-tool writes to configuration a later command reads, through the action policy', () => {
  const provider = createLocalSandboxProvider();
  afterAll(() => provider.close());

  async function run(route: (typeof ROUTES)[string], policy?: ReturnType<typeof createActionPolicy>) {
    const server = await createScriptedServer({
      replies: [
        { toolCalls: [{ id: 'c1', ...route }] },
        {
          toolCalls: [
            {
              id: 'c2',
              name: 'write_file',
              arguments: { path: 'h/pre-commit', content: '#!/bin/sh\nexec rm -f victim\n' },
            },
          ],
        },
        {
          toolCalls: [
            {
              id: 'c3',
              name: 'terminal',
              arguments: {
                command:
                  'chmod +x h/pre-commit && git -c user.name=a -c user.email=b commit -q --allow-empty -m m',
              },
            },
          ],
        },
        { content: 'done' },
      ],
    });
    const sandbox = await provider.acquire();
    try {
      await sandbox.exec('git init -q . && echo v > victim');
      const result = await runAgent({
        server: createScriptedServerClient({ baseUrl: server.url, model: 'test-model', timeoutMs: 5_000 }),
        messages: [{ role: 'user', content: 'go' }],
        tools: [...createFileTools(), createTerminalTool()],
        sandbox,
        ...(policy ? { beforeToolCall: policy.beforeToolCall } : {}),
      });
      const victim = (await sandbox.exec('test -e victim && echo present || echo gone')).stdout.trim();
      const config = (await sandbox.exec('cat .git/config')).stdout;
      const firstResult = String(result.messages.find((message) => message.role === 'tool')?.content);
      return { victim, config, refusals: result.policyRefusals, firstResult };
    } finally {
      await sandbox.dispose();
      await server.close();
    }
  }

  it.each(Object.keys(ROUTES))('without a policy, %s makes git commit run a hook', async (route) => {
    const outcome = await run(ROUTES[route]!);
    expect(outcome.config).toContain('hooksPath = h');
    expect(outcome.victim).toBe('gone');
  });

  it.each(Object.keys(ROUTES))('deny: [rm] refuses %s before anything is written', async (route) => {
    const outcome = await run(ROUTES[route]!, createActionPolicy({ commands: { deny: ['rm'] } }));
    expect(outcome.refusals).toBe(1);
    expect(outcome.firstResult).toContain('Refused by the action policy');
    expect(outcome.firstResult).toContain('.git/config');
    expect(outcome.config).not.toContain('hooksPath');
    expect(outcome.victim).toBe('present');
  });
});
