import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TrajectoryStore } from './trajectory-store.js';

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
