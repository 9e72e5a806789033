// The `terminal` tool: runs a shell command in the rollout's sandbox. Schema, result JSON,
// timeout caps, the foreground/background guard, truncation and exit-code meanings follow
// hermes-agent (reference/hermes-agent.md §10.1, §10.4), because models are trained on them.
import type { ToolContext, ToolV1 } from '@shears/core';
import { defineTool, SandboxError } from '@shears/core';
import { ignoreAborted, sleep } from '@shears/core/http';
import { z } from 'zod';
import { processRegistry, startBackgroundProcess } from './background-processes.js';

export const DEFAULT_TERMINAL_TIMEOUT_SECONDS = 180;
export const FOREGROUND_MAX_TIMEOUT_SECONDS = 600;
export const DEFAULT_TERMINAL_MAX_OUTPUT_CHARS = 50_000;

export const terminalToolSettingsSchema = z
  .object({
    /** Timeout when the model gives none (hermes TERMINAL_TIMEOUT, 180 s). */
    defaultTimeoutSeconds: z.number().int().positive().optional(),
    /** Largest foreground timeout the model may ask for (600 s). */
    maxForegroundTimeoutSeconds: z.number().int().positive().optional(),
    /** Output above this many characters keeps 40% head and 60% tail (50 000). */
    maxOutputChars: z.number().int().positive().optional(),
    /** Delays between retries after a sandbox failure (hermes: 2, 4, 8 s). */
    retryDelaysMs: z.array(z.number().int().nonnegative()).optional(),
  })
  .strict();
export type TerminalToolSettings = z.infer<typeof terminalToolSettingsSchema>;

export const terminalInputSchema = z.object({
  command: z.string(),
  background: z.boolean().optional().default(false),
  timeout: z.number().int().min(1).optional(),
  workdir: z.string().optional(),
  pty: z.boolean().optional().default(false),
  notify_on_complete: z.boolean().optional().default(false),
  watch_patterns: z.array(z.string()).optional(),
});
export type TerminalInput = z.input<typeof terminalInputSchema>;

const DESCRIPTION = [
  'Execute a shell command in the task sandbox. The working directory and exported environment variables persist between calls.',
  'Prefer the file tools (read_file, write_file, patch, search_files) over cat/grep/sed/echo for reading, searching and editing files.',
  'Foreground (default): waits for the command and returns its output and exit code; the timeout defaults to 180 s, at most 600 s.',
  'Background (background=true): for servers, watchers and long jobs; returns a session_id at once. Use the `process` tool to list, poll, read logs, wait for or kill background processes.',
  'Do not background with `&`, nohup or setsid in the foreground; use background=true instead.',
].join(' ');

export const terminalJsonSchema: Record<string, unknown> = {
  type: 'object',
  properties: {
    command: { type: 'string', description: 'The command to execute' },
    background: {
      type: 'boolean',
      description:
        'Run the command in the background and return immediately (use the process tool to poll it)',
      default: false,
    },
    timeout: {
      type: 'integer',
      description: 'Command timeout in seconds (default: 180, foreground max: 600)',
      minimum: 1,
    },
    workdir: { type: 'string', description: 'Working directory for this command (absolute path)' },
    pty: { type: 'boolean', description: 'Run in a pseudo-terminal (local and SSH only)', default: false },
    notify_on_complete: {
      type: 'boolean',
      description: 'For background processes: report when the process completes',
      default: false,
    },
    watch_patterns: {
      type: 'array',
      items: { type: 'string' },
      description: 'For background processes: output patterns to watch for',
    },
  },
  required: ['command'],
};

/** `json.dumps(value, ensure_ascii=False)`: Python separators, unicode kept. */
export function dumpsResult(value: Record<string, unknown>): string {
  const entries = Object.entries(value).filter(([, entry]) => entry !== undefined);
  return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}: ${dumpsValue(entry)}`).join(', ')}}`;
}
function dumpsValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(dumpsValue).join(', ')}]`;
  if (typeof value === 'object') return dumpsResult(value as Record<string, unknown>);
  return JSON.stringify(value);
}

/** hermes' truncation: keep 40% head + 60% tail with a notice naming what was dropped. */
export function truncateOutput(output: string, maxChars: number): string {
  if (output.length <= maxChars) return output;
  const head = Math.floor(maxChars * 0.4);
  const tail = maxChars - head;
  const omitted = output.length - head - tail;
  return `${output.slice(0, head)}\n\n... [OUTPUT TRUNCATED - ${omitted} chars omitted out of ${output.length} total] ...\n\n${output.slice(output.length - tail)}`;
}

// CSI/OSC and single-character escapes: what terminals interpret and models should not see.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;
export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

const MEANINGS: Record<string, Record<number, string>> = {
  grep: { 1: 'No matches found (not an error)' },
  egrep: { 1: 'No matches found (not an error)' },
  fgrep: { 1: 'No matches found (not an error)' },
  rg: { 1: 'No matches found (not an error)' },
  ag: { 1: 'No matches found (not an error)' },
  ack: { 1: 'No matches found (not an error)' },
  diff: { 1: 'Files differ (expected, not an error)' },
  colordiff: { 1: 'Files differ (expected, not an error)' },
  find: { 1: 'Some directories were inaccessible (partial results may still be valid)' },
  test: { 1: 'Condition evaluated to false (expected, not an error)' },
  '[': { 1: 'Condition evaluated to false (expected, not an error)' },
  curl: {
    6: 'Could not resolve host',
    7: 'Failed to connect to host',
    22: 'HTTP response code indicated error (e.g. 404, 500)',
    28: 'Operation timed out',
  },
  git: { 1: 'Non-zero exit (often normal, e.g. git diff returns 1 when files differ)' },
};

/** The meaning of a benign exit code, decided by the last segment of the command line. */
export function exitCodeMeaning(command: string, exitCode: number): string | undefined {
  if (exitCode === 0) return undefined;
  const segments = command.split(/\|\||&&|\||;/);
  const last = segments[segments.length - 1]?.trim() ?? '';
  const words = last.split(/\s+/).filter(Boolean);
  let index = 0;
  while (index < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[index]!)) index += 1;
  const word = words[index];
  if (!word) return undefined;
  const base = word.split('/').pop()!;
  return MEANINGS[base]?.[exitCode];
}

const WORKDIR_ALLOWED = /^[A-Za-z0-9/\\:_\-.~ +@=,]+$/;
const LONG_LIVED = [
  /\b(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:dev|start|serve|watch)\b/,
  /\bdocker[\s-]compose\s+up\b|\bdocker\s+compose\s+up\b/,
  /\bnext\s+dev\b/,
  /(?:^|[\s;&|(])vite(?:\s|$)/,
  /\bnodemon\b/,
  /\buvicorn\b/,
  /\bgunicorn\b/,
  /\bpython3?\s+-m\s+http\.server\b/,
];

/** hermes' guard against backgrounding or long-lived servers in the foreground. */
export function foregroundGuidance(command: string): string | undefined {
  const trimmed = command.trim();
  if (/\s--help\b|\s--version\b/.test(trimmed) || /\s-[hv]$/.test(trimmed)) return undefined;
  const backgrounding =
    /(?:^|[\s;&|(])(?:nohup|disown|setsid)(?:\s|$)/.test(trimmed) ||
    / & /.test(trimmed) ||
    /(?:^|[^&])&$/.test(trimmed);
  const server = LONG_LIVED.some((pattern) => pattern.test(trimmed));
  if (!backgrounding && !server) return undefined;
  return (
    'This command looks like it starts a long-running or backgrounded process, which would hang or be lost in a foreground call. ' +
    'Run it with background=true (and notify_on_complete=true if you want to know when it ends), then use the process tool to poll, read its log or kill it.'
  );
}

function secondsLabel(seconds: number): string {
  return Number.isInteger(seconds) ? String(seconds) : String(seconds);
}

export function createTerminalTool(
  settings: TerminalToolSettings | Record<string, unknown> = {},
): ToolV1<TerminalInput> {
  const parsed = terminalToolSettingsSchema.safeParse(settings);
  if (!parsed.success) {
    throw new SandboxError({
      message: `Invalid terminal tool settings: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')} (allowed keys: defaultTimeoutSeconds, maxForegroundTimeoutSeconds, maxOutputChars, retryDelaysMs)`,
    });
  }
  const config = parsed.data;
  const defaultTimeout = config.defaultTimeoutSeconds ?? DEFAULT_TERMINAL_TIMEOUT_SECONDS;
  const maxForeground = config.maxForegroundTimeoutSeconds ?? FOREGROUND_MAX_TIMEOUT_SECONDS;
  const maxChars = config.maxOutputChars ?? DEFAULT_TERMINAL_MAX_OUTPUT_CHARS;
  const retryDelays = config.retryDelaysMs ?? [2000, 4000, 8000];

  return defineTool<TerminalInput>({
    name: 'terminal',
    description: DESCRIPTION,
    inputSchema: terminalInputSchema as unknown as z.ZodType<TerminalInput>,
    jsonSchema: terminalJsonSchema,
    toolset: 'terminal',
    async execute(rawArgs, context: ToolContext) {
      const command = (rawArgs as { command?: unknown }).command;
      if (typeof command !== 'string') {
        return dumpsResult({
          output: '',
          exit_code: -1,
          error: `Invalid command: expected string, got ${command === null ? 'NoneType' : typeof command}`,
          status: 'error',
        });
      }
      const args = terminalInputSchema.parse(rawArgs);
      const timeout = args.timeout ?? defaultTimeout;
      if (!args.background && args.timeout !== undefined && args.timeout > maxForeground) {
        return dumpsResult({
          error: `Foreground timeout ${args.timeout}s exceeds the maximum of ${maxForeground}s. Use background=true with notify_on_complete=true for long-running commands.`,
        });
      }
      if (!args.background) {
        const guidance = foregroundGuidance(command);
        if (guidance) return dumpsResult({ output: '', exit_code: -1, error: guidance, status: 'error' });
      }
      if (args.workdir !== undefined && !WORKDIR_ALLOWED.test(args.workdir)) {
        return dumpsResult({
          output: '',
          exit_code: -1,
          error: `Blocked: workdir ${JSON.stringify(args.workdir)} contains characters that are not allowed (letters, digits, / \\ : _ - . ~ space + @ = , only)`,
          status: 'blocked',
        });
      }

      if (args.background) {
        try {
          const entry = await startBackgroundProcess(context.sandbox, processRegistry(context), {
            command,
            cwd: args.workdir,
          });
          return {
            content: dumpsResult({
              output: 'Background process started',
              session_id: entry.sessionId,
              pid: entry.pid,
              exit_code: 0,
              error: null,
              ...(args.notify_on_complete ? { notify_on_complete: true } : {}),
              ...(args.watch_patterns && !args.notify_on_complete
                ? { watch_patterns: args.watch_patterns }
                : {}),
            }),
            data: { sessionId: entry.sessionId, pid: entry.pid },
          };
        } catch (error) {
          return {
            content: dumpsResult({
              output: '',
              exit_code: -1,
              error: `Failed to start background process: ${(error as Error).message}`,
              status: 'error',
            }),
            isError: true,
          };
        }
      }

      let lastError: unknown;
      for (let attempt = 0; attempt <= retryDelays.length; attempt += 1) {
        // The rollout's signal (the run stopping, the rollout's time limit) ends a wait at once.
        if (attempt > 0) await sleep(retryDelays[attempt - 1] ?? 0, context.signal).catch(ignoreAborted);
        if (context.signal.aborted) break;
        try {
          const result = await context.sandbox.exec(command, {
            timeoutMs: timeout * 1000,
            cwd: args.workdir,
            signal: context.signal,
          });
          const output = stripAnsi(truncateOutput(result.output, maxChars)).trim();
          const meaning = result.timedOut ? undefined : exitCodeMeaning(command, result.exitCode);
          return {
            content: dumpsResult({
              output,
              exit_code: result.exitCode,
              error: null,
              ...(meaning ? { exit_code_meaning: meaning } : {}),
            }),
            data: { exitCode: result.exitCode, timedOut: result.timedOut, durationMs: result.durationMs },
          };
        } catch (error) {
          lastError = error;
          const message = (error as Error).message ?? String(error);
          if (/timeout|timed out/i.test(message)) {
            return {
              content: dumpsResult({
                output: '',
                exit_code: 124,
                error: `Command timed out after ${secondsLabel(timeout)} seconds`,
              }),
              isError: true,
            };
          }
          // A disposed sandbox or a gone container will not come back; retrying only delays the
          // rollout's end (the docker sandbox says so as soon as the container is found dead).
          if (/dispos|container is gone/i.test(message)) break;
        }
      }
      const error = lastError as Error | undefined;
      return {
        content: dumpsResult({
          output: '',
          exit_code: -1,
          error: `Command execution failed: ${error?.name ?? 'Error'}: ${error?.message ?? 'aborted'}`,
        }),
        isError: true,
      };
    },
  });
}
