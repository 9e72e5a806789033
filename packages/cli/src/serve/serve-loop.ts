// The env worker loop behind `shears serve` and `shears train`: check that the trajectory API
// answers, register with it, then run groups and post them, pausing while the queue this env
// sees (GET /status-env, its own groups plus those competing for the same batches) is more than
// `off_policy_limit` batches ahead of the trainer. A group is reported as sent only once the API
// acknowledged it; every group, sent or not, goes to `run.out` when a writer is given, and every
// group not sent is counted under the reason it was not.
import { resolve } from 'node:path';
import {
  ConfigError,
  describeError,
  isManagedServer,
  type ScoredData,
  type ScoredGroupRecord,
  type ServerV1,
  ShearsError,
  type TokenizerV1,
} from '@shears/core';
import { ignoreAborted, sleep } from '@shears/core/internal';
import { StepCreditMismatchError, scoredDataFromRecord, stepCredit } from '@shears/grpo';
import { createHfTokenizer } from '@shears/servers';
import { CHAT_SERVERS } from '../compose.js';
import type { ShearsConfig } from '../config/config-schema.js';
import type { DrawnItem, LoopController } from '../loop/loop-controller.js';
import type { RunMetrics, TrainerStatus } from '../metrics/run-metrics.js';
import { type PerStepAdvantage, perStepAdvantage } from '../plan/loop-plan.js';
import { droppedLabel } from '../progress/progress.js';
import type { FailureCount, StoppedBy } from '../run/run-control.js';
import type { JsonlWriter } from '../run/run-output.js';
import { type CommandContext, runOneGroup, startRuntime } from '../runtime.js';
import { type AtroposLink, createAtroposLink } from './atropos-link.js';

interface ServeResult {
  /** Groups the API acknowledged (fresh ones; replays are counted in `replaysSent`). */
  groupsSent: number;
  /** Replayed groups (loop.replay) the API acknowledged. */
  replaysSent: number;
  /** Groups finished but not sent, by the reason in words. */
  notSent: Record<string, number>;
  pauses: number;
  /** Rollouts that got a reward (sent or not). */
  scoredRollouts: number;
  stoppedBy: StoppedBy | undefined;
  failures: FailureCount[];
  /** Groups the API acknowledged but buffered (smaller than the env's group size; see postScoredData). */
  bufferedByApi: number;
  /** Groups with fewer sequences than env.group_size, sent without env_id so the API queues them. */
  sentWithoutEnvId: number;
}

/** The trajectory API could not be reached or refused the worker. */
class TrajectoryApiError extends ShearsError {
  readonly url: string;
  constructor(options: { url: string; message: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_TRAJECTORY_API', cause: options.cause });
    this.url = options.url;
  }
  static override isInstance(error: unknown): error is TrajectoryApiError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_TRAJECTORY_API';
  }
}

// Loading a tokenizer.json of a large vocabulary takes seconds; workers in one process share it.
const tokenizerCache = new Map<string, TokenizerV1>();

async function loadTokenizer(path: string, cwd: string): Promise<TokenizerV1> {
  const key = resolve(cwd, path);
  const cached = tokenizerCache.get(key);
  if (cached) return cached;
  const tokenizer = loadTokenizerUncached(key);
  tokenizerCache.set(key, tokenizer);
  return tokenizer;
}

function loadTokenizerUncached(path: string): TokenizerV1 {
  try {
    return createHfTokenizer({ dir: path });
  } catch (cause) {
    throw new ConfigError({
      message: `server.tokenizer: cannot load a tokenizer from ${path} (${(cause as Error).message}); point it at a folder with tokenizer.json and tokenizer_config.json`,
      issues: [{ path: 'server.tokenizer', message: 'tokenizer could not be loaded', value: path }],
      cause,
    });
  }
}

/**
 * `serve` and `train` send token ids to the trainer, so they need the model's tokenizer: checked
 * (and loaded) before anything starts, instead of failing after the first group.
 */
export async function requireTokenizer(
  config: ShearsConfig,
  cwd: string,
  command: 'serve' | 'train',
): Promise<TokenizerV1> {
  if (!config.server.tokenizer) {
    throw new ConfigError({
      message: `server.tokenizer: \`shears ${command}\` sends each rollout to the trainer as token ids, so it needs the tokenizer of the model being trained: set server.tokenizer to the folder holding its tokenizer.json and tokenizer_config.json (e.g. --server.tokenizer ./models/Qwen3-8B, the folder a Hugging Face download of the model creates). \`shears process\` writes JSONL without one.`,
      issues: [{ path: 'server.tokenizer', message: `required by shears ${command}`, value: undefined }],
    });
  }
  return loadTokenizer(config.server.tokenizer, cwd);
}

function noLogprobsError(provider: string): ConfigError {
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

/**
 * A trainer that needs inference logprobs with a server that records none is refused before
 * anything starts. Built-in servers are known by id; a server from a plugin is checked by
 * `requireRecordedLogprobs` once it exists, still before any rollout.
 */
export function checkTrainerNeeds(config: ShearsConfig): void {
  if (!config.train.trainer?.needs_inference_logprobs) return;
  if (CHAT_SERVERS.includes(config.server.provider)) throw noLogprobsError(config.server.provider);
}

/** The same check on a created server: only a managed (token-in/token-out) one records logprobs. */
function requireRecordedLogprobs(config: ShearsConfig, server: ServerV1): void {
  if (!config.train.trainer?.needs_inference_logprobs) return;
  if (!isManagedServer(server)) throw noLogprobsError(config.server.provider);
}

/** How many trainer batches are waiting in the queue, from /status-env and /info. */
export function batchesAhead(status: { queue_size: number }, batchSize: number, groupSize: number): number {
  if (batchSize <= 0) return 0;
  return (status.queue_size * groupSize) / batchSize;
}

/**
 * How far this worker's rollouts run ahead of the trainer, in trainer batches: the groups queued
 * for it (/status-env), the batches already formed but not yet delivered (`GET /batch` forms
 * every batch the queue allows at once and /status-env stops counting them), and the groups this
 * worker is still running (they will be queued). Each of these is sampled before the trainer
 * takes the batches ahead of it, so each is off-policy by the time it is trained on.
 */
export function offPolicyAhead(options: {
  queueSize: number;
  /** The largest queued group (/status-env's max_group_size), when the API says. */
  maxGroupSize?: number;
  formedBatches: number;
  inFlightGroups: number;
  batchSize: number;
  groupSize: number;
}): { total: number; queued: number; formed: number; inFlight: number } {
  const { batchSize, groupSize } = options;
  if (batchSize <= 0) return { total: 0, queued: 0, formed: 0, inFlight: 0 };
  // /status-env counts the queue in units of the env's group size as it grew to its largest
  // queued group (a rollout of two sequences makes a group of 8 rollouts hold up to 16), so
  // the queue is that many sequences per unit, not env.group_size: counted by the registered
  // size, the queue looked half as long and records ran twice as far ahead as off_policy_limit.
  const unit = Math.max(groupSize, options.maxGroupSize ?? 0);
  const queued = (options.queueSize * unit) / batchSize;
  const inFlight = (options.inFlightGroups * groupSize) / batchSize;
  const formed = options.formedBatches;
  return { total: queued + formed + inFlight, queued, formed, inFlight };
}

function apiError(url: string, doing: string, error: unknown): TrajectoryApiError {
  const message = describeError(error).replace(/^Error: /, '');
  const unreachable = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET|ETIMEDOUT|EAI_AGAIN|timed out/.test(
    message,
  );
  return new TrajectoryApiError({
    url,
    message: `${doing} the trajectory API at ${url} failed: ${message}${unreachable ? '. Is it running? Start one with `shears api` (or let `shears train` start it), or point --url / api.url at it' : ''}`,
    cause: error,
  });
}

/** Per rollout, the per-step advantages of run.advantage's per-step credit (null: no advantage). */
function perStepAdvantagesOf(
  record: ScoredGroupRecord,
  settings: PerStepAdvantage,
): (number[] | null)[] | undefined {
  if (record.dropped || record.partial) return undefined;
  return record.rollouts.map((rollout, index) => {
    const advantage = record.advantages[index];
    if (advantage === null || advantage === undefined) return null;
    return stepCredit(rollout.steps, advantage, {
      gamma: settings.gamma,
      toolCallBonus: settings.tool_call_bonus,
      reasoningBonus: settings.reasoning_bonus,
      minReasoningChars: settings.min_reasoning_chars,
      ...(settings.max_bonus !== undefined ? { maxBonus: settings.max_bonus } : {}),
    }).advantages;
  });
}

/** The longest token sequence of a wire group. */
function longestSequence(data: { tokens: number[][] }): number {
  return data.tokens.reduce((longest, tokens) => Math.max(longest, tokens.length), 0);
}

export async function runServeLoop(
  context: CommandContext,
  options: {
    maxGroups?: number;
    link?: AtroposLink;
    writer?: JsonlWriter;
    /** The run metrics stream (shared by `train`'s workers); `worker` labels this loop's rows. */
    metrics?: RunMetrics;
    worker?: string;
    /** The improvement loop (config `loop`), shared by `train`'s workers. */
    loop?: LoopController;
  } = {},
): Promise<ServeResult> {
  const { config } = context;
  const tokenizer = await requireTokenizer(config, context.io.cwd, 'serve');
  const link =
    options.link ??
    createAtroposLink({
      url: config.api.url,
      authToken: config.api.auth_token,
      pollMs: config.api.poll_ms,
      signal: context.signal,
      logger: context.logger,
    });
  // First contact before the env starts: an API that is not there is the first thing to know.
  let info: { batch_size: number; max_token_len?: number };
  try {
    info = await link.info(context.drain);
  } catch (error) {
    if (context.drain.aborted) return emptyResult();
    throw apiError(link.url, 'reaching', error);
  }
  const runtime = await startRuntime(context, {
    totalGroups: options.maxGroups,
    label: 'group',
  });
  const { control, progress } = runtime;
  const result: ServeResult = emptyResult();
  const notSent = (record: Parameters<typeof progress.groupFinished>[0], reason: string) => {
    result.notSent[reason] = (result.notSent[reason] ?? 0) + 1;
    progress.groupFinished(record, { status: `→ not sent: ${reason}` });
  };
  try {
    requireRecordedLogprobs(config, runtime.server);
    let waitingNoted = false;
    let envId: number;
    try {
      envId = await link.registerEnv({
        name: config.env.name,
        groupSize: config.env.group_size,
        maxTokenLength: config.env.max_token_length,
        signal: control.drain,
        onWait: () => {
          if (!waitingNoted) progress.note(`waiting for the trainer to start (${link.url})`);
          waitingNoted = true;
        },
      });
    } catch (error) {
      if (control.stopping) return result;
      throw apiError(link.url, 'registering with', error);
    }
    progress.note(`registered with ${link.url} as env ${envId}`);
    info = await link.info(control.drain).catch(() => info);
    let batchSize = info.batch_size;
    const trainerMaxTokens = info.max_token_len ?? -1;
    let started = 0;
    let paused = false;
    let fallbackNoted = false;
    // Groups of this process's workers that were posted or dropped (`started` counts the others).
    let finished = 0;
    const window = Math.max(1, Math.ceil(config.run.concurrency / config.env.group_size));
    const worker = async () => {
      while (!control.stopping && (options.maxGroups === undefined || started < options.maxGroups)) {
        // Groups finished before /status-env is asked were posted before it answered: the queue
        // (or a formed batch) holds them. Every group finished later counts as still being
        // rolled out, so a group posted while the reads are in flight is counted twice at worst,
        // never missed.
        const finishedBefore = finished;
        const status = await link.status(control.drain);
        options.metrics?.trainerStatus(status);
        options.loop?.status(status);
        if (batchSize <= 0) batchSize = (await link.info(control.drain)).batch_size;
        // No trainer batch size known (none registered, or after a reset): api.batch_size stands in.
        if (batchSize <= 0 && !fallbackNoted) {
          fallbackNoted = true;
          progress.note(
            `the API reports no trainer batch size; pausing by api.batch_size ${config.api.batch_size} until it does`,
          );
        }
        // Read after /status-env: a batch formed between the two reads is counted twice (a pause
        // one poll longer), never missed; one delivered meanwhile is the trainer's already.
        const formedBatches = (await link.formedBatches?.(control.drain)) ?? 0;
        const ahead = offPolicyAhead({
          queueSize: status.queue_size,
          maxGroupSize: status.max_group_size,
          formedBatches,
          inFlightGroups: started - finishedBefore,
          batchSize: batchSize > 0 ? batchSize : config.api.batch_size,
          groupSize: config.env.group_size,
        });
        if (ahead.total >= config.api.off_policy_limit) {
          if (!paused) {
            result.pauses++;
            progress.note(
              `paused: ${ahead.total.toFixed(1)} batches queued ahead of the trainer (off_policy_limit ${config.api.off_policy_limit}, step ${status.current_step}: ${ahead.queued.toFixed(1)} in the queue, ${ahead.formed} formed, ${ahead.inFlight.toFixed(1)} being rolled out)`,
            );
          }
          paused = true;
          // The first Ctrl-C (drain) ends the pause; the loop then sees `stopping`.
          await sleep(config.api.poll_ms, control.drain).catch(ignoreAborted);
          continue;
        }
        if (paused) progress.note(`resumed at trainer step ${status.current_step}`);
        paused = false;
        // Checked again after the await: the other workers may have taken the last slots meanwhile.
        if (options.maxGroups !== undefined && started >= options.maxGroups) break;
        if (control.stopping) break;
        // Counted (synchronously with the check) from before nextItem until the group is posted
        // or dropped: the other workers' pacing sees it at once.
        started++;
        try {
          if (!(await runGroup(status))) break;
        } finally {
          finished++;
        }
      }
    };
    /** Runs, scores and posts one group; false when this worker ends (no more items, or stopped while posting). */
    const perStep = perStepAdvantage(config);
    const post = async (data: ScoredData, record: ScoredGroupRecord, what: string): Promise<boolean> => {
      try {
        // Finished groups are still posted while draining; only the hard stop interrupts a post.
        const { buffered } = await link.postScoredData(data, control.signal);
        if (buffered) {
          result.bufferedByApi++;
          if (result.bufferedByApi === 1)
            progress.note(
              `the API buffered ${what} of ${data.tokens.length} sequences instead of queueing it (env.group_size ${config.env.group_size}): Atropos holds a group smaller than the env's group size until buffered groups sum to that size, so it may never reach the trainer (a rollout left out of the group, e.g. one without a score, makes it smaller); counted in the summary`,
            );
        }
        return true;
      } catch (error) {
        if (control.signal.aborted) {
          notSent(record, 'stopped while posting');
          return false;
        }
        throw apiError(link.url, `posting ${what} (${result.groupsSent} sent so far) to`, error);
      }
    };
    const runGroup = async (status: TrainerStatus): Promise<boolean> => {
      let drawn: DrawnItem | null;
      if (options.loop) drawn = await options.loop.next(runtime.env);
      else {
        const item = await runtime.env.nextItem();
        drawn = item ? { item, source: 'train' } : null;
      }
      if (!drawn) return false;
      let record =
        drawn.source === 'capability'
          ? await options.loop!.runCapability(drawn.item, config.env.group_size)
          : await runOneGroup(runtime, context, drawn.item, config.env.group_size);
      const loopFields = options.loop?.loopOf(drawn);
      const stepAdvantages = perStep ? perStepAdvantagesOf(record, perStep) : undefined;
      if ((loopFields && Object.keys(loopFields).length > 0) || stepAdvantages)
        record = { ...record, loop: { ...loopFields, ...(stepAdvantages ? { stepAdvantages } : {}) } };
      options.loop?.finished(record, drawn);
      result.scoredRollouts += record.rollouts.filter((rollout) => rollout.reward !== null).length;
      options.writer?.write(record);
      options.metrics?.group(record, {
        ...(options.worker ? { worker: options.worker } : {}),
        trainerAtStart: status,
        ...(loopFields && Object.keys(loopFields).length > 0 ? { loop: loopFields } : {}),
      });
      if (record.dropped) {
        notSent(record, droppedLabel(record.dropped));
        return true;
      }
      // Same redaction as the JSONL and HTML: secrets never reach the trainer, neither in
      // `messages` nor in tokens (phase-1 tokens are made from the redacted transcript).
      const redacted = context.redact.value(record);
      let data: ScoredData | null;
      try {
        data = scoredDataFromRecord(redacted, {
          envId,
          tokenizer,
          includeMessages: true,
          ...(stepAdvantages ? { stepAdvantages } : {}),
        });
      } catch (error) {
        if (!(error instanceof StepCreditMismatchError)) throw error;
        notSent(record, `per-step credit: ${error.message}`);
        return true;
      }
      if (!data) {
        notSent(record, 'no scored rollout');
        return true;
      }
      const longest = longestSequence(data);
      // As Atropos' BaseEnv: a sequence the trainer cannot take is not sent.
      if (trainerMaxTokens > 0 && longest >= trainerMaxTokens) {
        notSent(
          record,
          `a sequence of ${longest} tokens; the trainer's max_token_len is ${trainerMaxTokens}`,
        );
        return true;
      }
      if (longest > config.env.max_token_length) {
        notSent(
          record,
          `a sequence of ${longest} tokens is longer than env.max_token_length ${config.env.max_token_length}`,
        );
        return true;
      }
      // A group with fewer sequences than env.group_size (a rollout without a score is left out)
      // is still whole, but Atropos's API buffers such a group until buffered groups of this env
      // sum to its group size: it waited there up to 7 optimiser steps, or for good. Sent without
      // an env id, the API queues it at once (Atropos: a group without env_id goes straight to
      // the queue); /status-env still counts it, among the groups competing for the batch.
      if (data.tokens.length < config.env.group_size) {
        result.sentWithoutEnvId++;
        if (result.sentWithoutEnvId === 1)
          progress.note(
            `a group of ${data.tokens.length} sequences (fewer than env.group_size ${config.env.group_size}: rollouts without a score are left out) is sent without env_id, so that the API queues it instead of holding it in its env buffer; counted in the summary`,
          );
        data = { ...data, env_id: null };
      }
      if (!(await post(data, record, 'a group'))) return false;
      result.groupsSent++;
      progress.groupFinished(record, { status: '→ sent' });
      // Replays due now (loop.replay), so that they stay `share` of all groups sent.
      for (const replay of options.loop?.sent(redacted, data) ?? []) {
        if (!(await post({ ...replay.data, env_id: envId }, replay.record, 'a replayed group'))) return false;
        result.replaysSent++;
        options.writer?.write(replay.record);
        options.metrics?.group(replay.record, {
          ...(options.worker ? { worker: options.worker } : {}),
          trainerAtStart: status,
          loop: replay.loop,
        });
        progress.note(`replayed group ${replay.loop.replayOf} (task ${replay.record.taskId}) → sent`);
      }
      return true;
    };
    // Every worker ends before the summary is printed: no progress line after it.
    const settled = await Promise.allSettled(Array.from({ length: window }, worker));
    const failed = settled.find((entry) => entry.status === 'rejected');
    // Stopping (Ctrl-C, or `train` shutting down) interrupts requests in flight; that is not a failure.
    if (failed && !(control.stopping && !TrajectoryApiError.isInstance(failed.reason))) throw failed.reason;
  } finally {
    await runtime.close();
    result.stoppedBy = control.stoppedBy;
    result.failures = control.failures();
  }
  return result;
}

function emptyResult(): ServeResult {
  return {
    groupsSent: 0,
    replaysSent: 0,
    notSent: {},
    pauses: 0,
    scoredRollouts: 0,
    stoppedBy: undefined,
    failures: [],
    bufferedByApi: 0,
    sentWithoutEnvId: 0,
  };
}

/** `sent 5 groups to URL; not sent: 2 (1 all scores equal, 1 no scored rollout); 1 pause`. */
type SentCounts = Pick<ServeResult, 'groupsSent' | 'replaysSent' | 'bufferedByApi' | 'sentWithoutEnvId'>;

/** What was sent ("N groups and M replayed groups") and how the API took it: serve's and train's summaries. */
export function describeSent(counts: SentCounts): { groups: string; notes: string } {
  return {
    groups: `${counts.groupsSent} groups${counts.replaysSent ? ` and ${counts.replaysSent} replayed groups` : ''}`,
    notes: `${counts.bufferedByApi ? ` (${counts.bufferedByApi} of them buffered by the API, not queued)` : ''}${counts.sentWithoutEnvId ? ` (${counts.sentWithoutEnvId} smaller than env.group_size, sent without env_id)` : ''}`,
  };
}

export function formatServeResult(result: ServeResult, url: string): string {
  const notSentTotal = Object.values(result.notSent).reduce((sum, count) => sum + count, 0);
  const reasons = Object.entries(result.notSent)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, count]) => `${count} ${reason}`)
    .join(', ');
  const sent = describeSent(result);
  return `sent ${sent.groups} to ${url}${sent.notes}; not sent: ${notSentTotal}${notSentTotal ? ` (${reasons})` : ''}; ${result.pauses} pause${result.pauses === 1 ? '' : 's'}`;
}
