// The `process` tool: list, poll, log, wait for and kill the background processes the terminal
// tool started in this rollout's sandbox (hermes-agent §10.13). `write`, `submit` and `close`
// are part of the schema models know, but background processes here have no stdin pipe, so they
// answer with an error saying so.
import type { ToolContext, ToolV1 } from '@shears/core';
import { defineTool } from '@shears/core';
import { ignoreAborted, sleep } from '@shears/core/http';
import { z } from 'zod';
import type { BackgroundProcess } from './background-processes.js';
import { inspectBackgroundProcess, killBackgroundProcess, processRegistry } from './background-processes.js';
import { dumpsResult, stripAnsi } from './terminal-tool.js';

export const PROCESS_ACTIONS = ['list', 'poll', 'log', 'wait', 'kill', 'write', 'submit', 'close'] as const;

export const processInputSchema = z.object({
  action: z.enum(PROCESS_ACTIONS),
  session_id: z.string().optional(),
  data: z.string().optional(),
  timeout: z.number().int().min(1).optional(),
  offset: z.number().int().min(0).optional(),
  limit: z.number().int().min(1).optional(),
});
export type ProcessInput = z.input<typeof processInputSchema>;

export const processJsonSchema: Record<string, unknown> = {
  type: 'object',
  properties: {
    action: {
      type: 'string',
      enum: [...PROCESS_ACTIONS],
      description:
        'list: all background processes; poll: status and recent output; log: output lines (offset/limit); wait: block until done (timeout); kill: stop it',
    },
    session_id: {
      type: 'string',
      description: 'The session_id returned by terminal(background=true); required except for list',
    },
    data: { type: 'string', description: 'Input for write/submit' },
    timeout: { type: 'integer', minimum: 1, description: 'For wait: seconds to wait (default 180)' },
    offset: { type: 'integer', minimum: 0, description: 'For log: first line (default 0)' },
    limit: { type: 'integer', minimum: 1, description: 'For log: number of lines (default 200)' },
  },
  required: ['action'],
};

export const processToolSettingsSchema = z
  .object({
    /** Longest `wait` the model may ask for, in seconds (default 600). */
    maxWaitSeconds: z.number().int().positive().optional(),
    /** Poll interval while waiting, in ms (default 250). */
    pollIntervalMs: z.number().int().positive().optional(),
  })
  .strict();
export type ProcessToolSettings = z.infer<typeof processToolSettingsSchema>;

const PREVIEW_CHARS = 2000;

export function createProcessTool(settings: ProcessToolSettings = {}): ToolV1<ProcessInput> {
  const config = processToolSettingsSchema.parse(settings);
  const maxWait = config.maxWaitSeconds ?? 600;
  const pollInterval = config.pollIntervalMs ?? 250;

  const error = (message: string) => ({ content: dumpsResult({ error: message }), isError: true });

  return defineTool<ProcessInput>({
    name: 'process',
    description:
      'Manage background processes started with terminal(background=true): list them, poll status and recent output, read the log by lines, wait for completion, or kill one.',
    inputSchema: processInputSchema as unknown as z.ZodType<ProcessInput>,
    jsonSchema: processJsonSchema,
    toolset: 'terminal',
    async execute(rawArgs, context: ToolContext) {
      const args = processInputSchema.parse(rawArgs);
      const registry = processRegistry(context);
      const sandbox = context.sandbox;
      const now = Date.now();

      if (args.action === 'list') {
        const processes = [];
        for (const entry of registry.values()) {
          const snapshot = await inspectBackgroundProcess(sandbox, entry, 200);
          processes.push({
            session_id: entry.sessionId,
            command: entry.command,
            pid: entry.pid,
            status: snapshot.status,
            exit_code: snapshot.exitCode,
            uptime_seconds: Math.round((now - entry.startedAt) / 1000),
          });
        }
        return dumpsResult({ processes, count: processes.length });
      }

      if (!args.session_id) return error(`session_id is required for action '${args.action}'`);
      const entry: BackgroundProcess | undefined = registry.get(args.session_id);
      if (!entry) {
        const known = [...registry.keys()];
        return error(
          `No background process '${args.session_id}' (known: ${known.length > 0 ? known.join(', ') : 'none'})`,
        );
      }

      switch (args.action) {
        case 'poll': {
          const snapshot = await inspectBackgroundProcess(sandbox, entry, PREVIEW_CHARS * 4);
          const output = stripAnsi(snapshot.output);
          return dumpsResult({
            session_id: entry.sessionId,
            status: snapshot.status,
            exit_code: snapshot.exitCode,
            output_preview: output.slice(-PREVIEW_CHARS),
            total_bytes: snapshot.totalBytes,
          });
        }
        case 'log': {
          const snapshot = await inspectBackgroundProcess(sandbox, entry);
          const lines = stripAnsi(snapshot.output).split('\n');
          if (lines[lines.length - 1] === '') lines.pop();
          const offset = args.offset ?? 0;
          const limit = args.limit ?? 200;
          const slice = lines.slice(offset, offset + limit);
          return dumpsResult({
            session_id: entry.sessionId,
            status: snapshot.status,
            output: slice.join('\n'),
            total_lines: lines.length,
            showing: `${slice.length === 0 ? 0 : offset + 1}-${offset + slice.length} of ${lines.length}`,
          });
        }
        case 'wait': {
          const seconds = Math.min(args.timeout ?? 180, maxWait);
          const deadline = Date.now() + seconds * 1000;
          for (;;) {
            const snapshot = await inspectBackgroundProcess(sandbox, entry, PREVIEW_CHARS * 4);
            if (snapshot.status !== 'running') {
              return dumpsResult({
                session_id: entry.sessionId,
                status: snapshot.status,
                exit_code: snapshot.exitCode,
                output: stripAnsi(snapshot.output).slice(-PREVIEW_CHARS),
              });
            }
            if (Date.now() >= deadline || context.signal.aborted) {
              return dumpsResult({
                session_id: entry.sessionId,
                status: 'timeout',
                output: stripAnsi(snapshot.output).slice(-PREVIEW_CHARS),
                message: `Process still running after ${seconds}s; poll again or kill it`,
              });
            }
            await sleep(pollInterval, context.signal).catch(ignoreAborted);
          }
        }
        case 'kill': {
          const before = await inspectBackgroundProcess(sandbox, entry, 0);
          if (before.status !== 'running') {
            return dumpsResult({
              session_id: entry.sessionId,
              status: before.status,
              exit_code: before.exitCode,
              message: 'Process had already finished',
            });
          }
          await killBackgroundProcess(sandbox, entry);
          return dumpsResult({
            session_id: entry.sessionId,
            status: 'killed',
            message: `Killed process ${entry.pid}`,
          });
        }
        default:
          return error(
            `Action '${args.action}' is not supported: background processes started by the terminal tool have no stdin. Use kill, then start the command again with its input.`,
          );
      }
    },
  });
}
