import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { planBatch } from './batching.js';
import { type FormedBatch, TrajectoryStore } from './trajectory-store.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function group(text: string) {
  return { envId: null, size: 1, encoding: 0 as const, payload: Buffer.from(text), suffix: '' };
}

describe('trajectory store with synchronous=full', () => {
  it('resolves every durable() waiter, including ones that commit while a sync runs, and keeps the groups', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'shears-store-'));
    directories.push(directory);
    const path = join(directory, 'store.sqlite');
    const store = await TrajectoryStore.open({ path, synchronous: 'full' });
    const waits: Promise<void>[] = [];
    for (let index = 0; index < 5; index++) {
      store.transactionUnsynced(() =>
        store.ingest([group(`{"tokens":[[${index}]],"masks":[[1]],"scores":[1]}`)], {
          respond: () => 'ok',
          idempotencyLimit: 10,
        }),
      );
      waits.push(store.durable());
    }
    await Promise.all(waits);
    expect(store.queue).toHaveLength(5);
    store.close();
    const reopened = await TrajectoryStore.open({ path, synchronous: 'full' });
    expect(reopened.queue.map((item) => item.id)).toEqual(store.queue.map((item) => item.id));
    reopened.close();
  });
});

describe('delivered batches across restarts', () => {
  async function storeWithTwoBatches() {
    const directory = mkdtempSync(join(tmpdir(), 'shears-store-'));
    directories.push(directory);
    const path = join(directory, 'store.sqlite');
    const store = await TrajectoryStore.open({ path, synchronous: 'normal' });
    store.transaction(() =>
      store.ingest(
        [0, 1, 2, 3].map((index) => group(`{"tokens":[[${index}]],"masks":[[1]],"scores":[1]}`)),
        { respond: () => 'ok', idempotencyLimit: 10 },
      ),
    );
    expect(store.formBatches((queue) => planBatch(queue, 2))).toBe(2);
    return { store, path };
  }

  it('deletes at start a batch marked delivered whose groups the dead process never deleted', async () => {
    const { store, path } = await storeWithTwoBatches();
    const [first, second] = store.formed;
    store.markDelivered(first as FormedBatch);
    store.close(); // as if killed between the mark and the delete
    const reopened = await TrajectoryStore.open({ path, synchronous: 'normal' });
    expect(reopened.formed.map((batch) => batch.batchNo)).toEqual([second?.batchNo]);
    expect(reopened.storedGroups).toBe(2);
    reopened.close();
  });

  it('serves an unmarked batch again after a restart', async () => {
    const { store, path } = await storeWithTwoBatches();
    const first = store.formed[0] as FormedBatch;
    store.markDelivered(first);
    store.unmarkDelivered(first);
    store.close();
    const reopened = await TrajectoryStore.open({ path, synchronous: 'normal' });
    expect(reopened.formed).toHaveLength(2);
    expect(reopened.readBatch(reopened.formed[0] as FormedBatch)).toHaveLength(2);
    reopened.close();
  });
});

describe('idempotency keys', () => {
  it('keeps the key table bounded when every keyed POST carries a list of groups', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'shears-store-'));
    directories.push(directory);
    const path = join(directory, 'store.sqlite');
    const store = await TrajectoryStore.open({ path, synchronous: 'normal' });
    // 8 groups per POST: nextId (odd) never lands on a multiple of 1000 right after a POST, which is
    // when the table used to be pruned.
    const posts = 3000;
    for (let post = 0; post < posts; post++)
      store.ingest(
        Array.from({ length: 8 }, (_, index) => group(`{"tokens":[[${index}]],"masks":[[1]],"scores":[1]}`)),
        { idempotencyKey: `post-${post}`, respond: () => `answer-${post}`, idempotencyLimit: 10 },
      );
    // The newest keys still replay; the oldest were forgotten.
    expect(store.idempotentResponse(`post-${posts - 1}`)).toBe(`answer-${posts - 1}`);
    expect(store.idempotentResponse(`post-${posts - 10}`)).toBe(`answer-${posts - 10}`);
    expect(store.idempotentResponse('post-0')).toBeUndefined();
    store.close();
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(path, { readonly: true });
    const { count } = db.prepare('SELECT count(*) AS count FROM idempotency').get() as { count: number };
    db.close();
    expect(count).toBeLessThanOrEqual(10 + 1000);
  });
});
