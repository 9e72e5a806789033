// What the gateway records for one rollout: every request the harness made, in arrival order,
// and every thread (separate conversation) with its messages as shears ChatMessages and, behind
// a phase-2 server, its exact token record. The zod schema lets an env validate a stored record.
import {
  type ChatMessage,
  chatMessageSchema,
  type TokenRecord,
  type ToolSchema,
  tokenRecordSchema,
  type Usage,
  usageSchema,
} from '@shears/core';
import { z } from 'zod';
import type { ApiErrorKind, GatewayApi } from './api-error.js';
import type { GatewayToolCallRecord } from './mcp-endpoint.js';
import type { ThreadTags } from './threads.js';

export type GatewayRequestStatus = 'pending' | 'ok' | 'error' | 'aborted' | 'refused';

export interface GatewayRequestRecord {
  /** Arrival order within the rollout, from 0. */
  index: number;
  /** The API the request spoke; null for a path the gateway does not serve. */
  api: GatewayApi | null;
  method: string;
  /** The path below the session prefix, e.g. `/v1/chat/completions`. */
  path: string;
  /** The thread the request joined (model requests only). */
  threadId: string | null;
  stream: boolean;
  /** The model name the harness asked for. */
  model: string | null;
  /** Epoch milliseconds at arrival. */
  startedAt: number;
  durationMs: number | null;
  /** `pending` while in flight; `refused` for requests over the session's limit. */
  status: GatewayRequestStatus;
  httpStatus: number | null;
  error: { kind: ApiErrorKind; message: string } | null;
  finishReason: string | null;
  usage: Usage | null;
  /** Fields (and tools) the gateway accepted but did not act upon, e.g. `metadata`, `tools[8] (web_search)`. */
  ignoredFields: string[];
  /** Assistant messages of the history replaced by the server's own reply (phase 2; keeps tokens exact). */
  restoredMessages: number;
  /** Harness identification headers (user agent, session and thread ids); never keys. */
  headers: Record<string, string>;
}

export interface GatewayThreadRecord extends ThreadTags {
  id: string;
  requestIndices: number[];
  /** The conversation: the thread's last request plus its reply (when it succeeded). */
  messages: ChatMessage[];
  tools: ToolSchema[] | null;
  /** Phase 2: the exact tokens, masks and logprobs of this thread's sequence(s). */
  tokens: TokenRecord | null;
}

export interface GatewayRecord {
  rolloutId: string;
  /** The backend server's provider and model. */
  provider: string;
  model: string;
  /** True behind a phase-2 (managed) server: threads carry exact token records. */
  exactTokens: boolean;
  /** False once the session was closed. */
  open: boolean;
  requests: GatewayRequestRecord[];
  threads: GatewayThreadRecord[];
  /** True once a model request was refused for going over `maxRequests`. */
  requestLimitReached: boolean;
  /** True once a request was refused for starting a thread over `maxThreads`. */
  threadLimitReached: boolean;
  /** The tool calls made over the session's MCP endpoint, in arrival order (empty without one). */
  toolCalls: GatewayToolCallRecord[];
}

const apiSchema = z.enum(['chat.completions', 'responses', 'messages', 'messages.count_tokens', 'models']);

export const gatewayRequestRecordSchema = z.object({
  index: z.number().int().nonnegative(),
  api: apiSchema.nullable(),
  method: z.string(),
  path: z.string(),
  threadId: z.string().nullable(),
  stream: z.boolean(),
  model: z.string().nullable(),
  startedAt: z.number(),
  durationMs: z.number().nullable(),
  status: z.enum(['pending', 'ok', 'error', 'aborted', 'refused']),
  httpStatus: z.number().int().nullable(),
  error: z
    .object({
      kind: z.enum([
        'invalid_request',
        'authentication',
        'permission',
        'not_found',
        'request_too_large',
        'rate_limit',
        'server',
        'overloaded',
      ]),
      message: z.string(),
    })
    .nullable(),
  finishReason: z.string().nullable(),
  usage: usageSchema.nullable(),
  ignoredFields: z.array(z.string()),
  restoredMessages: z.number().int().nonnegative(),
  headers: z.record(z.string(), z.string()),
});

export const gatewayThreadRecordSchema = z.object({
  id: z.string(),
  api: apiSchema,
  systemHash: z.string(),
  systemPreview: z.string(),
  firstUserMessage: z.string(),
  toolNames: z.array(z.string()),
  branchOf: z.string().nullable(),
  requestIndices: z.array(z.number().int().nonnegative()),
  messages: z.array(chatMessageSchema),
  tools: z
    .array(z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }))
    .nullable(),
  tokens: tokenRecordSchema.nullable(),
});

export const gatewayRecordSchema = z.object({
  rolloutId: z.string(),
  provider: z.string(),
  model: z.string(),
  exactTokens: z.boolean(),
  open: z.boolean(),
  requests: z.array(gatewayRequestRecordSchema),
  threads: z.array(gatewayThreadRecordSchema),
  requestLimitReached: z.boolean(),
  threadLimitReached: z.boolean(),
  toolCalls: z
    .array(
      z.object({
        index: z.number().int().nonnegative(),
        name: z.string(),
        arguments: z.string(),
        result: z.string(),
        error: z.string().nullable(),
        refused: z.boolean(),
        persisted: z.boolean(),
        startedAt: z.number(),
        durationMs: z.number(),
      }),
    )
    .default([]),
});
