// The reference trainer (`trainers/`, Python) as `shears train` starts it: `train.reference` and
// `--output` become the trainer's command line (`python -m shears_trainer grpo …`), the colocated
// policy server gets a free port that the managed vllm server is pointed at, and the output folder
// is checked before anything starts. After the run, its `train-summary.json` is read back.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import { ConfigError } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';

type ReferenceSettings = NonNullable<ShearsConfig['train']['reference']>;

/** The interpreter the reference trainer runs with: train.reference.python, else VENV/bin/python. */
export function referencePython(reference: ReferenceSettings, cwd: string): string {
  if (reference.python)
    return reference.python.includes('/') ? resolve(cwd, reference.python) : reference.python;
  return join(
    resolve(cwd, reference.venv),
    process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python',
  );
}

/**
 * The `trainers/` folder (the `shears-trainer` Python package): $SHEARS_TRAINER_SOURCE, else the
 * repository this CLI runs from. The npm package does not bundle it.
 */
export function trainerSource(vars: Record<string, string | undefined> = process.env): string | undefined {
  const given = vars.SHEARS_TRAINER_SOURCE;
  if (given) return resolve(given);
  let folder = import.meta.dirname;
  for (let depth = 0; depth < 6; depth++) {
    const candidate = join(folder, 'trainers');
    if (existsSync(join(candidate, 'pyproject.toml')) && existsSync(join(candidate, 'shears_trainer')))
      return candidate;
    const parent = dirname(folder);
    if (parent === folder) break;
    folder = parent;
  }
  return undefined;
}

/**
 * Refuses an output folder the trainer cannot write a fresh run into: a file, or a folder with
 * anything in it (the trainer appends to metrics.jsonl and overwrites model files, so an old run
 * there would be mixed with or replaced by the new one without a word).
 */
export function checkTrainOutput(output: string | undefined, cwd: string): string {
  if (output === undefined || output.trim() === '')
    throw new ConfigError({
      message:
        'shears train with train.reference needs an output folder for the model: pass --output ./my-ft (or set train.output)',
      issues: [{ path: 'train.output', message: 'required', value: output }],
    });
  const folder = resolve(cwd, output);
  if (existsSync(folder)) {
    if (!statSync(folder).isDirectory())
      throw new ConfigError({
        message: `--output ${output}: ${folder} is a file, not a folder; name a new folder for the model`,
        issues: [{ path: 'train.output', message: 'not a folder', value: output }],
      });
    const entries = readdirSync(folder);
    if (entries.length > 0)
      throw new ConfigError({
        message: `--output ${output}: ${folder} is not empty (${entries.slice(0, 5).join(', ')}${entries.length > 5 ? ', …' : ''}); shears train does not write a model over another run: name a new folder, or move that one away`,
        issues: [{ path: 'train.output', message: 'not empty', value: output }],
      });
  }
  return folder;
}

/** A free loopback port for the colocated policy server (asked of the OS, then released). */
export async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', done);
  });
  const address = server.address();
  await new Promise((done) => server.close(done));
  if (typeof address !== 'object' || address === null) throw new Error('no free port');
  return address.port;
}

const FLAGS: [keyof ReferenceSettings, string][] = [
  ['micro_batch', '--micro-batch'],
  ['lr', '--lr'],
  ['weight_decay', '--weight-decay'],
  ['max_grad_norm', '--max-grad-norm'],
  ['clip_low', '--clip-low'],
  ['clip_high', '--clip-high'],
  ['beta', '--beta'],
  ['loss', '--loss'],
  ['advantages', '--advantages'],
  ['checkpoint_every', '--checkpoint-every'],
  ['lora_rank', '--lora-rank'],
  ['lora_alpha', '--lora-alpha'],
  ['seed', '--seed'],
  ['threads', '--threads'],
  ['device', '--device'],
  ['batch_timeout_s', '--batch-timeout'],
];

interface ReferenceRun {
  /** The config `shears train` runs: train.trainer is the reference trainer's command. */
  config: ShearsConfig;
  output: string;
  /** The colocated policy server's URL, when the trainer serves the policy. */
  policyUrl?: string;
}

function refuse(path: string, message: string, value?: unknown): never {
  throw new ConfigError({ message: `train.weight_sync: ${message}`, issues: [{ path, message, value }] });
}

/** train.weight_sync needs the reference trainer's checkpoints and a vLLM server it can reach. */
export function checkWeightSync(config: ShearsConfig): void {
  const sync = config.train.weight_sync;
  if (!sync) return;
  const reference = config.train.reference;
  if (!reference)
    refuse(
      'train.reference',
      "syncs the reference trainer's checkpoints; set train.reference (a train.trainer.command syncs its own weights)",
    );
  if (reference.colocated)
    refuse(
      'train.reference.colocated',
      'the colocated policy server is updated in place after every step and needs no sync; set train.reference.colocated: false to sample from vLLM',
    );
  if (!reference.checkpoint_every)
    refuse(
      'train.reference.checkpoint_every',
      'syncs at each checkpoint; set train.reference.checkpoint_every to N (steps between syncs)',
      reference.checkpoint_every,
    );
  if (config.server.provider !== 'vllm' || !config.server.base_url)
    refuse(
      'server.base_url',
      `syncs a vLLM server: set server.provider: vllm and server.base_url (got provider "${config.server.provider}", base_url ${config.server.base_url ?? 'unset'})`,
    );
  if (sync.mode === 'restart') {
    if (!sync.command)
      refuse(
        'train.weight_sync.command',
        'restart needs the vLLM server command, e.g. ["vllm", "serve", "{model}", "--port", "8001"]',
      );
    if (!sync.command.some((part) => part.includes('{model}')))
      refuse(
        'train.weight_sync.command',
        'restart: the command names no "{model}", so every restart would serve the same weights',
        sync.command,
      );
  } else {
    if (sync.command)
      refuse(
        'train.weight_sync.command',
        'lora loads adapters into a running server; command is for restart',
        sync.command,
      );
    if (!reference.lora_rank)
      refuse(
        'train.reference.lora_rank',
        'lora hot-swaps LoRA adapters; set train.reference.lora_rank (e.g. 16)',
      );
    if (config.server.model !== sync.lora_name)
      refuse(
        'server.model',
        `lora: the workers must ask for the adapter by its name: set server.model to "${sync.lora_name}" (got ${JSON.stringify(config.server.model)})`,
        config.server.model,
      );
  }
}

/** Turns train.reference + the output folder into the trainer command and the server it serves. */
export async function resolveReferenceTrainer(
  config: ShearsConfig,
  options: { cwd: string; output: string; port?: number },
): Promise<ReferenceRun> {
  const reference = config.train.reference!;
  const { cwd, output } = options;
  let server = config.server;
  let policyUrl: string | undefined;
  const args: string[] = [];
  if (reference.colocated) {
    if (server.provider !== 'vllm' && server.provider !== 'scripted')
      throw new ConfigError({
        message: `train.reference.colocated: the trainer's policy server speaks vLLM's /generate, but server.provider is "${server.provider}"; set server.provider: vllm (or leave it out), or set train.reference.colocated: false and point server.base_url at your own policy server`,
        issues: [
          {
            path: 'server.provider',
            message: 'must be vllm with a colocated trainer',
            value: server.provider,
          },
        ],
      });
    if (server.base_url !== undefined)
      throw new ConfigError({
        message: `train.reference.colocated: shears points the server at the trainer's own policy server, so server.base_url (${server.base_url}) would not be used; remove it, or set train.reference.colocated: false to sample from the server at that URL`,
        issues: [
          { path: 'server.base_url', message: 'set by shears train when colocated', value: server.base_url },
        ],
      });
    const port = options.port ?? (await freeLoopbackPort());
    policyUrl = `http://127.0.0.1:${port}`;
    server = {
      ...server,
      provider: 'vllm',
      base_url: policyUrl,
      model: server.model ?? 'policy',
      tokenizer: server.tokenizer ?? reference.model,
    };
    args.push('--serve-port', String(port));
  }
  const model = resolve(cwd, reference.model);
  const command = [
    referencePython(reference, cwd),
    '-m',
    'shears_trainer',
    'grpo',
    '--model',
    model,
    '--output',
    output,
    '--steps',
    String(reference.steps),
    '--batch-size',
    String(reference.batch_size ?? config.api.batch_size),
    '--max-token-len',
    String(config.env.max_token_length),
  ];
  for (const [key, flag] of FLAGS) {
    const value = reference[key];
    if (value !== undefined) command.push(flag, String(value));
  }
  command.push(...args, ...reference.args);
  return {
    output,
    policyUrl,
    config: {
      ...config,
      server,
      train: {
        ...config.train,
        trainer: {
          command,
          env: { PYTHONUNBUFFERED: '1', ...reference.env },
          // The reference trainer's importance ratio reads inference_logprobs: refuse a chat server.
          needs_inference_logprobs: true,
        },
      },
    },
  };
}

interface TrainSummary {
  steps: number;
  reward_start: number;
  reward_end: number;
  /** Steps averaged at each end (the trainer's summary says; older ones did not). */
  reward_window?: number;
  output: string;
  metrics: string;
  checkpoints: string[];
  seconds?: number;
}

/** What the trainer left in the output folder: its summary, and whether the model is there. */
function readTrainOutput(output: string): {
  summary?: TrainSummary;
  model: boolean;
  problem?: string;
} {
  const model =
    existsSync(join(output, 'config.json')) &&
    readdirSync(output).some((name) => name.endsWith('.safetensors'));
  const path = join(output, 'train-summary.json');
  if (!existsSync(path)) return { model, problem: `no ${path}: the trainer did not finish` };
  try {
    return { model, summary: JSON.parse(readFileSync(path, 'utf8')) as TrainSummary };
  } catch (error) {
    return { model, problem: `${path} is not JSON: ${(error as Error).message}` };
  }
}

/**
 * What the reward of `train`'s closing line averages: each step's reward is the mean score of
 * the sequences in that step's batch (what the API delivered: groups dropped as all-equal never
 * reach it), averaged over the first and the last `window` steps (the trainer's rule:
 * min(10, steps / 4), at least 1).
 */
function describeRewardWindow(summary: { steps: number; reward_window?: number }): string {
  const window = summary.reward_window ?? Math.max(1, Math.min(10, Math.floor(summary.steps / 4)));
  const steps =
    window === 1 ? 'the first and the last step' : `the first ${window} and the last ${window} steps`;
  return `the mean score of the sequences in a trainer batch, averaged over ${steps} (groups dropped as all-equal are not in any batch)`;
}

/** The lines `shears train` ends with: steps, reward at start and end, where everything is. */
export function formatTrainSummary(output: string, cwd: string): string[] {
  const { summary, model, problem } = readTrainOutput(output);
  const show = (path: string) => relative(cwd, path) || path;
  if (!summary)
    return [
      `train: no summary (${problem}); ${model ? `a model is in ${show(output)}` : `no model in ${show(output)}`}`,
    ];
  return [
    `train: ${summary.steps} steps; reward ${summary.reward_start.toFixed(3)} at the start → ${summary.reward_end.toFixed(3)} at the end: ${describeRewardWindow(summary)}`,
    `train: model ${model ? 'in' : 'MISSING from'} ${show(output)} (AutoModelForCausalLM.from_pretrained loads it)`,
    `train: metrics in ${show(summary.metrics)}; ${summary.checkpoints.length > 0 ? `checkpoints ${summary.checkpoints.map(show).join(', ')}` : 'no checkpoints (train.reference.checkpoint_every)'}`,
  ];
}
