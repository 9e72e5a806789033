// The @shears/grpo plugin manifest: trajectory sinks `atropos-api` (push scored groups to an
// Atropos-compatible trajectory API) and `replay-buffer` (keep high scorers for replay).
import { definePlugin, InvalidArgumentError } from '@shears/core';
import { createApiSink } from './api-sink.js';
import { createReplayBuffer, createReplayBufferSink } from './replay-buffer.js';

const plugin = definePlugin({
  id: '@shears/grpo',
  description: 'GRPO advantages, the Atropos-compatible durable trajectory API, replay and data shaping',
  sinks: {
    'atropos-api': {
      aliases: ['atropos', 'trajectory-api'],
      description:
        'POST scored groups to an Atropos-compatible trajectory API (settings: url, authToken, envId, register, retries)',
      create(settings) {
        const url = settings.url;
        if (typeof url !== 'string' || url === '') {
          throw new InvalidArgumentError({
            argument: 'url',
            value: url,
            message: 'sink "atropos-api" needs a "url" setting, e.g. http://127.0.0.1:8000',
          });
        }
        return createApiSink({ ...(settings as Record<string, never>), url });
      },
    },
    'replay-buffer': {
      description: 'Keep groups whose best score passes a threshold (settings: capacity, threshold)',
      create(settings) {
        return createReplayBufferSink(
          createReplayBuffer({
            capacity: settings.capacity as number | undefined,
            threshold: settings.threshold as number | undefined,
          }),
        );
      },
    },
  },
});

export default plugin;
