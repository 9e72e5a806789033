// The trajectory API as a worker's trajectory sink: each group becomes the Atropos wire group
// (token ids from the model's tokenizer; per-step credit as per-token advantages) and is posted
// through the worker's link (retried, gzipped, with an Idempotency-Key). A group the trainer cannot
// take is left out with its reason in the receipt, as Atropos' BaseEnv leaves it out: dropped
// groups, no scored rollout, a sequence longer than the trainer's or the env's limit. A group
// smaller than env.group_size is sent without env_id, so the API queues it instead of holding it.
import {
  AbortedError,
  type ScoredData,
  type ScoredGroupRecord,
  ShearsError,
  type SinkWriteReceipt,
  type TokenizerV1,
  type TrajectorySinkV1,
} from '@shears/core';
import { StepCreditMismatchError, scoredDataFromRecord } from '@shears/grpo';
import { droppedLabel } from '../progress/progress.js';
import type { AtroposLink } from './atropos-link.js';

/** What the API did with a group it took: the wire group, and whether the API holds it in its env buffer. */
interface ApiReceipt extends SinkWriteReceipt {
  /** The wire group sent (`accepted`), for the replay store. */
  data?: ScoredData;
}

interface TrajectoryApiSink extends TrajectorySinkV1 {
  write(group: ScoredGroupRecord, options?: { signal?: AbortSignal }): Promise<ApiReceipt>;
  /** Posts a wire group again (a replay: its rollouts ran earlier), as this env. */
  resend(data: ScoredData, options?: { signal?: AbortSignal }): Promise<void>;
  /** Groups the API acknowledged but buffered; groups sent without env_id (smaller than env.group_size). */
  readonly counts: { bufferedByApi: number; sentWithoutEnvId: number };
}

/** A post cut short by the run's hard stop: the group was not sent. */
export class PostStoppedError extends ShearsError {
  constructor(cause: unknown) {
    super('stopped while posting', { code: 'SHEARS_POST_STOPPED', cause });
  }
  static override isInstance(error: unknown): error is PostStoppedError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_POST_STOPPED';
  }
}

/** The longest token sequence of a wire group. */
function longestSequence(data: { tokens: number[][] }): number {
  return data.tokens.reduce((longest, tokens) => Math.max(longest, tokens.length), 0);
}

export function createTrajectoryApiSink(options: {
  link: AtroposLink;
  envId: number;
  tokenizer: TokenizerV1;
  /** The trainer's longest sequence (/info max_token_len); -1: none known. */
  trainerMaxTokens: number;
  /** env.max_token_length. */
  maxTokenLength: number;
  /** env.group_size. */
  groupSize: number;
  /** Only the hard stop interrupts a post: finished groups are still posted while draining. */
  signal: AbortSignal;
  /** Said once each: the first group buffered by the API, the first sent without env_id. */
  note: (text: string) => void;
}): TrajectoryApiSink {
  const { link, groupSize } = options;
  const counts = { bufferedByApi: 0, sentWithoutEnvId: 0 };
  let closed = false;
  const post = async (data: ScoredData, what: string) => {
    if (closed)
      throw new ShearsError('trajectory API sink: write after close', { code: 'SHEARS_SINK_CLOSED' });
    let buffered: boolean;
    try {
      ({ buffered } = await link.postScoredData(data, options.signal));
    } catch (error) {
      if (options.signal.aborted) throw new PostStoppedError(error);
      throw error;
    }
    if (!buffered) return;
    counts.bufferedByApi++;
    if (counts.bufferedByApi === 1)
      options.note(
        `the API buffered ${what} of ${data.tokens.length} sequences instead of queueing it (env.group_size ${groupSize}): Atropos holds a group smaller than the env's group size until buffered groups sum to that size, so it may never reach the trainer (a rollout left out of the group, e.g. one without a score, makes it smaller); counted in the summary`,
      );
  };
  return {
    specificationVersion: 'v1',
    id: 'trajectory-api',
    counts,
    async write(record, writeOptions = {}) {
      if (writeOptions.signal?.aborted) throw new AbortedError({ cause: writeOptions.signal.reason });
      if (record.dropped) return { accepted: false, reason: droppedLabel(record.dropped) };
      let data: ScoredData | null;
      try {
        data = scoredDataFromRecord(record, {
          envId: options.envId,
          tokenizer: options.tokenizer,
          includeMessages: true,
          ...(record.loop?.stepAdvantages ? { stepAdvantages: record.loop.stepAdvantages } : {}),
        });
      } catch (error) {
        if (!(error instanceof StepCreditMismatchError)) throw error;
        return { accepted: false, reason: `per-step credit: ${error.message}` };
      }
      if (!data) return { accepted: false, reason: 'no scored rollout' };
      const longest = longestSequence(data);
      // As Atropos' BaseEnv: a sequence the trainer cannot take is not sent.
      if (options.trainerMaxTokens > 0 && longest >= options.trainerMaxTokens)
        return {
          accepted: false,
          reason: `a sequence of ${longest} tokens; the trainer's max_token_len is ${options.trainerMaxTokens}`,
        };
      if (longest > options.maxTokenLength)
        return {
          accepted: false,
          reason: `a sequence of ${longest} tokens is longer than env.max_token_length ${options.maxTokenLength}`,
        };
      // A group with fewer sequences than env.group_size (a rollout without a score is left out)
      // is still whole, but Atropos's API buffers such a group until buffered groups of this env
      // sum to its group size: it waited there up to 7 optimiser steps, or for good. Sent without
      // an env id, the API queues it at once (Atropos: a group without env_id goes straight to
      // the queue); /status-env still counts it, among the groups competing for the batch.
      if (data.tokens.length < groupSize) {
        counts.sentWithoutEnvId++;
        if (counts.sentWithoutEnvId === 1)
          options.note(
            `a group of ${data.tokens.length} sequences (fewer than env.group_size ${groupSize}: rollouts without a score are left out) is sent without env_id, so that the API queues it instead of holding it in its env buffer; counted in the summary`,
          );
        data = { ...data, env_id: null };
      }
      await post(data, 'a group');
      return { accepted: true, data };
    },
    async resend(data) {
      await post({ ...data, env_id: options.envId }, 'a replayed group');
    },
    async close() {
      closed = true;
    },
  };
}
