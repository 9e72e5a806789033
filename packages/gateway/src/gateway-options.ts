// Settings of the gateway and of one rollout's session, validated strictly: an unknown or
// mistyped setting is refused with a message naming it, never ignored.
import { ConfigError, type Logger, type ServerV1, type TokenizerV1 } from '@shears/core';
import { closestName } from '@shears/core/internal';
import { z } from 'zod';
import type { GatewaySessionTools } from './mcp-endpoint.js';

export interface GatewaySettings {
  /** The shears server behind the gateway: phase 2 (managed: exact tokens) or phase 1 (messages only). */
  server: ServerV1;
  /** Interface to listen on (default `127.0.0.1`). */
  host?: string;
  /** Port (default 0: any free port; read `gateway.url`). */
  port?: number;
  /** Counts tokens exactly for `/v1/messages/count_tokens`; without it the count is an estimate (characters / 4). */
  tokenizer?: TokenizerV1;
  /** Largest request body accepted (default 64 MiB); larger bodies get the API's 413. */
  maxBodyBytes?: number;
  /** Characters per streamed delta (default 16). */
  streamChunkChars?: number;
  /**
   * A streamed request whose backend has not answered after this long gets its 200 and SSE
   * keep-alive comments at this interval (default 15 000 ms), so harness idle timeouts do not
   * fire during long generations. A failure after that point is reported as the API's
   * mid-stream error event instead of an HTTP status.
   */
  keepAliveMs?: number;
  /** Request fields forwarded to the server as `extraBody` (e.g. `top_k`), instead of being recorded as ignored. */
  extraBodyFields?: string[];
  logger?: Logger;
  /** Clock (epoch ms), injectable for tests. */
  now?: () => number;
}

export interface OpenSessionOptions {
  /** The rollout this session records; its id labels the server sessions too. */
  rolloutId: string;
  /** The model name the harness is told to use and sees echoed (default: the server's model). */
  model?: string;
  /** Model requests allowed (chat, responses, messages); later ones get a 403 and `requestLimitReached`. */
  maxRequests?: number;
  /**
   * Separate conversations (threads) allowed (default 256); a request that would start another
   * gets a 403 (`thread_limit_reached`) and `threadLimitReached` is set, while the threads already
   * open are still served.
   */
  maxThreads?: number;
  /**
   * The rollout's tools, served to the harness over MCP at `<session prefix>/mcp` (streamable
   * HTTP, the session's key as bearer), executed in the given sandbox and recorded in the
   * session's `toolCalls`. Without it the session has no MCP endpoint (404).
   */
  tools?: GatewaySessionTools;
}

const serverSchema = z.custom<ServerV1>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ServerV1).chat === 'function' &&
    typeof (value as ServerV1).model === 'string',
  {
    message:
      'expected a shears ServerV1 (an object with chat() and model), e.g. createVllmServer(...) from @shears/servers',
  },
);

const tokenizerSchema = z.custom<TokenizerV1>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as TokenizerV1).encode === 'function' &&
    typeof (value as TokenizerV1).applyChatTemplate === 'function',
  { message: 'expected a shears TokenizerV1' },
);

export const gatewaySettingsSchema = z.strictObject({
  server: serverSchema,
  host: z.string().min(1).optional(),
  port: z.number().int().min(0).max(65535).optional(),
  tokenizer: tokenizerSchema.optional(),
  maxBodyBytes: z.number().int().positive().optional(),
  streamChunkChars: z.number().int().positive().optional(),
  keepAliveMs: z.number().int().positive().optional(),
  extraBodyFields: z.array(z.string().min(1)).optional(),
  logger: z.custom<Logger>((value) => typeof value === 'object' && value !== null).optional(),
  now: z.custom<() => number>((value) => typeof value === 'function').optional(),
});

export const openSessionOptionsSchema = z.strictObject({
  rolloutId: z.string().min(1),
  model: z.string().min(1).optional(),
  maxRequests: z.number().int().positive().optional(),
  maxThreads: z.number().int().positive().optional(),
  tools: z
    .custom<GatewaySessionTools>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        Array.isArray((value as GatewaySessionTools).tools) &&
        typeof (value as GatewaySessionTools).sandbox?.exec === 'function',
      { message: 'expected { tools: ToolV1[], sandbox: SandboxV1, ... }' },
    )
    .optional(),
});

/** Parses settings with a message that names each bad field (and the closest valid name for a typo). */
export function parseSettings<TSchema extends z.ZodObject>(
  schema: TSchema,
  value: unknown,
  what: string,
): z.output<TSchema> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const valid = Object.keys(schema.shape);
  const issues = result.error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys')
      return issue.keys.map((key) => {
        const suggestion = closestName(key, valid);
        return {
          path: key,
          message: `unknown setting "${key}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''}; valid settings: ${valid.join(', ')}`,
        };
      });
    const path = issue.path.join('.') || '(settings)';
    return [{ path, message: `${path}: ${issue.message}` }];
  });
  throw new ConfigError({ message: `${what}: ${issues.map((issue) => issue.message).join('; ')}`, issues });
}
