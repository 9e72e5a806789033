// The registry manifest of @shears/envs-swe: the `swe` environment, with tasks named by a
// string — `bundled`, a task-pack folder, a SWE-bench JSONL file or an npm task-pack package.
import { existsSync, statSync } from 'node:fs';
import { definePlugin, definePluginEntry, InvalidArgumentError } from '@shears/core';
import { checkDockerHost } from '@shears/tools-terminal';
import { z } from 'zod';
import { createSweEnv } from './swe-env.js';
import { bundledTaskPackDir, loadSweBenchJsonl, loadTaskPack, loadTaskPackPackage } from './task-loaders.js';
import type { SweTask } from './task-schema.js';

/** Resolves `bundled`, a folder, a `.jsonl` file or an npm package name to tasks. */
export function resolveSweTasks(spec: string, options: { from?: string } = {}): SweTask[] {
  if (spec === 'bundled') return loadTaskPack(bundledTaskPackDir());
  if (existsSync(spec)) return statSync(spec).isDirectory() ? loadTaskPack(spec) : loadSweBenchJsonl(spec);
  if (/^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/.test(spec))
    return loadTaskPackPackage(spec, options);
  throw new InvalidArgumentError({
    argument: 'tasks',
    value: spec,
    message: `tasks: "${spec}" is not "bundled", an existing folder or JSONL file, or an npm package name`,
  });
}

/** `env.settings.grading` of a config file (see SweGraderSettings). */
const sweGradingSettingsSchema = z
  .object({
    poolSize: z.number().int().min(0).optional(),
    limits: z
      .object({
        memoryMb: z.number().positive().optional(),
        cpus: z.number().positive().optional(),
        pids: z.number().int().positive().optional(),
        diskMb: z.number().positive().optional(),
      })
      .strict()
      .optional(),
    maxTreeBytes: z.number().int().positive().optional(),
    maxFileBytes: z.number().int().positive().optional(),
    maxChangeBytes: z.number().int().positive().optional(),
    maxDiffChars: z.number().int().positive().optional(),
    diskLimitMode: z.enum(['writable-layer', 'tmpfs']).optional(),
  })
  .strict();

/** `env.settings` of the SWE env. */
const sweEnvSettingsSchema = z.strictObject({
  /** `bundled`, a task-pack folder, a SWE-bench JSONL file or an npm task-pack package. */
  tasks: z.string().min(1).default('bundled'),
  /** Where an npm task-pack package is resolved from (default: the working directory). */
  from: z.string().min(1).optional(),
  /** Task ids to keep. */
  only: z.array(z.string().min(1)).min(1).optional(),
  grading: sweGradingSettingsSchema.optional(),
  /** The Docker host that builds the task images (as the docker sandbox takes it). */
  docker: z.string().min(1).optional(),
  partialCredit: z.boolean().default(false),
  maxTurns: z.int().positive().optional(),
  /**
   * The CLI passes `env.seed` to every env. The SWE env draws its tasks in file order and does
   * not use it (createSweEnv's `random` shuffles, for code that wants that).
   */
  seed: z.int().optional(),
});

const plugin = definePlugin({
  id: '@shears/envs-swe',
  description: 'SWE environment: fix real bugs in real repositories, rewarded by their tests',
  envs: {
    swe: definePluginEntry({
      description: 'Bug-fix tasks in Docker sandboxes, graded by FAIL_TO_PASS / PASS_TO_PASS tests',
      settings: sweEnvSettingsSchema,
      taskFileSetting: 'tasks',
      create(settings) {
        let tasks = resolveSweTasks(settings.tasks, { from: settings.from });
        if (settings.only) {
          const ids = new Set(tasks.map((task) => task.id));
          const unknown = settings.only.filter((id) => !ids.has(id));
          if (unknown.length > 0)
            throw new InvalidArgumentError({
              argument: 'only',
              value: settings.only,
              message: `only: no task ${unknown.map((id) => `"${id}"`).join(', ')} in ${settings.tasks} (tasks: ${[...ids].join(', ')})`,
            });
          const only = new Set(settings.only);
          tasks = tasks.filter((task) => only.has(task.id));
        }
        return createSweEnv({
          tasks,
          ...(settings.grading ? { grading: settings.grading } : {}),
          docker: settings.docker,
          partialCredit: settings.partialCredit,
          maxTurns: settings.maxTurns,
        });
      },
      // The daemon that builds the task images during setup.
      check: (settings, context) =>
        checkDockerHost(settings.docker ?? context.env.DOCKER_HOST ?? DEFAULT_DOCKER_HOST, {
          usedBy: settings.docker
            ? `${context.settingsField}.docker`
            : 'env swe (builds its images; set env.settings.docker or DOCKER_HOST)',
          field: `${context.settingsField}.docker`,
        }),
    }),
  },
});

const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';

export default plugin;
