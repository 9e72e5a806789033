// Settings of the `mcp` tool entry: which MCP servers to use and how their tools are named.
// Strict: a misspelt key is refused rather than silently ignored.
import { InvalidArgumentError } from '@shears/core';
import { z } from 'zod';

const common = {
  /** Prefix of the tool names shears offers (default `<server>__`). */
  prefix: z.string().optional(),
  /** Offer only these tools (the server's own names). */
  include: z.array(z.string().min(1)).optional(),
  /** Server tool name → the name shears offers (overrides the prefix for that tool). */
  rename: z.record(z.string(), z.string().min(1)).optional(),
  /** Toolset the tools belong to (default `mcp`). */
  toolset: z.string().min(1).optional(),
  /** Per-call time limit in milliseconds (default 60 000); the call is cancelled over MCP after it. */
  timeoutMs: z.number().int().positive().optional(),
  /** Time limit for starting the server and its handshake (default 30 000 ms). */
  startTimeoutMs: z.number().int().positive().optional(),
  /** Result size above which core's budget persists the result into the sandbox. */
  maxResultChars: z.number().int().positive().optional(),
  /**
   * What the model gets for an image in a result: `note` (default) a one-line note in the tool
   * message, for text-only models; `attach` the image itself, as an `image_url` part of a user
   * message right after the turn's tool messages (OpenAI chat's multimodal format).
   */
  images: z.enum(['note', 'attach']).optional(),
};

export const mcpStdioServerSchema = z.strictObject({
  transport: z.literal('stdio'),
  /**
   * Program started inside the rollout's sandbox (no shell). In `args`, `env` and `cwd`,
   * `{workdir}` and `{tempDir}` stand for the sandbox's folders.
   */
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  /** Working directory inside the sandbox (relative: against its workdir). */
  cwd: z.string().min(1).optional(),
  /**
   * How the tools are listed once at start, on this machine (`{workdir}` is then a scratch
   * folder): the same command by default, or this one (for a command that exists only inside the
   * sandbox image).
   */
  discovery: z
    .strictObject({
      command: z.string().min(1),
      args: z.array(z.string()).optional(),
      env: z.record(z.string(), z.string()).optional(),
      cwd: z.string().min(1).optional(),
    })
    .optional(),
  /**
   * Share `size` server processes among all rollouts instead of one per rollout (stateless
   * servers). Pooled servers run on this machine, outside every sandbox, so `{workdir}`,
   * `{tempDir}` and `discovery` are refused with a pool.
   */
  pool: z.strictObject({ size: z.number().int().min(1).max(64) }).optional(),
  ...common,
});

export const mcpHttpServerSchema = z.strictObject({
  transport: z.literal('http'),
  /** Streamable HTTP endpoint. */
  url: z.url(),
  /** Request headers; `${NAME}` in a value is replaced by the environment variable NAME. */
  headers: z.record(z.string(), z.string()).optional(),
  /** One client (and MCP session) for every rollout instead of one per rollout (stateless servers). */
  pool: z.boolean().optional(),
  ...common,
});

export const mcpServerSchema = z.discriminatedUnion('transport', [mcpStdioServerSchema, mcpHttpServerSchema]);

const SANDBOX_PLACEHOLDER = /\{(workdir|tempDir)\}/;

export const mcpToolsSettingsSchema = z
  .strictObject({
    /** Server name → how to reach it. The name prefixes its tools' names. */
    servers: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only'), mcpServerSchema),
  })
  .superRefine((settings, context) => {
    // A pooled stdio server is shared by every rollout and runs on this machine: it has no
    // rollout sandbox, so nothing in its settings may point into one.
    for (const [name, server] of Object.entries(settings.servers)) {
      if (server.transport !== 'stdio' || !server.pool) continue;
      const refuse = (path: Array<string | number>, message: string) =>
        context.addIssue({ code: 'custom', path: ['servers', name, ...path], message });
      if (server.discovery)
        refuse(
          ['discovery'],
          'a pooled stdio server runs on this machine, so its command must exist here; discovery is for per-rollout servers whose command exists only in the sandbox image',
        );
      const fields: Array<[Array<string | number>, string]> = [
        ...(server.args ?? []).map((arg, index): [Array<string | number>, string] => [['args', index], arg]),
        ...Object.entries(server.env ?? {}).map(([key, value]): [Array<string | number>, string] => [
          ['env', key],
          value,
        ]),
        ...(server.cwd !== undefined ? [[['cwd'], server.cwd] as [Array<string | number>, string]] : []),
      ];
      for (const [path, value] of fields) {
        const found = SANDBOX_PLACEHOLDER.exec(value);
        if (found)
          refuse(
            path,
            `${found[0]} cannot be used with pool: pooled stdio servers run on this machine, shared by every rollout, outside any rollout's sandbox (drop pool to start one server per rollout inside its sandbox)`,
          );
      }
      if (server.cwd !== undefined && !server.cwd.startsWith('/'))
        refuse(
          ['cwd'],
          'a pooled stdio server needs an absolute cwd (it has no sandbox workdir to be relative to)',
        );
    }
  });

export type McpStdioServerSettings = z.infer<typeof mcpStdioServerSchema>;
export type McpHttpServerSettings = z.infer<typeof mcpHttpServerSchema>;
export type McpServerSettings = z.infer<typeof mcpServerSchema>;
export type McpToolsSettings = z.infer<typeof mcpToolsSettingsSchema>;

export function safeParseMcpToolsSettings(settings: unknown) {
  return mcpToolsSettingsSchema.safeParse(settings);
}

export function parseMcpToolsSettings(settings: unknown): McpToolsSettings {
  const parsed = safeParseMcpToolsSettings(settings);
  if (parsed.success) return parsed.data;
  throw new InvalidArgumentError({
    argument: 'settings',
    value: settings,
    message: `Invalid MCP tools settings: ${parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ')}`,
  });
}

/** Replaces `${NAME}` in header values by the environment's NAME; an unset variable is an error. */
export function resolveHeaders(
  server: string,
  headers: Record<string, string> | undefined,
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const resolved: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    resolved[name] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
      const found = env[variable];
      if (found === undefined)
        throw new InvalidArgumentError({
          argument: `servers.${server}.headers.${name}`,
          value,
          message: `MCP server "${server}": header ${name} uses \${${variable}}, but the environment variable ${variable} is not set`,
        });
      return found;
    });
  }
  return resolved;
}
