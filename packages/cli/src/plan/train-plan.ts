// `shears train`'s trainer: train.trainer (any command), or the reference trainer that
// train.reference and --output make into a command line (with, colocated, the policy server the
// run's server is pointed at); its workers, the trajectory API it starts in-process, and the
// weight sync of a vLLM server from the reference trainer's checkpoints.
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

export interface TrainPlan {
  /** The trainer process: train.trainer.command, or the reference trainer's command line. */
  trainer: { command: readonly string[]; cwd: string; env: Record<string, string> };
  /** The reference trainer's output folder (--output), absolute. */
  output: string | undefined;
  /** The reference trainer's metrics.jsonl, carried into the run's metrics stream (loss, KL, entropy by step). */
  trainerMetrics?: string;
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

/**
 * train.reference (the bundled trainer, with --output) or train.trainer (any command): exactly one.
 * With the reference trainer the config gets its command line and, colocated, its policy server:
 * the config returned is the one the run uses.
 */
export async function resolveTrainPlan(
  given: ShearsConfig,
  cwd: string,
): Promise<{ config: ShearsConfig; train: TrainPlan }> {
  const { trainer, reference, output } = given.train;
  if (reference && trainer)
    throw new ConfigError({
      message:
        'train.reference and train.trainer are both set: train.reference starts the reference trainer (python -m shears_trainer), train.trainer.command starts your own; keep one',
      issues: [{ path: 'train', message: 'reference and trainer are exclusive', value: undefined }],
    });
  checkWeightSync(given);
  if (!reference && !trainer)
    throw new ConfigError({
      message:
        'train.trainer.command: required for `shears train` (your own trainer, e.g. train: { trainer: { command: ["python", "trainer.py"] } }), or train.reference for the reference trainer (e.g. train: { reference: { model: ./my-model } } with --output ./my-ft)',
      issues: [{ path: 'train.trainer.command', message: 'required', value: undefined }],
    });
  if (!reference && output !== undefined)
    throw new ConfigError({
      message: `--output ${output} (train.output) is for the reference trainer (train.reference); train.trainer.command decides itself where it writes: pass the folder in its command, or remove --output`,
      issues: [{ path: 'train.output', message: 'needs train.reference', value: output }],
    });
  let config = given;
  let folder: string | undefined;
  if (reference) {
    folder = checkTrainOutput(output, cwd);
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
    ({ config } = await resolveReferenceTrainer(given, { cwd, output: folder }));
  }
  const { train } = config;
  const command = train.trainer!;
  const sync = train.weight_sync;
  return {
    config,
    train: {
      trainer: {
        command: command.command,
        cwd: command.cwd ? resolve(cwd, command.cwd) : cwd,
        // The trainer's waits (for a batch) say so as often as the workers' do: api.wait_note_ms.
        env: { SHEARS_WAIT_NOTE_MS: String(config.api.wait_note_ms), ...command.env },
      },
      output: folder,
      ...(folder
        ? {
            trainerMetrics: referenceMetricsFile(
              command.command,
              folder,
              command.cwd ? resolve(cwd, command.cwd) : cwd,
            ),
          }
        : {}),
      workers: train.workers,
      apiServer: train.start_api ? trajectoryApiServerSettings(config.api, cwd) : undefined,
      weightSync:
        sync && folder
          ? {
              mode: sync.mode,
              baseUrl: config.server.base_url!,
              command: sync.command,
              loraName: sync.lora_name,
              initialModel: resolve(cwd, reference!.model),
              checkpoints: join(folder, 'checkpoints'),
              healthTimeoutMs: sync.health_timeout_s * 1000,
            }
          : undefined,
    },
  };
}

/** Where the reference trainer writes its metrics: its `--metrics` (read against its cwd), else OUTPUT/metrics.jsonl. */
function referenceMetricsFile(command: readonly string[], output: string, cwd: string): string {
  const at = command.lastIndexOf('--metrics');
  const given = at >= 0 ? command[at + 1] : undefined;
  return given ? resolve(cwd, given) : join(output, 'metrics.jsonl');
}
