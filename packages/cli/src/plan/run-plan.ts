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
import { type ClusterPlan, resolveCluster } from './cluster-plan.js';
import { type EnvPlan, resolveEnvs } from './env-plan.js';
import { type FeedPlan, resolveFeed } from './feed-plan.js';
import { type LoopPlan, resolveLoop } from './loop-plan.js';
import {
  type MetricsPlan,
  type OutputPlan,
  type RunCommand,
  resolveOutput,
  type SinkRequest,
} from './output-plan.js';
import { resolveSandbox, resolveServer, type SandboxPlan, type ServerPlan } from './server-plan.js';
import { resolveTrainPlan, type TrainPlan } from './train-plan.js';

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

/** The `loop` section with the plans of the runs beside the training run. */
export interface RunLoopPlan extends LoopPlan {
  /** loop.evaluation's held-out tasks, as a run of their own. */
  evaluationRun: RunPlan | undefined;
  /** loop.safety's capability data, as a run of their own. */
  capabilityRun: RunPlan | undefined;
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
  readonly loop: RunLoopPlan | undefined;
  /** `serve`, `train`: the trajectory API the workers feed. */
  readonly feed: FeedPlan | undefined;
  /** `train`: the trainer, its workers and the API it starts. */
  readonly train: TrainPlan | undefined;
  /** `serve --cluster`: the env workers are placed on a Ray cluster by the driver. */
  readonly cluster: ClusterPlan | undefined;
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
 * Resolves every section of `config` for `command`, each by its resolver, once: the loop (before
 * `train` resolves its trainer, so a loop setting the trainer would ignore is named first), the
 * feed and trainer (`serve`, `train`), the envs (the run's and the loop's side runs'), the outputs,
 * sinks and metrics, the server and sandbox; then the plan, and the plans of the side runs.
 */
export async function buildRunPlan(
  context: CommandContext,
  command: RunCommand,
  flags: RunFlags = {},
): Promise<RunPlan> {
  const maxGroups = maxGroupsFlag(flags.maxGroups);
  const { io, logger, redact, signal, drain } = context;
  const cwd = io.cwd;
  const cluster = resolveCluster(context.config, { command, cwd });
  const loop = resolveLoop(context.config, { command, cwd });
  const { config, train } =
    command === 'train'
      ? await resolveTrainPlan(context.config, cwd)
      : { config: context.config, train: undefined };
  const envName = config.env.name;
  const feed =
    command === 'serve' || command === 'train' ? resolveFeed(config, { command, cwd, maxGroups }) : undefined;
  const { env, sides } = resolveEnvs(config, {
    cwd,
    sides: {
      evaluation:
        loop?.evaluation &&
        (loop.evaluation.env ??
          (envName === undefined ? undefined : { name: envName, settings: config.env.settings })),
      capability: loop?.safety?.capability,
    },
  });
  const { output, sinks, metrics } = resolveOutput(config, { command, cwd, flags, env: io.env });
  const server = resolveServer(config, { apiKey: context.apiKey, cwd });
  const sandbox = resolveSandbox(config);
  const success = successRule(config.run.success_threshold);
  const advantages = resolveAdvantageEstimator(
    typeof config.run.advantage === 'string' ? config.run.advantage : config.run.advantage.estimator,
  );
  const progress = config.run.progress;
  const plan: RunPlan = {
    command,
    config,
    session: { io, logger, redact, signal, drain },
    cwd,
    plugins: config.plugins,
    env,
    server,
    sandbox,
    judges: { judge: config.judge, group_judge: config.group_judge },
    group: {
      size: config.env.group_size,
      count: config.run.groups,
      retries: config.run.max_retries,
      advantages,
      allEqualScores: config.run.all_equal_scores,
    },
    control: {
      concurrency: config.run.concurrency,
      progress: progress === 'auto' ? (io.isTty ? 'bars' : 'lines') : progress,
      drainTimeoutMs: config.run.drain_timeout_ms,
      maxRepeatedFailures: config.run.max_repeated_failures ?? Math.max(10, config.run.concurrency),
      success,
    },
    evaluation: {
      k: config.evaluate.k,
      maxItems: config.evaluate.max_items,
      bootstrapSamples: config.evaluate.bootstrap_samples,
      confidence: config.evaluate.confidence,
    },
    output,
    sinks,
    metrics,
    loop: undefined,
    feed,
    train,
    cluster,
  };
  if (!loop) return plan;
  // A run beside this one (the held-out evaluation, the capability data): another env, the same
  // server, judges and run settings, no progress bars, its log lines prefixed.
  const beside = (sideEnv: EnvPlan | undefined, prefix: string): RunPlan | undefined =>
    sideEnv && {
      ...plan,
      session: {
        ...plan.session,
        io: {
          ...io,
          stderr: (text: string) => {
            for (const line of text.split('\n').filter(Boolean)) io.stderr(`${prefix}${line}\n`);
          },
        },
      },
      env: sideEnv,
      control: { ...plan.control, progress: 'none' },
    };
  return {
    ...plan,
    loop: {
      ...loop,
      evaluationRun: beside(sides.evaluation, '[eval] '),
      capabilityRun: beside(sides.capability, '[capability] '),
    },
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
    env: resolveEnvs(config, { cwd: plan.cwd, sides: {} }).env,
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
