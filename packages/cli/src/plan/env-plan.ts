// The env section's settings that need no env to check: the action policy (`env.action_policy`,
// built here so a bad rule is refused before anything runs) and the toolset selection
// (`env.toolsets`). Checked before the output guard, so a bad config is named first.
import { BUILTIN_DISTRIBUTIONS, ConfigError } from '@shears/core';
import { closestName } from '@shears/core/internal';
import { type ActionPolicy, createActionPolicy } from '@shears/tools-terminal';
import type { ShearsConfig } from '../config/config-schema.js';

/** `env.action_policy` (snake_case config) → the terminal package's action policy. */
export function buildActionPolicy(config: ShearsConfig): ActionPolicy | undefined {
  const policy = config.env.action_policy;
  if (!policy) return undefined;
  try {
    return createActionPolicy({
      ...(policy.commands
        ? {
            commands: {
              allow: policy.commands.allow,
              deny: policy.commands.deny,
              allowDynamic: policy.commands.allow_dynamic,
            },
          }
        : {}),
      ...(policy.tools ? { tools: policy.tools } : {}),
      ...(policy.command_arguments ? { commandArguments: policy.command_arguments } : {}),
    });
  } catch (cause) {
    throw new ConfigError({
      message: `env.action_policy: ${(cause as Error).message}`,
      issues: [{ path: 'env.action_policy', message: 'invalid action policy', value: policy }],
      cause,
    });
  }
}

/**
 * `env.toolsets` checks that need no env: a distribution name that exists, and not both
 * `distribution` and `enabled` (the distribution would silently win).
 */
export function checkToolsetsConfig(config: ShearsConfig): void {
  const toolsets = config.env.toolsets;
  if (!toolsets) return;
  if (toolsets.distribution && !Object.hasOwn(BUILTIN_DISTRIBUTIONS, toolsets.distribution)) {
    const known = Object.keys(BUILTIN_DISTRIBUTIONS);
    const suggestion = closestName(toolsets.distribution, known);
    throw new ConfigError({
      message: `env.toolsets.distribution: unknown toolset distribution "${toolsets.distribution}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''} (allowed: ${known.join(', ')})`,
      issues: [{ path: 'env.toolsets.distribution', message: 'unknown name', value: toolsets.distribution }],
    });
  }
  if (toolsets.distribution && toolsets.enabled) {
    throw new ConfigError({
      message: `env.toolsets.enabled: a distribution (env.toolsets.distribution: ${toolsets.distribution}) picks the toolsets of each group, so enabled would be ignored; set one of them`,
      issues: [
        { path: 'env.toolsets.enabled', message: 'ignored with a distribution', value: toolsets.enabled },
      ],
    });
  }
}

/** The config checks that need no env or server, run before the output guard: a bad config is named first. */
export function checkRunConfig(config: ShearsConfig): void {
  buildActionPolicy(config);
  checkToolsetsConfig(config);
}
