// The registry manifest of @shears/envs-swe: the `swe` environment, with tasks named by a
// string — `bundled`, a task-pack folder, a SWE-bench JSONL file or an npm task-pack package.
import { existsSync, statSync } from 'node:fs';
import { definePlugin, InvalidArgumentError } from '@shears/core';
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
export const sweGradingSettingsSchema = z
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

function gradingSettings(value: unknown): z.output<typeof sweGradingSettingsSchema> | undefined {
  if (value === undefined) return undefined;
  const parsed = sweGradingSettingsSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const where = ['grading', ...issue.path.map(String)].join('.');
  const keys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
  throw new InvalidArgumentError({
    argument: where,
    value,
    message: `Invalid SWE env setting ${where}: ${issue.message}${keys} (valid keys: ${Object.keys(sweGradingSettingsSchema.shape).join(', ')})`,
  });
}

const plugin = definePlugin({
  id: '@shears/envs-swe',
  description: 'SWE environment: fix real bugs in real repositories, rewarded by their tests',
  envs: {
    swe: {
      description: 'Bug-fix tasks in Docker sandboxes, graded by FAIL_TO_PASS / PASS_TO_PASS tests',
      create(settings) {
        const spec = typeof settings.tasks === 'string' ? settings.tasks : 'bundled';
        let tasks = resolveSweTasks(spec, {
          from: typeof settings.from === 'string' ? settings.from : undefined,
        });
        if (Array.isArray(settings.only)) {
          const only = new Set(settings.only.map(String));
          tasks = tasks.filter((task) => only.has(task.id));
        }
        const grading = gradingSettings(settings.grading);
        return createSweEnv({
          tasks,
          ...(grading ? { grading } : {}),
          docker: typeof settings.docker === 'string' ? settings.docker : undefined,
          partialCredit: settings.partialCredit === true,
          maxTurns: typeof settings.maxTurns === 'number' ? settings.maxTurns : undefined,
        });
      },
    },
  },
});

export default plugin;
