// Runs the `shears` command in-process for end-to-end tests and captures what a user would see.
import { runCli } from '../cli.js';

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

interface RunOptions {
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

/**
 * `argv` with each `--flag value` pair of `changes` replacing that flag's value (appended when
 * absent): the CLI refuses a flag given twice, so a test varies a run by replacing, not appending.
 */
export function withFlags(argv: readonly string[], changes: readonly string[]): string[] {
  const result = [...argv];
  for (let index = 0; index < changes.length; index += 2) {
    const flag = changes[index]!;
    const value = changes[index + 1]!;
    const at = result.indexOf(flag);
    if (at >= 0) result[at + 1] = value;
    else result.push(flag, value);
  }
  return result;
}
