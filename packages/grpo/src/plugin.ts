// The @shears/grpo plugin manifest: trajectory sinks `atropos-api` (push scored groups to an
// Atropos-compatible trajectory API) and `replay-buffer` (keep high scorers for replay), each
// with the settings schema the registry checks config settings against.
import { definePlugin, definePluginEntry, type TokenizerV1 } from '@shears/core';
import { z } from 'zod';
import { createApiSink } from './api/api-sink.js';
import type { TrajectoryApiClient } from './api/trajectory-api-client.js';
import { createReplayBuffer, createReplayBufferSink } from './shaping/replay-buffer.js';

const isObject = (value: unknown) => typeof value === 'object' && value !== null;

/** `sinks: atropos-api` settings: the client's (url, auth, retries, ...) and the sink's own. */
const apiSinkSettingsSchema = z.strictObject({
  url: z.url({ error: 'needs a "url" setting, e.g. http://127.0.0.1:8000' }),
  authToken: z.string().min(1).optional(),
  retries: z.int().min(0).optional(),
  initialBackoffMs: z.number().min(0).optional(),
  maxBackoffMs: z.number().min(0).optional(),
  timeoutMs: z.number().positive().optional(),
  gzipThreshold: z.int().min(0).optional(),
  idempotencyKeys: z.boolean().optional(),
  envId: z.int().nullable().optional(),
  register: z
    .strictObject({
      maxTokenLength: z.int().positive(),
      desiredName: z.string().min(1),
      weight: z.number().positive().optional(),
      groupSize: z.int().positive(),
      minBatchAllocation: z.number().min(0).nullable().optional(),
    })
    .optional(),
  includeMessages: z.boolean().optional(),
  client: z
    .custom<TrajectoryApiClient>((value) => isObject(value), { error: 'expected a trajectory API client' })
    .optional(),
  tokenizer: z
    .custom<TokenizerV1>((value) => isObject(value) && typeof (value as TokenizerV1).encode === 'function', {
      error: 'expected a tokenizer instance',
    })
    .optional(),
});

/** `sinks: replay-buffer` settings. */
const replayBufferSinkSettingsSchema = z.strictObject({
  capacity: z.int().positive().optional(),
  threshold: z.number().optional(),
});

const plugin = definePlugin({
  id: '@shears/grpo',
  description: 'GRPO advantages, the Atropos-compatible durable trajectory API, replay and data shaping',
  sinks: {
    'atropos-api': definePluginEntry({
      aliases: ['atropos', 'trajectory-api'],
      description:
        'POST scored groups to an Atropos-compatible trajectory API (settings: url, authToken, envId, register, retries)',
      settings: apiSinkSettingsSchema,
      create: (settings) => createApiSink(settings),
    }),
    'replay-buffer': definePluginEntry({
      description: 'Keep groups whose best score passes a threshold (settings: capacity, threshold)',
      settings: replayBufferSinkSettingsSchema,
      create: (settings) => createReplayBufferSink(createReplayBuffer(settings)),
    }),
  },
});

export default plugin;
