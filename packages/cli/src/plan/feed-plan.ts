// What `shears serve` and `shears train` need beyond a run: the trajectory API the workers feed
// (the `api` client settings and the pause rule), the tokenizer every rollout is sent as token
// ids with, and the trainer's needs (plan/train-plan.ts resolves the trainer itself).
import { resolve } from 'node:path';
import { ConfigError } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';
import type { PerStepAdvantage } from './loop-plan.js';
import { CHAT_SERVERS } from './server-plan.js';

export interface FeedPlan {
  /** The trajectory API the workers push to, and how they pace themselves. */
  api: {
    url: string;
    authToken: string | undefined;
    pollMs: number;
    /** How often a waiting worker says again what it waits for (api.wait_note_ms). */
    waitNoteMs: number;
    offPolicyLimit: number;
    /** The trainer batch size assumed while the API reports none. */
    batchSize: number;
  };
  /** The model's tokenizer folder, absolute: rollouts go to the trainer as token ids. */
  tokenizer: string;
  /** The trainer reads inference_logprobs: a server that records none is refused. */
  needsLogprobs: boolean;
  /** run.advantage's per-step credit, sent as per-token advantages. */
  perStep: PerStepAdvantage | undefined;
  /** `serve --max-groups`: stop after this many groups. */
  maxGroups: number | undefined;
}

/** A trainer that needs inference logprobs, with a server that records none. */
export function noLogprobsError(provider: string): ConfigError {
  return new ConfigError({
    message: `train.trainer.needs_inference_logprobs: the trainer needs the logprob of every generated token under the policy that sampled it, but server.provider "${provider}" is a chat (phase-1) server: shears re-tokenises its replies and sends the trainer inference_logprobs null. Use a token-in/token-out (phase-2) server that records them: server.provider vllm or sglang with server.tokenizer (the same model served by vLLM or SGLang). shears does not request logprobs from a chat server: its per-token logprobs name token strings, not the ids the trainer trains on. If the trainer does not read inference_logprobs, set train.trainer.needs_inference_logprobs: false.`,
    issues: [
      {
        path: 'server.provider',
        message: 'records no inference logprobs, which train.trainer.needs_inference_logprobs requires',
        value: provider,
      },
    ],
  });
}

export function resolveFeed(
  config: ShearsConfig,
  options: { command: 'serve' | 'train'; cwd: string; maxGroups: number | undefined },
): FeedPlan {
  const needsLogprobs = config.train.trainer?.needs_inference_logprobs === true;
  // A trainer that needs inference logprobs with a server that records none is refused before
  // anything starts. Built-in servers are known by id; a plugin's once it is created.
  if (needsLogprobs && CHAT_SERVERS.includes(config.server.provider))
    throw noLogprobsError(config.server.provider);
  if (!config.server.tokenizer) {
    throw new ConfigError({
      message: `server.tokenizer: \`shears ${options.command}\` sends each rollout to the trainer as token ids, so it needs the tokenizer of the model being trained: set server.tokenizer to the folder holding its tokenizer.json and tokenizer_config.json (e.g. --server.tokenizer ./models/Qwen3-8B, the folder a Hugging Face download of the model creates). \`shears process\` writes JSONL without one.`,
      issues: [
        { path: 'server.tokenizer', message: `required by shears ${options.command}`, value: undefined },
      ],
    });
  }
  return {
    api: {
      url: config.api.url,
      authToken: config.api.auth_token,
      pollMs: config.api.poll_ms,
      waitNoteMs: config.api.wait_note_ms,
      offPolicyLimit: config.api.off_policy_limit,
      batchSize: config.api.batch_size,
    },
    tokenizer: resolve(options.cwd, config.server.tokenizer),
    needsLogprobs,
    perStep: typeof config.run.advantage === 'string' ? undefined : config.run.advantage,
    maxGroups: options.maxGroups,
  };
}
