// The queue semantics of the trajectory API, without HTTP: trainer and env registration,
// env status, ingest (Atropos's buffering, group commit, idempotency, limits), batch formation
// and hand-out, reset and the counters behind /metrics. Every method takes validated values and
// returns plain values; the HTTP transport (http-transport.ts) only parses, routes and writes.
import { gunzip } from 'node:zlib';
import { computeEnvStatus, planBatch, planBatchWithMinimums, usesMinimumAllocations } from './batching.js';
import {
  type FormedBatch,
  type StoredPayload,
  type TrajectoryStore,
  withSuffix,
} from './trajectory-store.js';
import type { DecodedGroup } from './wire-decode.js';

export interface TrajectoryQueueSettings {
  maxQueuedGroups: number;
  maxQueuedBytes: number;
  idempotencyKeyLimit: number;
  splitGroups: boolean;
  batchOrder: 'fifo' | 'lifo';
  /** Clock in milliseconds (env records). */
  now: () => number;
  /** Random source for trainer uuids. */
  randomBytes: (size: number) => Uint8Array;
  debug?: (message: string) => void;
}

interface TrainerRegistration {
  wandb_group: string;
  wandb_project: string;
  batch_size: number;
  max_token_len: number;
  checkpoint_dir: string;
  save_checkpoint_interval: number;
  starting_step: number;
  num_steps: number;
}

interface EnvRegistration {
  max_token_length: number;
  desired_name: string;
  weight: number;
  group_size: number;
  min_batch_allocation: number | null;
}

type EnvRegistrationResult =
  | { status: 'wait for trainer to start' }
  | {
      status: 'success';
      env_id: number;
      wandb_name: string;
      checkpoint_dir: string | null;
      starting_step: number;
      checkpoint_interval: number | null;
      num_steps: number;
    };

/** What an ingest answers: the response text, and whether it is a replay of an earlier POST. */
export interface IngestResult {
  text: string;
  replayed: boolean;
}

/** The queue is at its limit: the caller should answer 429. */
export class QueueFullError extends Error {
  constructor(
    readonly storedGroups: number,
    readonly storedBytes: number,
  ) {
    super(`Queue full (${storedGroups} groups, ${storedBytes} bytes stored); retry later`);
  }
}

/** A formed batch handed to one trainer request; see `TrajectoryQueue.leaseBatch`. */
export interface BatchLease {
  readonly batch: FormedBatch;
  /**
   * The stored groups as JSON bytes (all 14 keys), in batch order, each in two pieces that
   * concatenate to its JSON text (see `withSuffix`).
   */
  groups(): Promise<[Buffer, Buffer][]>;
  /** Whether the batch is still formed (a /reset_data may have removed it). */
  current(): boolean;
  /** One-row commit just before the last response bytes go out (see docs/atropos-differences.md). */
  markDelivered(): void;
  /** The last bytes never reached the trainer: serve the batch again. */
  unmarkDelivered(): void;
  /** The whole response was flushed: the groups leave the store. */
  complete(): void;
  /** Ends the lease (whatever happened); an undelivered batch is available again. */
  release(): void;
}

interface QueueCounters {
  groupsReceived: number;
  sequencesReceived: number;
  batchesServed: number;
  sequencesServed: number;
  idempotentReplays: number;
  rejected: Map<string, number>;
}

const EMPTY_LATEST =
  '{"tokens":[],"masks":[],"scores":[],"advantages":[],"ref_logprobs":[],"generation_params":[],"inference_logprobs":[],"messages":[],"images":[]}';

function trainerUuid(random: (size: number) => Uint8Array): string {
  const bytes = random(16);
  // uuid4 layout: version nibble 4, RFC 4122 variant — what Python's `uuid4().int` yields.
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  return BigInt(`0x${Buffer.from(bytes).toString('hex')}`).toString();
}

interface PendingIngest {
  groups: DecodedGroup[];
  idempotencyKey: string | undefined;
  respond: (outcome: (number | undefined)[]) => string;
  settle: (result: IngestResult | Error) => void;
}

export class TrajectoryQueue {
  readonly counters: QueueCounters = {
    groupsReceived: 0,
    sequencesReceived: 0,
    batchesServed: 0,
    sequencesServed: 0,
    idempotentReplays: 0,
    rejected: new Map(),
  };
  private readonly leased = new Set<FormedBatch>();
  private pendingIngests: PendingIngest[] = [];

  constructor(
    readonly store: TrajectoryStore,
    readonly settings: TrajectoryQueueSettings,
  ) {}

  /** Counts a refused request by reason (for /metrics). */
  reject(reason: string): void {
    this.counters.rejected.set(reason, (this.counters.rejected.get(reason) ?? 0) + 1);
  }

  /** POST /register: initialises the run only when no trainer is registered (a second one does not reset). Returns the trainer uuid (a 128-bit integer, as decimal digits). */
  register(input: TrainerRegistration): { uuid: string } {
    const run = this.store.run;
    this.store.transaction(() => {
      if (!run.registered) {
        run.registered = true;
        run.group = input.wandb_group;
        run.project = input.wandb_project;
        run.batchSize = input.batch_size;
        run.maxTokenLen = input.max_token_len;
        run.checkpointDir = input.checkpoint_dir;
        run.saveCheckpointInterval = input.save_checkpoint_interval;
        run.step = input.starting_step;
        run.numSteps = input.num_steps;
        run.started = false;
        run.envs = [];
      }
      run.requesters++;
    });
    return { uuid: trainerUuid(this.settings.randomBytes) };
  }

  /** POST /register-env: nothing is registered until the trainer's first GET /batch. */
  registerEnv(input: EnvRegistration): EnvRegistrationResult {
    const run = this.store.run;
    if (!run.started) return { status: 'wait for trainer to start' };
    const envId = run.envs.length;
    const wandbName = `${input.desired_name}_${run.envs.filter((env) => env.desired_name === input.desired_name).length}`;
    this.store.transaction(() => {
      run.envs.push({
        max_context_len: input.max_token_length,
        weight: input.weight,
        desired_name: input.desired_name,
        real_name: wandbName,
        registered_id: envId,
        last_update: this.settings.now() / 1000,
        connected: true,
        min_batch_allocation: input.min_batch_allocation,
        group_size: input.group_size,
        registered_group_size: input.group_size,
      });
    });
    return {
      status: 'success',
      env_id: envId,
      wandb_name: wandbName,
      checkpoint_dir: run.checkpointDir,
      starting_step: run.step,
      checkpoint_interval: run.saveCheckpointInterval,
      num_steps: run.numSteps,
    };
  }

  /** POST /disconnect-env. (A negative id is a failure, not Python's index from the end.) */
  disconnectEnv(envId: number): { status: 'success' } | { status: 'failure'; error: string } {
    const env = envId >= 0 ? this.store.run.envs[envId] : undefined;
    if (!env) return { status: 'failure', error: 'list index out of range' };
    this.store.transaction(() => void (env.connected = false));
    return { status: 'success' };
  }

  wandbInfo(): { group: string | null; project: string | null } {
    return { group: this.store.run.group, project: this.store.run.project };
  }

  info(): { batch_size: number; max_token_len: number } {
    return { batch_size: this.store.run.batchSize, max_token_len: this.store.run.maxTokenLen };
  }

  status(): { current_step: number; queue_size: number } {
    return { current_step: this.store.run.step, queue_size: this.store.queue.length };
  }

  /** GET /status-env; throws `EnvStatusError` for an unknown env or a zero weight total. Records the env's grown group size, as Atropos does. */
  statusEnv(envId: number): ReturnType<typeof computeEnvStatus> {
    const run = this.store.run;
    return this.store.transaction(() =>
      computeEnvStatus({
        envId,
        envs: run.envs,
        queue: this.store.queue,
        batchSize: run.batchSize,
        currentStep: run.step,
      }),
    );
  }

  /** The answer stored for a retried POST with this idempotency key, once it is durable. */
  async replay(idempotencyKey: string): Promise<string | undefined> {
    const previous = this.store.idempotentResponse(idempotencyKey);
    if (previous === undefined) return undefined;
    // The first attempt may be committed but not yet fsynced.
    await this.store.durable();
    this.counters.idempotentReplays++;
    return previous;
  }

  /** Throws `QueueFullError` when the stored groups or bytes are at their limit. */
  admit(): void {
    const { storedGroups, storedBytes } = this.store;
    if (storedGroups >= this.settings.maxQueuedGroups || storedBytes >= this.settings.maxQueuedBytes) {
      this.reject('queue_full');
      throw new QueueFullError(storedGroups, storedBytes);
    }
  }

  /**
   * Stores decoded groups (POST /scored_data is one, /scored_data_list many) and resolves with
   * the answer once it is durable. Group commit: submissions arriving in the same event-loop
   * turn share one transaction, answered after one fsync on the libuv pool, so the loop keeps
   * reading bodies and committing the next flush meanwhile.
   */
  async ingest(
    groups: DecodedGroup[],
    options: { kind: 'single' | 'list'; idempotencyKey?: string },
  ): Promise<IngestResult> {
    const { kind } = options;
    const respond = (outcome: (number | undefined)[]) => {
      if (kind === 'single') {
        const buffered = outcome[0];
        return buffered === undefined
          ? '{"status":"received"}'
          : JSON.stringify({ status: 'buffered', buffer_size: buffered });
      }
      const result: Record<string, unknown> = { status: 'received', groups_processed: outcome.length };
      const bufferedOnes = outcome.filter((item) => item !== undefined);
      if (bufferedOnes.length > 0) {
        result.buffered = bufferedOnes.length;
        result.last_buffer_size = bufferedOnes[bufferedOnes.length - 1];
      }
      return JSON.stringify(result);
    };
    const committed = await new Promise<IngestResult>((resolve, reject) => {
      this.pendingIngests.push({
        groups,
        idempotencyKey: options.idempotencyKey,
        respond,
        settle: (result) => (result instanceof Error ? reject(result) : resolve(result)),
      });
      if (this.pendingIngests.length === 1) setImmediate(() => this.flushIngests());
    });
    if (committed.replayed) this.counters.idempotentReplays++;
    else
      for (const group of groups) {
        this.counters.groupsReceived++;
        this.counters.sequencesReceived += group.size;
      }
    return committed;
  }

  private flushIngests(): void {
    const items = this.pendingIngests;
    this.pendingIngests = [];
    const results: (IngestResult | Error)[] = [];
    try {
      this.store.transactionUnsynced(() => {
        for (const item of items) {
          try {
            // A retry may have raced the first attempt while both were decoding.
            const previous =
              item.idempotencyKey === undefined
                ? undefined
                : this.store.idempotentResponse(item.idempotencyKey);
            if (previous !== undefined) results.push({ text: previous, replayed: true });
            else
              results.push({
                text: this.store.ingest(item.groups, {
                  idempotencyKey: item.idempotencyKey,
                  idempotencyLimit: this.settings.idempotencyKeyLimit,
                  respond: item.respond,
                }),
                replayed: false,
              });
          } catch (error) {
            results.push(error instanceof Error ? error : new Error(String(error)));
          }
        }
      });
    } catch (error) {
      for (const item of items) item.settle(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    this.store.durable().then(
      () => {
        for (const [index, item] of items.entries()) item.settle(results[index] as IngestResult | Error);
      },
      (error: unknown) => {
        for (const item of items) item.settle(error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  /** Groups waiting in env buffers (undersized groups not yet combined). */
  bufferedGroups(): number {
    let count = 0;
    for (const list of this.store.buffers.values()) count += list.length;
    return count;
  }

  /**
   * GET /batch: `unregistered` before any /register; otherwise marks the trainer started, forms
   * every batch the queue allows (the step advances by that count) when none is waiting, and
   * leases the oldest (or, with batchOrder `lifo`, the newest) formed batch not already being
   * sent; `none` when there is none.
   */
  leaseBatch(): { kind: 'unregistered' } | { kind: 'none' } | { kind: 'batch'; lease: BatchLease } {
    const run = this.store.run;
    if (!run.registered) return { kind: 'unregistered' };
    if (!run.started) this.store.transaction(() => void (run.started = true));
    let available = this.store.formed.filter((batch) => !this.leased.has(batch));
    if (available.length === 0) {
      const minimums = usesMinimumAllocations(run.envs);
      const options = { splitGroups: this.settings.splitGroups };
      const formed = this.store.formBatches((queue) =>
        minimums
          ? planBatchWithMinimums(queue, run.batchSize, run.envs, options)
          : planBatch(queue, run.batchSize, options),
      );
      if (formed > 0) this.settings.debug?.(`formed ${formed} batch(es); step is now ${run.step}`);
      available = this.store.formed.filter((batch) => !this.leased.has(batch));
    }
    const batch = this.settings.batchOrder === 'fifo' ? available[0] : available[available.length - 1];
    if (!batch) return { kind: 'none' };
    this.leased.add(batch);
    const store = this.store;
    const current = () => store.formed.includes(batch);
    return {
      kind: 'batch',
      lease: {
        batch,
        groups: () => readGroups(store.readBatch(batch)),
        current,
        markDelivered: () => store.markDelivered(batch),
        unmarkDelivered: () => {
          if (current()) store.unmarkDelivered(batch);
        },
        complete: () => {
          if (current()) store.completeBatch(batch);
          this.counters.batchesServed++;
          this.counters.sequencesServed += batch.groups.reduce((sum, group) => sum + group.size, 0);
        },
        release: () => void this.leased.delete(batch),
      },
    };
  }

  /** GET /latest_example: the last queued group (kept across /reset_data), or Atropos's empty example. */
  latestExample(): string {
    return this.store.latestText() ?? EMPTY_LATEST;
  }

  /** GET /reset_data. */
  reset(): void {
    this.store.reset();
    this.leased.clear();
  }
}

// Stored payloads as JSON bytes: gzip ones are inflated on the libuv pool, off the event loop,
// into one buffer sized by the gzip trailer (instead of 16 KiB pieces joined at the end).
function readGroups(rows: StoredPayload[]): Promise<[Buffer, Buffer][]> {
  return Promise.all(
    rows.map(
      (row) =>
        new Promise<[Buffer, Buffer]>((resolve, reject) => {
          if (row.encoding !== 1) {
            resolve(withSuffix(row.payload, row.suffix));
            return;
          }
          const size = row.payload.length >= 18 ? row.payload.readUInt32LE(row.payload.length - 4) : 0;
          gunzip(
            row.payload,
            { chunkSize: Math.max(16 * 1024, Math.min(size + 64, 64 * 1024 * 1024)) },
            (error, text) => (error ? reject(error) : resolve(withSuffix(text, row.suffix))),
          );
        }),
    ),
  );
}
