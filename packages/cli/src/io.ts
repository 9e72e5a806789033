// The CLI's input/output: where text goes, whether it is a terminal, the environment and cwd.
// Injectable so end-to-end tests run commands in-process and read what a user would see.
import type { Logger } from '@shears/core';
import type { Redactor } from './redact.js';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether stderr is an interactive terminal (live progress bars). */
  isTty: boolean;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Stops the run at once (the second Ctrl-C). */
  signal?: AbortSignal;
  /** Stops the run gently (the first Ctrl-C): no new rollouts, finished ones still rewarded. */
  drain?: AbortSignal;
}

export function processIo(): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    isTty: Boolean(process.stderr.isTTY) && process.env.TERM !== 'dumb' && !process.env.CI,
    env: process.env,
    cwd: process.cwd(),
  };
}

/** A logger writing `level message key=value` lines to stderr, secrets redacted. */
export function createCliLogger(
  io: CliIo,
  redact: Redactor,
  options: { debug?: boolean; prefix?: string } = {},
): Logger {
  const write = (level: string, message: string, fields?: Record<string, unknown>) => {
    const extra = fields && Object.keys(fields).length ? ` ${JSON.stringify(fields)}` : '';
    io.stderr(redact(`${options.prefix ?? ''}${level === 'info' ? '' : `${level}: `}${message}${extra}\n`));
  };
  return {
    debug: (message, fields) => {
      if (options.debug) write('debug', message, fields);
    },
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
  };
}
