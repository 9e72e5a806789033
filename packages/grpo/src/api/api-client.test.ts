// The client and the atropos-api sink against the real server over HTTP.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeSinkConformance, sampleScoredGroup } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { charTokenizer } from '../advantages/scored-group.test.js';
import plugin from '../plugin.js';
import { createApiSink } from './api-sink.js';
import { createTrajectoryApiClient } from './trajectory-api-client.js';
import { startTrajectoryApiServer, type TrajectoryApiServer } from './trajectory-api-server.js';

const directory = mkdtempSync(join(tmpdir(), 'shears-client-'));
let server: TrajectoryApiServer;
let sinkServer: TrajectoryApiServer;
beforeAll(async () => {
  server = await startTrajectoryApiServer({
    port: 0,
    databasePath: join(directory, 'api.sqlite'),
    decodeWorkers: 0,
    maxQueuedGroups: 3,
    retryAfterSeconds: 0,
  });
  sinkServer = await startTrajectoryApiServer({
    port: 0,
    databasePath: join(directory, 'sink.sqlite'),
    decodeWorkers: 0,
  });
});
afterAll(async () => {
  await server.close();
  await sinkServer.close();
  rmSync(directory, { recursive: true, force: true });
});

const registration = {
  wandb_group: 'g',
  wandb_project: 'p',
  batch_size: 4,
  max_token_len: 512,
  checkpoint_dir: 'c',
  save_checkpoint_interval: 5,
  starting_step: 0,
  num_steps: 20,
};

describe('trajectory API client', () => {
  it('registers, waits for the trainer to start, submits gzipped with retries, and pulls batches', async () => {
    const client = createTrajectoryApiClient({
      url: server.url,
      retries: 500,
      initialBackoffMs: 1,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.min(ms, 20))),
    });
    await client.resetData();
    const trainer = await client.registerTrainer(registration);
    expect(trainer.uuid).toMatch(/^\d{20,}$/);
    const registering = client.registerEnv(
      { maxTokenLength: 512, desiredName: 'env', groupSize: 2 },
      { pollMs: 10 },
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await client.batch()).toBeNull(); // starts the trainer
    const env = await registering;
    expect(env).toMatchObject({ status: 'success', env_id: 0, wandb_name: 'env_0' });
    const group = {
      tokens: [
        [1, 2],
        [1, 3],
      ],
      masks: [
        [-100, 2],
        [-100, 3],
      ],
      scores: [1, 0],
      env_id: 0,
      images: 'x'.repeat(2000),
    };
    expect(await client.submit(group)).toEqual({ status: 'received' });
    expect(await client.submit([group, group])).toEqual({ status: 'received', groups_processed: 2 });
    expect(await client.statusEnv(0)).toMatchObject({ self_queue_size: 3 });
    // The queue limit (3) answers 429; the client retries until the trainer makes room.
    const blocked = client.submit(group);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const batch = await client.batch();
    expect(batch?.map((item) => item.tokens.length)).toEqual([2, 2]);
    expect(await blocked).toEqual({ status: 'received' });
    expect(await client.status()).toMatchObject({ current_step: 1 });
  });

  it('does not retry other 4xx answers and names the status', async () => {
    const client = createTrajectoryApiClient({ url: server.url, retries: 3 });
    await expect(client.submit({ tokens: [[1]], masks: [[1]] } as never)).rejects.toThrow(/answered 422/);
    expect(() => createTrajectoryApiClient({ url: 'ftp://x' })).toThrow(/http: or https:/);
  });
});

describeSinkConformance({
  name: 'atropos-api',
  async create() {
    const client = createTrajectoryApiClient({ url: sinkServer.url });
    await client.resetData();
    await client.registerTrainer({ ...registration, batch_size: 2 });
    return { sink: createApiSink({ client, tokenizer: charTokenizer }) };
  },
});

describe('atropos-api sink', () => {
  it('pushes group records the group runner writes, skipping dropped groups, and the manifest creates it', async () => {
    const client = createTrajectoryApiClient({ url: sinkServer.url });
    await client.resetData();
    await client.registerTrainer({ ...registration, batch_size: 2 });
    const sink = await plugin.sinks?.['atropos-api']?.create(
      { url: sinkServer.url, tokenizer: charTokenizer },
      {} as never,
    );
    if (!sink) throw new Error('no atropos-api sink in the manifest');
    await sink.write(sampleScoredGroup('sink-a', [1, 0]));
    await sink.write({ ...sampleScoredGroup('sink-b', [1, 1]), dropped: { reason: 'all_scores_equal' } });
    // A retried write of the same group is harmless (idempotency key from the group id).
    await sink.write(sampleScoredGroup('sink-a', [1, 0]));
    await sink.close();
    const batch = await client.batch();
    expect(batch).toHaveLength(1);
    expect(batch?.[0]?.scores).toEqual([1, 0]);
    expect(batch?.[0]?.messages?.[0]?.[1]).toMatchObject({ role: 'assistant', content: 'yes' });
    expect(await client.batch()).toBeNull();
  });
});
