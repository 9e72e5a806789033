// The `wandb` section checked against the environment before anything runs: the key only from
// WANDB_API_KEY, a WANDB_MODE the SDK honours, the SDK installed. metrics/wandb.ts runs W&B.
import { ConfigError } from '@shears/core';
import { requireOptionalPackage } from '@shears/core/internal';
import type { ShearsConfig } from '../config/config-schema.js';

/** The SDK version metrics/wandb.ts was written and tested against (its internals are worked around there). */
export const WANDB_SDK_VERSION = '0.5.1';
export const WANDB_SDK_USE = { usedBy: 'W&B logging (the wandb section)', field: 'wandb' };

/** What a `wandb` section asks of the environment: refused with a ConfigError before anything runs. */
export function checkWandbConfig(config: ShearsConfig, env: Record<string, string | undefined>): void {
  if (!config.wandb) return;
  if (config.wandb.api_key !== undefined)
    throw new ConfigError({
      message:
        'wandb.api_key: the W&B key is read only from the WANDB_API_KEY environment variable, never from the config file (config files end up in run records and repositories); remove it and export WANDB_API_KEY',
      issues: [{ path: 'wandb.api_key', message: 'not allowed: use WANDB_API_KEY' }],
    });
  const mode = env.WANDB_MODE;
  if (mode === 'disabled') return;
  if (mode === 'offline' || mode === 'dryrun')
    throw new ConfigError({
      message: `WANDB_MODE=${mode}: @wandb/sdk ${WANDB_SDK_VERSION} has no offline mode (it still signs in to the W&B server at init and then drops the history): unset WANDB_MODE to log to W&B, or set WANDB_MODE=disabled to run without it (the metrics stream is still written)`,
      issues: [{ path: 'wandb', message: `WANDB_MODE=${mode} is not supported`, value: mode }],
    });
  if (mode !== undefined && mode !== '' && mode !== 'online' && mode !== 'run')
    throw new ConfigError({
      message: `WANDB_MODE=${mode}: expected online (the default) or disabled`,
      issues: [{ path: 'wandb', message: 'unknown WANDB_MODE', value: mode }],
    });
  requireOptionalPackage('@wandb/sdk', import.meta.url, WANDB_SDK_USE);
  if (!env.WANDB_API_KEY)
    throw new ConfigError({
      message:
        'wandb: the config asks for W&B logging but WANDB_API_KEY is not set: export WANDB_API_KEY=<your key> (from https://wandb.ai/authorize), or set WANDB_MODE=disabled to run without W&B',
      issues: [{ path: 'wandb', message: 'WANDB_API_KEY is not set' }],
    });
}
