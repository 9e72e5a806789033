// The CLI's own plugin: the bundled demo environment and the `scripted` server (the demo
// policy behind a real OpenAI-compatible HTTP server on 127.0.0.1, reached through the real
// client), so `shears process --env demo` needs no key and no GPU.
import { definePlugin, NoSuchEntryError, type ServerV1, type ToolV1 } from '@shears/core';
import { createDemoEnv } from './demo/demo-env.js';
import { type DemoServerOptions, startDemoServer } from './demo/demo-server.js';

export default definePlugin({
  id: '@shears/cli',
  description: 'The shears command line: demo environment and scripted demo server',
  envs: {
    demo: {
      description: 'Eight small shell/file tasks checked by verifiers in the rollout sandbox',
      async create(settings, context) {
        const toolName = String(settings.tool ?? 'terminal');
        if (!context.registry.has('tools', toolName)) {
          throw new NoSuchEntryError({
            kind: 'tool',
            id: toolName,
            available: context.registry.list('tools'),
            hint: 'The demo env needs the terminal tool from @shears/tools-terminal; run bash scripts/setup.sh (install and build) first',
          });
        }
        const tools = await context.registry.create('tools', toolName, {});
        const list: ToolV1[] = Array.isArray(tools) ? tools : [tools];
        return createDemoEnv({
          tools: list,
          seed: typeof settings.seed === 'number' ? settings.seed : 0,
          only: Array.isArray(settings.only) ? settings.only.map(String) : undefined,
        });
      },
    },
  },
  servers: {
    scripted: {
      description: 'The scripted demo policy behind a local OpenAI-compatible server (no key, no GPU)',
      async create(settings, context): Promise<ServerV1> {
        return startDemoServer({
          seed: typeof settings.seed === 'number' ? settings.seed : 0,
          model: typeof settings.model === 'string' ? settings.model : undefined,
          latencyMs: typeof settings.latencyMs === 'number' ? settings.latencyMs : undefined,
          policy:
            typeof settings.policy === 'function'
              ? (settings.policy as DemoServerOptions['policy'])
              : undefined,
          registry: context.registry,
        });
      },
    },
  },
});
