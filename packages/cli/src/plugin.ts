// The CLI's own plugin: the bundled demo environment, the `scripted` server (the demo policy
// behind a real OpenAI-compatible HTTP server on 127.0.0.1, reached through the real client), so
// `shears process --env demo` needs no key and no GPU, and hermes-agent's composite `debugging`
// toolset (it spans the terminal, web and file plugins, so the composition root declares it).
// Settings are checked strictly by the registry: a setting the demo does not read is an error, never ignored.
import {
  definePlugin,
  definePluginEntry,
  InvalidArgumentError,
  NoSuchEntryError,
  type ServerV1,
  type ToolV1,
} from '@shears/core';
import { z } from 'zod';
import { createDemoEnv } from './demo/demo-env.js';
import { type DemoServerOptions, startDemoServer } from './demo/demo-server.js';
import { DEMO_TASKS } from './demo/demo-tasks.js';

const demoEnvSettingsSchema = z.strictObject({
  tool: z.string().min(1).default('terminal'),
  seed: z.int().default(0),
  only: z.array(z.string().min(1)).min(1).optional(),
});

const scriptedServerSettingsSchema = z.strictObject({
  seed: z.int().default(0),
  model: z.string().min(1).optional(),
  latencyMs: z.number().min(0).optional(),
  timeoutMs: z.int().min(1).optional(),
  policy: z
    .custom<NonNullable<DemoServerOptions['policy']>>((value) => typeof value === 'function')
    .optional(),
});

export default definePlugin({
  id: '@shears/cli',
  description: 'The shears command line: demo environment and scripted demo server',
  toolsets: {
    debugging: {
      description: 'Terminal plus web and file tools (hermes-agent)',
      tools: ['terminal', 'process'],
      includes: ['web', 'file'],
    },
  },
  envs: {
    demo: definePluginEntry({
      description: 'Eight small shell/file tasks checked by verifiers in the rollout sandbox',
      settings: demoEnvSettingsSchema,
      settingHints: {
        maxTurns: 'the turn budget is env.max_turns',
        tasks: 'the demo has eight built-in tasks; pick some with env.settings.only',
      },
      async create(settings, context) {
        const ids = DEMO_TASKS.map((task) => task.id);
        const unknown = (settings.only ?? []).filter((id) => !ids.includes(id));
        if (unknown.length > 0)
          throw new InvalidArgumentError({
            argument: 'only',
            value: settings.only,
            message: `The demo env has no task ${unknown.map((id) => `"${id}"`).join(', ')} (setting "only"; tasks: ${ids.join(', ')})`,
          });
        if (!context.registry.has('tools', settings.tool)) {
          throw new NoSuchEntryError({
            kind: 'tool',
            id: settings.tool,
            available: context.registry.list('tools'),
            hint: 'The demo env needs the terminal tool from @shears/tools-terminal; run bash scripts/setup.sh (install and build) first',
          });
        }
        const tools = await context.registry.create('tools', settings.tool, {});
        const list: ToolV1[] = Array.isArray(tools) ? tools : [tools];
        return createDemoEnv({ tools: list, seed: settings.seed, only: settings.only });
      },
    }),
  },
  servers: {
    scripted: definePluginEntry({
      description: 'The scripted demo policy behind a local OpenAI-compatible server (no key, no GPU)',
      settings: scriptedServerSettingsSchema,
      create: (settings, context): Promise<ServerV1> =>
        startDemoServer({ ...settings, registry: context.registry }),
    }),
  },
});
