// The trajectory API's queue semantics without HTTP: a real SQLite store on disk, groups
// decoded by the real wire decoder, every answer as the transport would send it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { TrajectoryApiDatabaseError, TrajectoryApiLockedError } from './api-errors.js';
import { EnvStatusError } from './batching.js';
import { QueueFullError, TrajectoryQueue, type TrajectoryQueueSettings } from './trajectory-queue.js';
import { TrajectoryStore } from './trajectory-store.js';
import { decode } from './wire-decode.js';

const directory = mkdtempSync(join(tmpdir(), 'shears-queue-test-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const decoder = { decode };
let counter = 0;
const open: TrajectoryStore[] = [];
afterEach(() => {
  for (const store of open.splice(0)) store.close();
});

async function makeQueue(settings: Partial<TrajectoryQueueSettings> = {}, path?: string) {
  const store = await TrajectoryStore.open({ path: path ?? join(directory, `queue-${counter++}.sqlite`) });
  open.push(store);
  return new TrajectoryQueue(store, {
    maxQueuedGroups: 1000,
    maxQueuedBytes: 1 << 30,
    idempotencyKeyLimit: 100,
    splitGroups: true,
    batchOrder: 'fifo',
    now: () => 1_700_000_000_000,
    randomBytes: (size) => new Uint8Array(size).fill(7),
    ...settings,
  });
}

function decoded(body: Record<string, unknown>) {
  const result = decoder.decode({
    kind: 'single',
    body: Buffer.from(JSON.stringify(body)),
    gzip: false,
    maxBytes: 1 << 20,
  });
  if (!result.ok) throw new Error(result.body);
  return result.groups;
}

const group = (size: number, extra: Record<string, unknown> = {}) => ({
  tokens: Array.from({ length: size }, (_, index) => [index]),
  masks: Array.from({ length: size }, (_, index) => [index]),
  scores: Array.from({ length: size }, (_, index) => index),
  ...extra,
});

const trainer = (batchSize: number) => ({
  wandb_group: 'g',
  wandb_project: 'p',
  batch_size: batchSize,
  max_token_len: 64,
  checkpoint_dir: 'c',
  save_checkpoint_interval: 5,
  starting_step: 0,
  num_steps: 9,
});

async function serve(queue: TrajectoryQueue): Promise<unknown[] | null | 'unregistered'> {
  const leased = queue.leaseBatch();
  if (leased.kind === 'unregistered') return leased.kind;
  if (leased.kind === 'none') return null;
  try {
    const texts = await leased.lease.groups();
    leased.lease.markDelivered();
    leased.lease.complete();
    return texts.map((pieces) => JSON.parse(Buffer.concat(pieces).toString('utf8')));
  } finally {
    leased.lease.release();
  }
}

describe('TrajectoryQueue (no HTTP)', () => {
  it('walks the Atropos handshake: envs wait for the trainer, register, status and buffers', async () => {
    const queue = await makeQueue();
    expect(await serve(queue)).toBe('unregistered');
    expect(queue.register(trainer(4)).uuid).toMatch(/^\d{30,39}$/);
    const env = {
      max_token_length: 100,
      desired_name: 'e',
      weight: 1,
      group_size: 4,
      min_batch_allocation: null,
    };
    expect(queue.registerEnv(env)).toEqual({ status: 'wait for trainer to start' });
    expect(await serve(queue)).toBeNull();
    expect(queue.registerEnv(env)).toMatchObject({
      status: 'success',
      env_id: 0,
      wandb_name: 'e_0',
      num_steps: 9,
    });
    expect((await queue.ingest(decoded(group(2, { env_id: 0 })), { kind: 'single' })).text).toBe(
      '{"status":"buffered","buffer_size":2}',
    );
    expect(queue.status()).toEqual({ current_step: 0, queue_size: 0 });
    expect((await queue.ingest(decoded(group(2, { env_id: 0 })), { kind: 'list' })).text).toBe(
      '{"status":"received","groups_processed":1,"buffered":1,"last_buffer_size":0}',
    );
    expect(queue.statusEnv(0)).toMatchObject({ queue_size: 1, self_queue_size: 1, env_weight: 1 });
    expect(() => queue.statusEnv(3)).toThrow(EnvStatusError);
    const batch = await serve(queue);
    expect((batch as { scores: number[] }[]).map((item) => item.scores)).toEqual([
      [0, 1],
      [0, 1],
    ]);
    expect(queue.status()).toEqual({ current_step: 1, queue_size: 0 });
    expect(queue.counters).toMatchObject({ groupsReceived: 2, batchesServed: 1, sequencesServed: 4 });
  });

  it('buffers against the registered group size, never the size /status-env grew it to', async () => {
    const queue = await makeQueue();
    queue.register(trainer(32));
    expect(await serve(queue)).toBeNull();
    const env = {
      max_token_length: 100,
      desired_name: 'e',
      weight: 1,
      group_size: 8,
      min_batch_allocation: null,
    };
    expect(queue.registerEnv(env)).toMatchObject({ status: 'success', env_id: 0 });
    // One group with more sequences than the env's group size (rollouts of several sequences):
    // queued, and /status-env grows the env's group size to 16, as Atropos does.
    expect((await queue.ingest(decoded(group(16, { env_id: 0 })), { kind: 'single' })).text).toContain(
      'received',
    );
    expect(queue.statusEnv(0)).toMatchObject({ max_group_size: 16, self_queue_size: 1 });
    // Groups of the registered size, and of sizes between it and the grown one, still go straight
    // to the queue (before, each waited in the buffer for others summing to exactly 16: a 9 never did).
    for (const size of [8, 9, 8]) {
      const answer = await queue.ingest(decoded(group(size, { env_id: 0 })), { kind: 'single' });
      expect(answer.text, `a group of ${size}`).toContain('received');
    }
    expect(queue.store.summary()).toMatchObject({ buffered: 0, groups: 4 });
    // A group smaller than registered is still buffered until buffered ones sum to 8 (Atropos).
    expect((await queue.ingest(decoded(group(5, { env_id: 0 })), { kind: 'single' })).text).toBe(
      '{"status":"buffered","buffer_size":5}',
    );
    expect((await queue.ingest(decoded(group(3, { env_id: 0 })), { kind: 'single' })).text).toBe(
      '{"status":"buffered","buffer_size":0}',
    );
    const batch = (await serve(queue)) as { scores: number[] }[];
    expect(batch.map((item) => item.scores.length)).toEqual([16, 8, 8]);
  });

  it('puts the rest of a split group into the next batch, also after a restart', async () => {
    const path = join(directory, `queue-${counter++}.sqlite`);
    let queue = await makeQueue({}, path);
    queue.register(trainer(32));
    const ingest = async (name: string, size: number) =>
      queue.ingest(decoded(group(size, { group_overrides: { name } })), { kind: 'single' });
    const names = (batch: unknown) =>
      (batch as { group_overrides: { name: string }; scores: number[] }[]).map(
        (item) => `${item.group_overrides.name}:${item.scores.length}`,
      );
    // 12 does not divide 16: oldest first, C split at the batch boundary, its rest (8) queued.
    for (const [name, size] of [
      ['A', 12],
      ['B', 12],
      ['C', 16],
    ] as const)
      await ingest(name, size);
    expect(names(await serve(queue))).toEqual(['A:12', 'B:12', 'C:8']);
    queue.store.close();
    open.splice(open.indexOf(queue.store), 1);
    queue = await makeQueue({}, path);
    // Every queued size (8, 16) now divides the largest, and Atropos's packs would take D and E
    // and hold C's rest until another group of 8 came (records 4 steps old in a learning test).
    await ingest('D', 16);
    await ingest('E', 16);
    expect(names(await serve(queue))).toEqual(['C:8', 'D:16', 'E:8']);
  });

  it('forms every batch at once, advances the step by that count, and serves them oldest first (or lifo)', async () => {
    for (const order of ['fifo', 'lifo'] as const) {
      const queue = await makeQueue({ batchOrder: order });
      queue.register(trainer(2));
      for (let index = 0; index < 3; index++)
        await queue.ingest(decoded(group(2, { group_overrides: { index } })), { kind: 'single' });
      const first = (await serve(queue)) as { group_overrides: { index: number } }[];
      expect(first[0]?.group_overrides.index).toBe(order === 'fifo' ? 0 : 2);
      expect(queue.status().current_step).toBe(3);
    }
  });

  it('answers a retried idempotency key from the record, and refuses past the group limit', async () => {
    const queue = await makeQueue({ maxQueuedGroups: 1 });
    queue.register(trainer(8));
    const first = await queue.ingest(decoded(group(2)), { kind: 'single', idempotencyKey: 'k' });
    expect(first).toEqual({ text: '{"status":"received"}', replayed: false });
    expect(await queue.replay('k')).toBe('{"status":"received"}');
    expect(() => queue.admit()).toThrow(QueueFullError);
    expect(queue.counters.rejected.get('queue_full')).toBe(1);
  });

  it('keeps /latest_example across reset, and resets everything else', async () => {
    const queue = await makeQueue();
    expect(queue.latestExample()).toContain('"tokens":[]');
    queue.register(trainer(8));
    await queue.ingest(decoded(group(1, { scores: [1] })), { kind: 'single' });
    queue.reset();
    expect(queue.status()).toEqual({ current_step: 0, queue_size: 0 });
    expect(queue.info()).toEqual({ batch_size: -1, max_token_len: 64 });
    expect(queue.latestExample()).toContain('"scores":[1.0]');
  });
});

describe('TrajectoryStore: one server per queue file', () => {
  it('refuses a second opener, naming the file and the holding process; the file is free again after close', async () => {
    const path = join(directory, 'locked.sqlite');
    const first = await TrajectoryStore.open({ path });
    let refused: unknown;
    try {
      await TrajectoryStore.open({ path });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(TrajectoryApiLockedError);
    expect((refused as Error).message).toContain(path);
    expect((refused as Error).message).toContain(`process ${process.pid}`);
    first.close();
    (await TrajectoryStore.open({ path })).close();
  });

  it('creates a missing folder, reports what it resumed, and names a file that is not a queue', async () => {
    const path = join(directory, 'new', 'deeper', 'api.sqlite');
    const queue = await makeQueue({}, path);
    expect(queue.store.summary()).toMatchObject({ groups: 0, oldestReceivedAt: null });
    queue.register(trainer(8));
    await queue.ingest(decoded(group(2)), { kind: 'single' });
    queue.store.close();
    open.length = 0;
    const before = Date.now();
    const resumed = await TrajectoryStore.open({ path });
    open.push(resumed);
    expect(resumed.summary()).toMatchObject({ groups: 1, queued: 1, buffered: 0, formedBatches: 0 });
    expect(resumed.summary().oldestReceivedAt).toBeLessThanOrEqual(before);

    const notAQueue = join(directory, 'notes.txt');
    writeFileSync(notAQueue, 'these are my notes, not a database\n'.repeat(100));
    await expect(TrajectoryStore.open({ path: notAQueue })).rejects.toThrow(TrajectoryApiDatabaseError);
    await expect(TrajectoryStore.open({ path: notAQueue })).rejects.toThrow(/notes\.txt/);
    expect(readFileSync(notAQueue, 'utf8')).toBe('these are my notes, not a database\n'.repeat(100));
  });
});
