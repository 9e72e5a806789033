// Runs the `shears` command in-process for end-to-end tests and captures what a user would see.
import { runCli } from '../cli.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd: string;
  env?: Record<string, string | undefined>;
  signal?: AbortSignal;
  /** The first Ctrl-C: no new rollouts, finished ones still rewarded. */
  drain?: AbortSignal;
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
}

export async function runShears(argv: readonly string[], options: RunOptions): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: (text) => {
      stdout += text;
      options.onStdout?.(text);
    },
    stderr: (text) => {
      stderr += text;
      options.onStderr?.(text);
    },
    isTty: false,
    env: options.env ?? {},
    cwd: options.cwd,
    signal: options.signal,
    drain: options.drain,
  });
  return { code, stdout, stderr };
}
