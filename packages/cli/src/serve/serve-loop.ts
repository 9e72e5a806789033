// The env worker loop behind `shears serve` and `shears train`: check that the trajectory API
// answers, register with it, then run groups and post them, pausing while the queue this env
// sees (GET /status-env, its own groups plus those competing for the same batches) is more than
// `off_policy_limit` batches ahead of the trainer. Every group, sent or not, goes to the run's
// sinks first (its JSONL, the configured sinks); then to the trajectory API through the worker's
// own sink, which says whether it took the group. A group is reported as sent only once the API
// acknowledged it, and every group not sent is counted under the reason it was not.
import { isManagedServer, type ScoredGroupRecord, type TokenizerV1 } from '@shears/core';
import { ignoreAborted, sleep } from '@shears/core/http';
import { stepCredit } from '@shears/grpo';
import type { DrawnItem, LoopController } from '../loop/loop-controller.js';
import type { GroupLoop, TrainerStatus } from '../metrics/run-metrics.js';
import type { RunOutput } from '../output/run-output.js';
import { noLogprobsError } from '../plan/feed-plan.js';
import type { PerStepAdvantage } from '../plan/loop-plan.js';
import type { RunPlan } from '../plan/run-plan.js';
import { emptyTally, tallyGroup } from '../progress/progress.js';
import { createWaitNote, formatWait } from '../progress/wait-note.js';
import type { Runtime } from '../runtime/runtime.js';
import { type AtroposLink, apiError, TrajectoryApiError } from './atropos-link.js';
import { offPolicyAhead } from './pacing.js';
import type { ServeResult } from './serve-result.js';
import { createTrajectoryApiSink, PostStoppedError } from './trajectory-api-sink.js';

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

export async function runServeLoop(
  plan: RunPlan,
  options: {
    /** The worker's runtime; undefined when the run stopped before the API answered. */
    runtime: Runtime | undefined;
    link: AtroposLink;
    /** The API's first answer (reachApi); undefined when the run stopped before it came. */
    info: { batch_size: number; max_token_len?: number } | undefined;
    /** The run's output: every group goes to its sinks, its metrics count them (shared by `train`'s workers). */
    output: Pick<RunOutput, 'write' | 'metrics'>;
    tokenizer: TokenizerV1;
    /** Labels this loop's metrics rows (`train`'s workers). */
    worker?: string;
    /** The improvement loop (config `loop`), shared by `train`'s workers. */
    loop?: LoopController;
  },
): Promise<ServeResult> {
  const { env } = plan;
  const feed = plan.feed!;
  const { maxGroups } = feed;
  const { output, loop, link, runtime } = options;
  const result: ServeResult = {
    groupsSent: 0,
    replaysSent: 0,
    notSent: {},
    pauses: 0,
    scoredRollouts: 0,
    stoppedBy: undefined,
    failures: [],
    bufferedByApi: 0,
    sentWithoutEnvId: 0,
    tally: emptyTally(),
  };
  if (!runtime || !options.info) return result;
  const first = options.info;
  const { control, progress } = runtime;
  const notSent = (record: ScoredGroupRecord, reason: string) => {
    result.notSent[reason] = (result.notSent[reason] ?? 0) + 1;
    progress.groupFinished(record, { status: `→ not sent: ${reason}` });
  };
  try {
    // A server from a plugin is known only now: only a managed (token-in/token-out) one records logprobs.
    if (feed.needsLogprobs && !isManagedServer(runtime.server)) throw noLogprobsError(plan.server.provider);
    // What this worker waits for (a trainer to register, the trainer to take batches) is said at
    // once and again every api.wait_note_ms.
    const waits = createWaitNote({ note: (text) => progress.note(text), everyMs: feed.api.waitNoteMs });
    let envId: number;
    try {
      envId = await link.registerEnv({
        name: env.name,
        groupSize: env.groupSize,
        maxTokenLength: env.maxTokenLength,
        signal: control.drain,
        onWait: () => waits.waiting(`a trainer to register with the trajectory API at ${link.url}`),
      });
    } catch (error) {
      if (control.stopping) return result;
      throw apiError(link.url, 'registering with', error);
    }
    const registerWait = waits.done();
    progress.note(
      `registered with ${link.url} as env ${envId}${registerWait === undefined ? '' : ` after waiting ${formatWait(registerWait)} for a trainer`}`,
    );
    const info = await link.info(control.drain).catch(() => first);
    let batchSize = info.batch_size;
    /**
     * A finished group (or a replay) with its loop fields and per-step credit, to the run's sinks
     * (redacted once, as every sink gets it: secrets never reach the trainer, neither in
     * `messages` nor in tokens) and its metrics; resolves with the redacted group.
     */
    const keep = async (
      record: ScoredGroupRecord,
      status: TrainerStatus,
      loopFields: GroupLoop | undefined,
    ) => {
      const stepAdvantages =
        feed.perStep && !loopFields?.replayOf ? perStepAdvantagesOf(record, feed.perStep) : undefined;
      const kept =
        !loopFields?.replayOf && ((loopFields && Object.keys(loopFields).length > 0) || stepAdvantages)
          ? { ...record, loop: { ...loopFields, ...(stepAdvantages ? { stepAdvantages } : {}) } }
          : record;
      const redacted = await output.write(kept);
      output.metrics.group(kept, {
        ...(options.worker ? { worker: options.worker } : {}),
        trainerAtStart: status,
        ...(loopFields && Object.keys(loopFields).length > 0 ? { loop: loopFields } : {}),
      });
      return { kept, redacted };
    };
    let started = 0;
    let paused = false;
    let fallbackNoted = false;
    // Groups of this process's workers that were posted or dropped (`started` counts the others).
    let finished = 0;
    const window = Math.max(1, Math.ceil(plan.control.concurrency / env.groupSize));
    const worker = async () => {
      while (!control.stopping && (maxGroups === undefined || started < maxGroups)) {
        // Groups finished before /status-env is asked were posted before it answered: the queue
        // (or a formed batch) holds them. Every group finished later counts as still being
        // rolled out, so a group posted while the reads are in flight is counted twice at worst,
        // never missed.
        const finishedBefore = finished;
        const status = await link.status(control.drain);
        output.metrics.trainerStatus(status);
        loop?.status(status);
        if (batchSize <= 0) batchSize = (await link.info(control.drain)).batch_size;
        // No trainer batch size known (none registered, or after a reset): api.batch_size stands in.
        if (batchSize <= 0 && !fallbackNoted) {
          fallbackNoted = true;
          progress.note(
            `the API reports no trainer batch size; pausing by api.batch_size ${feed.api.batchSize} until it does`,
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
          batchSize: batchSize > 0 ? batchSize : feed.api.batchSize,
          groupSize: env.groupSize,
        });
        if (ahead.total >= feed.api.offPolicyLimit) {
          const wasPaused = paused;
          if (!paused) {
            result.pauses++;
            progress.note(
              `paused: ${ahead.total.toFixed(1)} batches queued ahead of the trainer (off_policy_limit ${feed.api.offPolicyLimit}, step ${status.current_step}: ${ahead.queued.toFixed(1)} in the queue, ${ahead.formed} formed, ${ahead.inFlight.toFixed(1)} being rolled out)`,
            );
          }
          paused = true;
          waits.waiting(
            `the trainer to take batches: ${ahead.total.toFixed(1)} batches ahead of it (off_policy_limit ${feed.api.offPolicyLimit}), trainer at step ${status.current_step}`,
            { said: !wasPaused },
          );
          // The first Ctrl-C (drain) ends the pause; the loop then sees `stopping`.
          await sleep(feed.api.pollMs, control.drain).catch(ignoreAborted);
          continue;
        }
        const pausedFor = waits.done();
        if (paused)
          progress.note(
            `resumed at trainer step ${status.current_step}${pausedFor === undefined ? '' : ` after a pause of ${formatWait(pausedFor)}`}`,
          );
        paused = false;
        // Checked again after the await: the other workers may have taken the last slots meanwhile.
        if (maxGroups !== undefined && started >= maxGroups) break;
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
    /** Posts through the API sink; false when the hard stop cut the post short (the worker ends). */
    const deliver = async (post: () => Promise<void>, record: ScoredGroupRecord, what: string) => {
      try {
        await post();
        return true;
      } catch (error) {
        if (PostStoppedError.isInstance(error)) {
          notSent(record, 'stopped while posting');
          return false;
        }
        throw apiError(link.url, `posting ${what} (${result.groupsSent} sent so far) to`, error);
      }
    };
    /** Runs, scores and posts one group; false when this worker ends (no more items, or stopped while posting). */
    const runGroup = async (status: TrainerStatus): Promise<boolean> => {
      let drawn: DrawnItem | null;
      if (loop) drawn = await loop.next(runtime.env);
      else {
        const item = await runtime.env.nextItem();
        drawn = item ? { item, source: 'train' } : null;
      }
      if (!drawn) return false;
      let record =
        drawn.source === 'capability'
          ? await loop!.runCapability(drawn.item, env.groupSize)
          : await runtime.runGroup(drawn.item, env.groupSize);
      const loopFields = loop?.loopOf(drawn);
      loop?.finished(record, drawn);
      result.scoredRollouts += record.rollouts.filter((rollout) => rollout.reward !== null).length;
      const fresh = await keep(record, status, loopFields);
      record = fresh.kept;
      tallyGroup(result.tally, record);
      const { redacted } = fresh;
      let receipt: Awaited<ReturnType<typeof api.write>> | undefined;
      if (!(await deliver(async () => void (receipt = await api.write(redacted)), record, 'a group')))
        return false;
      if (!receipt?.accepted || !receipt.data) {
        notSent(record, receipt?.reason ?? 'not sent');
        return true;
      }
      result.groupsSent++;
      progress.groupFinished(record, { status: '→ sent' });
      // Replays due now (loop.replay), so that they stay `share` of all groups sent.
      for (const replay of loop?.sent(redacted, receipt.data) ?? []) {
        if (!(await deliver(() => api.resend(replay.data), replay.record, 'a replayed group'))) return false;
        result.replaysSent++;
        await keep(replay.record, status, replay.loop);
        progress.note(`replayed group ${replay.loop.replayOf} (task ${replay.record.taskId}) → sent`);
      }
      return true;
    };
    const api = createTrajectoryApiSink({
      link,
      envId,
      tokenizer: options.tokenizer,
      trainerMaxTokens: info.max_token_len ?? -1,
      maxTokenLength: env.maxTokenLength,
      groupSize: env.groupSize,
      signal: control.signal,
      note: (text) => progress.note(text),
    });
    // Every worker ends before the summary is printed: no progress line after it.
    const settled = await Promise.allSettled(Array.from({ length: window }, worker));
    const failed = settled.find((entry) => entry.status === 'rejected');
    result.bufferedByApi = api.counts.bufferedByApi;
    result.sentWithoutEnvId = api.counts.sentWithoutEnvId;
    // Stopping (Ctrl-C, or `train` shutting down) interrupts requests in flight; that is not a failure.
    if (failed && !(control.stopping && !TrajectoryApiError.isInstance(failed.reason))) throw failed.reason;
  } finally {
    result.stoppedBy = control.stoppedBy;
    result.failures = control.failures();
  }
  return result;
}
