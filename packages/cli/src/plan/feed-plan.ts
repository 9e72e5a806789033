// What `shears serve` and `shears train` need beyond a run: the trajectory API the workers feed
// (the `api` client settings and the pause rule), the tokenizer every rollout is sent as token
// ids with, and the trainer's needs; for `train`, the trainer itself (train.trainer, or the
// reference trainer that train.reference and --output make into a command line), its workers,
// the in-process API server and the weight sync.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '@shears/core';
import type { TrajectoryApiServerSettings } from '@shears/grpo';
import type { ShearsConfig } from '../config/config-schema.js';
import {
  checkTrainOutput,
  checkWeightSync,
  referencePython,
  resolveReferenceTrainer,
} from '../train/reference-trainer.js';
import { trajectoryApiServerSettings } from './api-plan.js';
import { type PerStepAdvantage, perStepAdvantage } from './loop-plan.js';
import { CHAT_SERVERS } from './server-plan.js';

export interface FeedPlan {
  /** The trajectory API the workers push to, and how they pace themselves. */
  api: {
    url: string;
    authToken: string | undefined;
    pollMs: number;
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

export interface TrainPlan {
  /** The trainer process: train.trainer.command, or the reference trainer's command line. */
  trainer: { command: readonly string[]; cwd: string; env: Record<string, string> };
  /** The reference trainer's output folder (--output), absolute. */
  output: string | undefined;
  workers: number;
  /** Settings of the trajectory API `train` starts in-process (train.start_api), else undefined. */
  apiServer: Omit<TrajectoryApiServerSettings, 'logger'> | undefined;
  /** train.weight_sync with the reference trainer: the vLLM server synced from its checkpoints. */
  weightSync:
    | {
        mode: 'restart' | 'lora';
        baseUrl: string;
        command: string[] | undefined;
        loraName: string;
        initialModel: string;
        checkpoints: string;
        healthTimeoutMs: number;
      }
    | undefined;
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
      offPolicyLimit: config.api.off_policy_limit,
      batchSize: config.api.batch_size,
    },
    tokenizer: resolve(options.cwd, config.server.tokenizer),
    needsLogprobs,
    perStep: perStepAdvantage(config),
    maxGroups: options.maxGroups,
  };
}

/**
 * train.reference (the bundled trainer, with --output) or train.trainer (any command): exactly one.
 * With the reference trainer the config gets its command line and, colocated, its policy server.
 */
export async function resolveTrainConfig(
  config: ShearsConfig,
  cwd: string,
): Promise<{ config: ShearsConfig; output?: string }> {
  const { trainer, reference, output } = config.train;
  if (reference && trainer)
    throw new ConfigError({
      message:
        'train.reference and train.trainer are both set: train.reference starts the reference trainer (python -m shears_trainer), train.trainer.command starts your own; keep one',
      issues: [{ path: 'train', message: 'reference and trainer are exclusive', value: undefined }],
    });
  checkWeightSync(config);
  if (!reference) {
    if (!trainer)
      throw new ConfigError({
        message:
          'train.trainer.command: required for `shears train` (your own trainer, e.g. train: { trainer: { command: ["python", "trainer.py"] } }), or train.reference for the reference trainer (e.g. train: { reference: { model: ./my-model } } with --output ./my-ft)',
        issues: [{ path: 'train.trainer.command', message: 'required', value: undefined }],
      });
    if (output !== undefined)
      throw new ConfigError({
        message: `--output ${output} (train.output) is for the reference trainer (train.reference); train.trainer.command decides itself where it writes: pass the folder in its command, or remove --output`,
        issues: [{ path: 'train.output', message: 'needs train.reference', value: output }],
      });
    return { config };
  }
  const folder = checkTrainOutput(output, cwd);
  const model = resolve(cwd, reference.model);
  if (!existsSync(join(model, 'config.json')))
    throw new ConfigError({
      message: `train.reference.model: ${model} holds no config.json; name a Hugging Face model folder (config.json, safetensors, tokenizer)`,
      issues: [{ path: 'train.reference.model', message: 'not a model folder', value: reference.model }],
    });
  const python = referencePython(reference, cwd);
  if (python.includes('/') && !existsSync(python))
    throw new ConfigError({
      message: `train.reference: the trainer's Python ${python} does not exist; run \`shears prepare --trainer\` (creates ${reference.python ? 'a venv at train.reference.venv' : reference.venv}) or point train.reference.python at an interpreter with shears_trainer installed`,
      issues: [{ path: 'train.reference.venv', message: 'not prepared', value: reference.venv }],
    });
  const run = await resolveReferenceTrainer(config, { cwd, output: folder });
  return { config: run.config, output: folder };
}

/** The `train` section of a config that resolveTrainConfig made whole. */
export function resolveTrain(
  config: ShearsConfig,
  options: { cwd: string; output: string | undefined },
): TrainPlan {
  const { train } = config;
  const trainer = train.trainer!;
  const sync = train.weight_sync;
  return {
    trainer: {
      command: trainer.command,
      cwd: trainer.cwd ? resolve(options.cwd, trainer.cwd) : options.cwd,
      env: trainer.env,
    },
    output: options.output,
    workers: train.workers,
    apiServer: train.start_api ? trajectoryApiServerSettings(config.api, options.cwd) : undefined,
    weightSync:
      sync && options.output
        ? {
            mode: sync.mode,
            baseUrl: config.server.base_url!,
            command: sync.command,
            loraName: sync.lora_name,
            initialModel: resolve(options.cwd, train.reference!.model),
            checkpoints: join(options.output, 'checkpoints'),
            healthTimeoutMs: sync.health_timeout_s * 1000,
          }
        : undefined,
  };
}
