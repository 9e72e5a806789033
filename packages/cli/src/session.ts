// What the CLI hands a command: the validated config and the command line, and the session every
// part of a run shares (where text goes, secrets redacted, the stop signals). Commands turn the
// config into a run plan (plan/run-plan.ts); nothing below a command sees the config or the flags
// except through the plan.
import type { Logger } from '@shears/core';
import type { ShearsConfig } from './config/config-schema.js';
import type { CliIo } from './io.js';
import type { Redactor } from './redact.js';

export interface RunSession {
  io: CliIo;
  logger: Logger;
  redact: Redactor;
  /** Stops the run at once (the second Ctrl-C). */
  signal: AbortSignal;
  /** Stops the run gently (the first Ctrl-C): no new rollouts; finished ones still rewarded. */
  drain: AbortSignal;
}

export interface CommandContext extends RunSession {
  config: ShearsConfig;
  /** server.api_key, or the variable server.api_key_env names. */
  apiKey: string | undefined;
  positionals: string[];
  flags: Record<string, string | true>;
}
