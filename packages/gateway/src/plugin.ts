// The registry manifest of @shears/gateway: the `harness` env, so a config can say
// `env: { name: harness, settings: { preset: qwen-code, ... } }`.
import { definePlugin, definePluginEntry } from '@shears/core';
import { createHarnessEnv, harnessEnvSettingsSchema } from './harness-env.js';
import { HARNESS_PRESETS } from './harness-presets.js';

const plugin = definePlugin({
  id: '@shears/gateway',
  description: 'The agent gateway and the harness env: train an existing agent program unmodified',
  envs: {
    harness: definePluginEntry({
      description: `An existing agent program run in the rollout's sandbox against the gateway (presets: ${Object.keys(HARNESS_PRESETS).join(', ')})`,
      settings: harnessEnvSettingsSchema,
      taskFileSetting: 'tasks',
      create: (settings) => createHarnessEnv(settings),
    }),
  },
});

export default plugin;
