import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openReplayStore } from './replay-store.js';

const dir = mkdtempSync(join(tmpdir(), 'shears-replay-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const entry = (id: string, score: number) => ({ groupId: id, taskId: `t-${id}`, score, payload: { id } });

describe('openReplayStore', () => {
  it('keeps only groups above the threshold, at most capacity (the lowest makes room), across a restart', async () => {
    const path = join(dir, 'nested', 'replay.sqlite');
    const store = await openReplayStore<{ id: string }>({ path, capacity: 2, threshold: 0.5 });
    expect(store.add(entry('low', 0.5))).toBe(false);
    expect(store.add(entry('a', 0.6))).toBe(true);
    expect(store.add(entry('b', 0.9))).toBe(true);
    expect(store.add(entry('c', 0.55))).toBe(false); // full, and below the lowest kept
    expect(store.add(entry('d', 0.8))).toBe(true); // replaces a (0.6)
    store.close();
    const reopened = await openReplayStore<{ id: string }>({ path, capacity: 2, threshold: 0.5 });
    expect(reopened.size).toBe(2);
    const ids = reopened
      .sample(5)
      .map((sampled) => sampled.payload.id)
      .sort();
    expect(ids).toEqual(['b', 'd']);
    reopened.close();
    // Reopened with a smaller capacity and a higher threshold: only what the new rules keep remains.
    const stricter = await openReplayStore<{ id: string }>({ path, capacity: 1, threshold: 0.85 });
    expect(stricter.sample(5).map((sampled) => sampled.groupId)).toEqual(['b']);
    stricter.close();
  });

  it('samples in proportion to score, without replacement within a call', async () => {
    let next = 0;
    const draws = [0.99, 0.0];
    const store = await openReplayStore<{ id: string }>({
      path: join(dir, 'sample.sqlite'),
      threshold: 0,
      random: () => draws[next++ % draws.length]!,
    });
    store.add(entry('x', 1));
    store.add(entry('y', 3));
    const sampled = store.sample(2).map((item) => item.groupId);
    expect(sampled).toEqual(['y', 'x']);
    store.close();
  });
});
