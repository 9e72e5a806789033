// The run plan: the one place a validated config becomes what a run does. Each config section has
// one resolver (env-plan, server-plan, output-plan, loop-plan, feed-plan) that turns it into the
// shape its consumer takes (camelCase, defaults applied, paths absolute) and refuses what cannot
// work or would be ignored, before anything starts; `buildRunPlan` calls them in order and hands
// the result to the runner. A plan is data plus the session: the live parts it names (the env,
// the server, the sandboxes, the sinks) are created from it by runtime/ and output/.
import { type AdvantageEstimator, InvalidArgumentError, resolveAdvantageEstimator } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';
import type { ProgressMode } from '../progress/progress.js';
import type { CommandContext, RunSession } from '../session.js';
import { type SuccessRule, successRule } from '../stats.js';
import { type EnvPlan, resolveEnv } from './env-plan.js';
import { type FeedPlan, resolveFeed, resolveTrain, resolveTrainConfig, type TrainPlan } from './feed-plan.js';
import { type LoopPlan, resolveLoop } from './loop-plan.js';
import {
  type MetricsPlan,
  type OutputPlan,
  type RunCommand,
  resolveMetrics,
  resolveOutput,
  resolveSinks,
  type SinkRequest,
} from './output-plan.js';
import { resolveSandbox, resolveServer, type SandboxPlan, type ServerPlan } from './server-plan.js';

/** runGroup's settings that come from the config (the item and the group size come per call). */
export interface GroupPlan {
  /** Rollouts per group (env.group_size; `evaluate` runs k per item instead). */
  size: number;
  /** Groups to run (run.groups: `process`). */
  count: number;
  /** Retries of rollouts that failed for infrastructure reasons. */
  retries: number;
  advantages: AdvantageEstimator;
  allEqualScores: 'drop' | 'keep';
}

/** How the run is paced, shown and stopped. */
export interface ControlPlan {
  /** Rollouts in flight at once. */
  concurrency: number;
  progress: ProgressMode;
  drainTimeoutMs: number;
  /** Trip after this many failures with the same reason and no reward in between; 0: never. */
  maxRepeatedFailures: number;
  /** What counts as solved (pass rates, pass@k). */
  success: SuccessRule;
}

/** The `evaluate` section: k samples per item and the bootstrap (also read by the loop's evaluations). */
export interface EvaluationPlan {
  k: number;
  maxItems: number | undefined;
  bootstrapSamples: number;
  confidence: number;
}

export interface RunPlan {
  readonly command: RunCommand;
  /**
   * The validated config the plan was resolved from, as the user gave it (after `train` filled in
   * the reference trainer). Read only to record the run (its identity on resume, the W&B run's
   * config) and to derive side plans; every setting a run uses is in the sections below.
   */
  readonly config: ShearsConfig;
  readonly session: RunSession;
  /** Where shears runs: relative config paths are resolved against it. */
  readonly cwd: string;
  /** Plugin packages to load (`plugins`), besides the built-in ones. */
  readonly plugins: readonly string[];
  readonly env: EnvPlan;
  readonly server: ServerPlan;
  readonly sandbox: SandboxPlan;
  /** `judge` and `group_judge` (created with the runtime: a judge's server is a registry entry too). */
  readonly judges: Pick<ShearsConfig, 'judge' | 'group_judge'>;
  readonly group: GroupPlan;
  readonly control: ControlPlan;
  readonly evaluation: EvaluationPlan;
  readonly output: OutputPlan;
  /** `sinks`: trajectory sinks from plugins that receive every group the run writes. */
  readonly sinks: readonly SinkRequest[];
  readonly metrics: MetricsPlan;
  /** `loop` (`serve`, `train`). */
  readonly loop: LoopPlan | undefined;
  /** `serve`, `train`: the trajectory API the workers feed. */
  readonly feed: FeedPlan | undefined;
  /** `train`: the trainer, its workers and the API it starts. */
  readonly train: TrainPlan | undefined;
}

/** What a command reads from its command line, beside the config. */
interface RunFlags {
  /** --force: existing outputs are replaced. */
  force?: boolean;
  /** --resume (`process`, `evaluate`). */
  resume?: boolean;
  /** --max-groups N (`serve`), as given. */
  maxGroups?: string | true;
}

/** `--max-groups N` of `shears serve`: a positive integer. */
function maxGroupsFlag(raw: string | true | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw new InvalidArgumentError({
      argument: '--max-groups',
      value: raw,
      message: `--max-groups: expected a positive integer, got ${String(raw)}`,
    });
  return value;
}

/**
 * Resolves every section of `config` for `command`, in the order a user reads the errors: the
 * command line, the trainer (`train`), the env and its tools, the loop, the metrics, the trainer's
 * needs, the server and sandbox, the sinks, the output files.
 */
export async function buildRunPlan(
  context: CommandContext,
  command: RunCommand,
  flags: RunFlags = {},
): Promise<RunPlan> {
  const { io } = context;
  const maxGroups = maxGroupsFlag(flags.maxGroups);
  let config = context.config;
  let trainOutput: string | undefined;
  if (command === 'train') {
    // Before the trainer is resolved: a loop setting the trainer would ignore is named first.
    resolveLoop(config, { command, cwd: io.cwd, out: config.run.out });
    ({ config, output: trainOutput } = await resolveTrainConfig(config, io.cwd));
  }
  return resolvePlan(config, {
    command,
    session: context,
    apiKey: context.apiKey,
    flags,
    maxGroups,
    trainOutput,
  });
}

interface ResolveOptions {
  command: RunCommand;
  session: RunSession;
  apiKey: string | undefined;
  flags: RunFlags;
  maxGroups: number | undefined;
  trainOutput: string | undefined;
}

function resolvePlan(config: ShearsConfig, options: ResolveOptions): RunPlan {
  const { command, session } = options;
  const { io } = session;
  const cwd = io.cwd;
  const env = resolveEnv(config, cwd);
  const output = resolveOutput(config, { command, cwd, flags: options.flags });
  const loop = resolveLoop(config, { command, cwd, out: output.out });
  const metrics = resolveMetrics(config, { command, env: io.env });
  const feed =
    command === 'serve' || command === 'train'
      ? resolveFeed(config, { command, cwd, maxGroups: options.maxGroups })
      : undefined;
  const progress = config.run.progress;
  return {
    command,
    config,
    session: {
      io: session.io,
      logger: session.logger,
      redact: session.redact,
      signal: session.signal,
      drain: session.drain,
    },
    cwd,
    plugins: config.plugins,
    env,
    server: resolveServer(config, { apiKey: options.apiKey, cwd }),
    sandbox: resolveSandbox(config),
    judges: { judge: config.judge, group_judge: config.group_judge },
    group: {
      size: config.env.group_size,
      count: config.run.groups,
      retries: config.run.max_retries,
      advantages: advantageEstimator(config.run.advantage),
      allEqualScores: config.run.all_equal_scores,
    },
    control: {
      concurrency: config.run.concurrency,
      progress: progress === 'auto' ? (io.isTty ? 'bars' : 'lines') : progress,
      drainTimeoutMs: config.run.drain_timeout_ms,
      maxRepeatedFailures: config.run.max_repeated_failures ?? Math.max(10, config.run.concurrency),
      success: successRule(config.run.success_threshold),
    },
    evaluation: {
      k: config.evaluate.k,
      maxItems: config.evaluate.max_items,
      bootstrapSamples: config.evaluate.bootstrap_samples,
      confidence: config.evaluate.confidence,
    },
    output,
    sinks: resolveSinks(config),
    metrics,
    loop,
    feed,
    train: command === 'train' ? resolveTrain(config, { cwd, output: options.trainOutput }) : undefined,
  };
}

/** The estimator named by run.advantage (a name, or the `estimator` of per-step credit). */
function advantageEstimator(setting: ShearsConfig['run']['advantage']): AdvantageEstimator {
  return resolveAdvantageEstimator(typeof setting === 'string' ? setting : setting.estimator);
}

/**
 * A plan for a run beside this one that uses another env (the loop's held-out evaluation and
 * capability data): the same server, judges and run settings, the env replaced (without the
 * training env's added tools and toolset selection), no progress bars, log lines prefixed.
 */
export function sidePlan(
  plan: RunPlan,
  env: { name: string; settings: Record<string, unknown> },
  prefix: string,
): RunPlan {
  const { io } = plan.session;
  const stderr = (text: string) => {
    for (const line of text.split('\n').filter(Boolean)) io.stderr(`${prefix}${line}\n`);
  };
  const config: ShearsConfig = {
    ...plan.config,
    env: {
      ...plan.config.env,
      name: env.name,
      settings: env.settings,
      toolsets: undefined,
      tools: undefined,
    },
  };
  return {
    ...plan,
    config,
    session: { ...plan.session, io: { ...io, stderr } },
    env: resolveEnv(config, plan.cwd),
    control: { ...plan.control, progress: 'none' },
  };
}

/**
 * The plan of one of `train`'s workers: its own data (env.seed + index, worker-0 keeps env.seed),
 * the API `train` started, progress as lines, its own session (log prefix, stop signals).
 */
export function workerPlan(
  plan: RunPlan,
  options: { index: number; apiUrl: string; session: RunSession },
): RunPlan {
  const config: ShearsConfig = {
    ...plan.config,
    env: { ...plan.config.env, seed: plan.config.env.seed + options.index },
  };
  return {
    ...plan,
    config,
    session: options.session,
    env: resolveEnv(config, plan.cwd),
    // The scripted server's policy is seeded with env.seed too (any other server's key is in its settings).
    server: resolveServer(config, {
      apiKey: plan.server.settings.apiKey as string | undefined,
      cwd: plan.cwd,
    }),
    control: {
      ...plan.control,
      progress: plan.config.run.progress === 'auto' ? 'lines' : plan.control.progress,
    },
    feed: plan.feed && { ...plan.feed, api: { ...plan.feed.api, url: options.apiUrl } },
  };
}
