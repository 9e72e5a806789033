// The CLI's own plugin: the bundled demo environment, the `scripted` server (the demo policy
// behind a real OpenAI-compatible HTTP server on 127.0.0.1, reached through the real client), so
// `shears process --env demo` needs no key and no GPU, and hermes-agent's composite `debugging`
// toolset (it spans the terminal, web and file plugins, so the composition root declares it),
// and the `jsonl` trajectory sink every run writes its groups through (@shears/core's JSONL sink).
// Settings are checked strictly by the registry: a setting the demo does not read is an error, never ignored.
import { relative as relativePath, resolve as resolvePath } from 'node:path';
import {
  createJsonlSink,
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
import { createTasksEnv } from './tasks/tasks-env.js';
import { readTaskFile, taskFileError } from './tasks/tasks-file.js';

const tasksEnvSettingsSchema = z.strictObject({
  file: z.string().min(1),
  tools: z.array(z.string().min(1)).min(1).default(['terminal']),
  system: z.string().min(1).optional(),
  seed: z.int().default(0),
  shuffle: z.boolean().default(false),
  /** The directory `file` is relative to (the CLI sets it to the working directory). */
  cwd: z.string().min(1).optional(),
});

const jsonlSinkSettingsSchema = z.strictObject({
  path: z.string().min(1),
  mode: z.enum(['append', 'new', 'replace']).default('append'),
  validate: z.boolean().default(false),
  /** The directory `path` is relative to (the CLI sets it to the working directory). */
  cwd: z.string().min(1).optional(),
});

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
    tasks: definePluginEntry({
      description:
        'Your own tasks from a JSON/JSONL file: prompt, set-up commands, a verifier run in the sandbox, an optional judge rubric, difficulty, tools',
      settings: tasksEnvSettingsSchema,
      settingHints: {
        task_file: 'the file is env.settings.file',
        tasks: 'the file is env.settings.file',
      },
      taskFileSetting: 'file',
      async create(settings, context) {
        const cwd = settings.cwd ?? process.cwd();
        const file = resolvePath(cwd, settings.file);
        const tasks = readTaskFile(file, cwd);
        const names = new Set([...settings.tools, ...tasks.flatMap((task) => task.tools ?? [])]);
        const available = context.registry.list('tools');
        const problems: string[] = [];
        for (const name of settings.tools)
          if (!available.includes(name))
            problems.push(`env.settings.tools: no tool "${name}" (available: ${available.join(', ')})`);
        for (const task of tasks)
          for (const name of task.tools ?? [])
            if (!available.includes(name))
              problems.push(
                `${task.where}: field "tools": no tool "${name}" (available: ${available.join(', ')})`,
              );
        if (problems.length) throw taskFileError(relativePath(cwd, file) || file, problems);
        const tools = new Map<string, ToolV1[]>();
        for (const name of names) {
          const created = await context.registry.create('tools', name, {});
          tools.set(name, Array.isArray(created) ? created : [created]);
        }
        return createTasksEnv({
          tasks,
          tools,
          defaultTools: settings.tools,
          seed: settings.seed,
          shuffle: settings.shuffle,
          ...(settings.system ? { system: settings.system } : {}),
        });
      },
    }),
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
  sinks: {
    jsonl: definePluginEntry({
      description:
        'One scored group per line in a JSONL file (settings: path, relative to where shears runs; mode: append, new or replace)',
      settings: jsonlSinkSettingsSchema,
      create: (settings) =>
        createJsonlSink({
          path: resolvePath(settings.cwd ?? process.cwd(), settings.path),
          mode: settings.mode,
          // The run's groups come from the group runner, which builds them to the schema.
          validate: settings.validate,
        }),
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
