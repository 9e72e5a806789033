// The Atropos packing tests (test_heterogeneous_packing, test_heterogeneous_batching,
// test_min_batch_allocation) against shears' batcher.
import { describe, expect, it } from 'vitest';
import {
  computeEnvStatus,
  type EnvRecord,
  findGroupsSummingToTarget,
  planAtroposBatch,
  planBatch,
  planBatchWithMinimums,
  type QueuedGroup,
} from './batching.js';

const queueOf = (sizes: number[], envIds: (number | null)[] = []): QueuedGroup[] =>
  sizes.map((size, index) => ({ id: index, size, envId: envIds[index] ?? null }));
const env = (overrides: Partial<EnvRecord> = {}): EnvRecord => ({
  max_context_len: 2048,
  weight: 1,
  desired_name: 'e',
  real_name: 'e_0',
  registered_id: 0,
  last_update: 0,
  connected: true,
  min_batch_allocation: null,
  group_size: 1,
  ...overrides,
});
/** A small seeded generator (an LCG), so random trials are the same in every run. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}
const total = (queue: QueuedGroup[], take: number[]) =>
  take.reduce((sum, index) => sum + (queue[index] as QueuedGroup).size, 0);

describe('findGroupsSummingToTarget (buffer flushing)', () => {
  it.each([
    [[1, 2, 1], 4, [0, 1, 2]],
    [[2, 2, 4], 4, [0, 1]],
    [[3, 1, 4], 5, [1, 2]],
    [[2, 4], 3, []],
    [[], 4, []],
    [[4], 4, [0]],
    [[2, 2, 2, 2], 8, [0, 1, 2, 3]],
    [[16, 8, 8], 32, [0, 1, 2]],
    [[2, 2, 4, 2, 2], 4, [0, 1]],
    [[2, 4, 2, 1], 6, [0, 1]],
    [Array(16).fill(1), 8, [0, 1, 2, 3, 4, 5, 6, 7]],
  ])('sizes %j, target %i → %j', (sizes, target, expected) => {
    expect(findGroupsSummingToTarget(sizes as number[], target as number)).toEqual(expected);
  });
});

describe('planBatch', () => {
  it('takes whole groups FIFO to exactly the batch size (Atropos worked example)', () => {
    expect(planBatch(queueOf([8, 4, 4, 2, 8, 2, 2, 2]), 16)).toEqual({ take: [0, 1, 2] });
  });

  it('returns a batch of exactly batch_size whenever it returns one (random trials)', () => {
    const random = seededRandom(42);
    for (let trial = 0; trial < 2000; trial++) {
      const queue = queueOf(Array.from({ length: 1 + Math.floor(random() * 100) }, () => 8));
      const batchSize = 64 * (1 + Math.floor(random() * 4));
      const plan = planBatch(queue, batchSize);
      const queued = queue.length * 8;
      if (queued >= batchSize) expect(plan && total(queue, plan.take)).toBe(batchSize);
      else expect(plan).toBeUndefined();
    }
  });

  it('never passes over an older group whose size Atropos cannot pack (records would grow stale)', () => {
    // A group of 9 (a rollout of two sequences) among 16s: Atropos packs the four 16s and the 9
    // waits, batch after batch. shears takes the oldest first and splits at the boundary.
    const queue = queueOf([9, 16, 16, 16, 16, 8, 8]);
    expect(planAtroposBatch(queue, 64)?.take).toEqual([1, 2, 3, 4]);
    expect(planBatch(queue, 64)).toEqual({ take: [0, 1, 2, 3], split: { index: 4, sequences: 7 } });
    // Sizes that all divide the largest: Atropos's batch, items and order, as before.
    expect(planBatch(queueOf([8, 16, 8, 16, 16]), 32)).toEqual(
      planAtroposBatch(queueOf([8, 16, 8, 16, 16]), 32),
    );
  });

  it('takes the rest of a split group first, though its size divides the largest (Atropos would hold it)', () => {
    // The rest of a group of 16 split 8 / 8 at the last batch's boundary, then two new 16s.
    const queue: QueuedGroup[] = [
      { id: 0, size: 8, envId: 0, rest: true },
      { id: 1, size: 16, envId: 0 },
      { id: 2, size: 16, envId: 0 },
    ];
    expect(planAtroposBatch(queue, 32)?.take).toEqual([1, 2]);
    expect(planBatch(queue, 32)).toEqual({ take: [0, 1], split: { index: 2, sequences: 8 } });
    // A rest of 2 waits for the batch to fill, then goes first.
    const two: QueuedGroup[] = [
      { id: 0, size: 2, envId: 0, rest: true },
      { id: 1, size: 16, envId: 0 },
    ];
    expect(planBatch(two, 32)).toBeUndefined();
    expect(planBatch([...two, { id: 2, size: 16, envId: 0 }], 32)).toEqual({
      take: [0, 1],
      split: { index: 2, sequences: 14 },
    });
    // Without splitting there are no rests: Atropos's batch.
    expect(planBatch(queue, 32, { splitGroups: false })).toEqual({ take: [1, 2] });
  });

  it('never leaves a sequence more than one batch behind newer ones (groups of 9–16 sequences, random streams)', () => {
    // Rollouts of one or two sequences: groups of 8 rollouts carry 9–16 sequences. Groups arrive
    // one by one and batches of 64 form as soon as they can, as for a waiting trainer. Every
    // sequence must be trained in the first or second batch formed after its group arrived
    // (the second when its group was split at a boundary); before rests were taken first, a rest
    // of 8 among 16s waited 5 batches on such a stream.
    const random = seededRandom(7);
    for (let trial = 0; trial < 200; trial++) {
      let queue: (QueuedGroup & { arrivedAt: number })[] = [];
      let batches = 0;
      let nextId = 0;
      let worst = 0;
      for (let arrival = 0; arrival < 120; arrival++) {
        const size = random() < 0.7 ? 16 : 9 + Math.floor(random() * 7);
        queue.push({ id: nextId++, size, envId: 0, arrivedAt: batches });
        for (let plan = planBatch(queue, 64); plan; plan = planBatch(queue, 64)) {
          batches++;
          const { take, split } = plan;
          for (const index of [...take, ...(split ? [split.index] : [])])
            worst = Math.max(worst, batches - (queue[index] as { arrivedAt: number }).arrivedAt);
          queue = queue.flatMap((group, index) => {
            if (split?.index === index)
              return [{ ...group, id: nextId++, size: group.size - split.sequences, rest: true }];
            return take.includes(index) ? [] : [group];
          });
        }
      }
      expect(worst, `trial ${trial}`).toBeLessThanOrEqual(2);
    }
  });

  it('splits one group when no whole groups sum to the batch size (waiting could deadlock with a paced env)', () => {
    expect(planBatch(queueOf([12, 8]), 16)).toEqual({ take: [0], split: { index: 1, sequences: 4 } });
    // Groups of 8 and 9 (rollouts of two sequences), batch 64: no subset sums to 64.
    const mixed = queueOf([9, 9, 9, 9, 9, 9, 9, 8]);
    const plan = planBatch(mixed, 64);
    expect(plan?.split).toBeDefined();
    expect(plan && total(mixed, plan.take) + (plan.split?.sequences ?? 0)).toBe(64);
    expect(planBatch(queueOf([12, 8]), 24)).toBeUndefined(); // not enough queued yet
    expect(planBatch(queueOf([8, 8]), 12)).toEqual({ take: [0], split: { index: 1, sequences: 4 } });
    expect(planBatch(queueOf([8, 8]), 12, { splitGroups: false })).toBeUndefined();
    // A size that does not divide the largest (3 among 1s and 4s): the oldest groups first, the
    // one at the boundary split, rather than passing over the 3 (it would wait behind newer ones).
    expect(planBatch(queueOf([3, 1, 4]), 5)).toEqual({ take: [0, 1], split: { index: 2, sequences: 1 } });
    expect(planBatch(queueOf([3, 1, 4]), 5, { splitGroups: false })).toEqual({ take: [1, 2] });
  });
});

describe('planBatchWithMinimums', () => {
  const two = [env({ min_batch_allocation: 0.25 }), env({ min_batch_allocation: 0.5 })];
  it('honours minimums and fills to exactly the batch size', () => {
    const queue = queueOf([1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
    const plan = planBatchWithMinimums(queue, 8, two);
    expect(plan && total(queue, plan.take)).toBe(8);
    expect(plan?.take.filter((index) => queue[index]?.envId === 1).length).toBeGreaterThanOrEqual(4);
  });

  it('fails while a minimum-holding env has no data; ignores disconnected envs and minimums that truncate to 0', () => {
    const queue = queueOf([4, 4], [1, 1]);
    expect(planBatchWithMinimums(queue, 8, [env({ min_batch_allocation: 0.5 }), env()])).toBeUndefined();
    expect(
      planBatchWithMinimums(queue, 8, [env({ min_batch_allocation: 0.5, connected: false }), env()])?.take,
    ).toEqual([0, 1]);
    expect(
      planBatchWithMinimums(queueOf([1, 1], [1, 1]), 2, [env({ min_batch_allocation: 0.3 }), env()])?.take,
    ).toEqual([0, 1]);
  });

  it('scales minimums above 100 % down and batches groups without an env id', () => {
    const queue = queueOf([2, 2, 2], [0, 1, null]);
    const plan = planBatchWithMinimums(queue, 4, [
      env({ min_batch_allocation: 1 }),
      env({ min_batch_allocation: 1 }),
    ]);
    expect(plan?.take.sort()).toEqual([0, 1]);
    expect(
      planBatchWithMinimums(queueOf([2, 2], [0, null]), 4, [env({ min_batch_allocation: 0.5 })])?.take,
    ).toEqual([0, 1]);
  });
});

describe('planBatchWithMinimums when the batch size is not a multiple of the group size', () => {
  // Groups of 8, batch size 12: no set of whole groups ever makes a batch (the Atropos stall).
  it('splits one group, as planBatch does, whether or not a minimum is in force', () => {
    const queue = queueOf([8, 8, 8], [0, 1, 0]);
    const withMinimum = [env({ min_batch_allocation: 0.5 }), env()];
    expect(planBatchWithMinimums(queue, 12, withMinimum)).toEqual({
      take: [0],
      split: { index: 1, sequences: 4 },
    });
    // A minimum that truncates to 0 sequences: the mode is on, but no env holds a minimum.
    const truncated = [env({ min_batch_allocation: 0.01 }), env()];
    expect(planBatchWithMinimums(queue, 12, truncated)).toEqual({
      take: [0],
      split: { index: 1, sequences: 4 },
    });
  });

  it("takes the rest of a split group first and counts it toward its env's minimum", () => {
    const envs = [env({ min_batch_allocation: 0.5 }), env()];
    // Env 0's rest (4) has no other 4 to pack with; env 0 must have half of 16. Atropos's batch
    // would take env 0's 8 and env 1's first 8, and hold the rest.
    const queue: QueuedGroup[] = [
      { id: 0, size: 8, envId: 1 },
      { id: 1, size: 4, envId: 0, rest: true },
      { id: 2, size: 8, envId: 1 },
      { id: 3, size: 8, envId: 0 },
    ];
    expect(planBatchWithMinimums(queue, 16, envs, { splitGroups: false })?.take).toEqual([3, 0]);
    const plan = planBatchWithMinimums(queue, 16, envs);
    expect(plan?.take.slice(0, 2)).toEqual([1, 3]);
    expect(plan && total(queue, plan.take) + (plan.split?.sequences ?? 0)).toBe(16);
    const fromEnv0 = (plan?.take ?? []).filter((index) => queue[index]?.envId === 0);
    expect(total(queue, fromEnv0)).toBeGreaterThanOrEqual(8);
  });

  it("keeps Atropos's behaviour with splitGroups: false", () => {
    const queue = queueOf([8, 8, 8], [0, 1, 0]);
    expect(
      planBatchWithMinimums(queue, 12, [env({ min_batch_allocation: 0.5 }), env()], { splitGroups: false }),
    ).toBeUndefined();
    expect(
      planBatchWithMinimums(queue, 12, [env({ min_batch_allocation: 0.01 }), env()], { splitGroups: false }),
    ).toBeUndefined();
  });

  it('fills the rest with the exact search where queue order alone fails', () => {
    // The minimum gives env 0 its group of 4; queue order then takes the 8 and is stuck at 12
    // of 14, while 4 + 4 + 6 (skipping the 8) makes the batch.
    const queue = queueOf([4, 8, 4, 6], [0, 1, 1, 1]);
    const plan = planBatchWithMinimums(queue, 14, [env({ min_batch_allocation: 0.25 }), env()]);
    expect(plan?.split).toBeUndefined();
    expect(plan && total(queue, plan.take)).toBe(14);
    expect(plan?.take).toEqual([0, 2, 3]);
  });
});

describe('computeEnvStatus', () => {
  it('computes queue sizes in units of the env group and grows its recorded group size', () => {
    const envs = [env({ group_size: 4 }), env({ group_size: 8, weight: 3 })];
    const status = computeEnvStatus({
      envId: 0,
      envs,
      queue: queueOf([4, 8, 8, 6], [0, 1, 1, 0]),
      batchSize: 16,
      currentStep: 5,
    });
    expect(status).toEqual({
      current_step: 5,
      queue_size: 4,
      unallocated_fraction: 1,
      self_queue_size: 1,
      max_group_size: 8,
      env_weight: 0.25,
    });
    expect(envs[0]?.group_size).toBe(6);
    expect(() => computeEnvStatus({ envId: 9, envs, queue: [], batchSize: 16, currentStep: 0 })).toThrow(
      /unknown env_id 9/,
    );
  });
});

// Every batch that queue would yield, formed one after another as /batch does.
function allBatches(
  queue: QueuedGroup[],
  plan: (queue: QueuedGroup[]) => { take: number[] } | undefined,
): number[][] {
  const batches: number[][] = [];
  let rest = queue;
  for (let next = plan(rest); next; next = plan(rest)) {
    batches.push(next.take.map((index) => (rest[index] as QueuedGroup).id));
    const taken = new Set(next.take);
    rest = rest.filter((_, index) => !taken.has(index));
  }
  return batches;
}

// The expected batches below are what Atropos's grab_exact_from_heterogeneous_queue and
// grab_batch_with_minimum_allocations return for the same queues (measured against them).
describe('packing order: the groups and their order are exactly Atropos’s', () => {
  it('serves a pack in the order it completed: sizes [8,4,4,2,8,2,2,2], batch 16 → [0,1,2] then [4,3,5,6,7]', () => {
    const queue = queueOf([8, 4, 4, 2, 8, 2, 2, 2]);
    expect(allBatches(queue, (rest) => planBatch(rest, 16))).toEqual([
      [0, 1, 2],
      [4, 3, 5, 6, 7],
    ]);
    expect(allBatches(queue, (rest) => planAtroposBatch(rest, 16))).toEqual([
      [0, 1, 2],
      [4, 3, 5, 6, 7],
    ]);
  });

  it('puts a later large group before the small ones it overtook: [2,8,2,2,2,8], batch 8', () => {
    expect(allBatches(queueOf([2, 8, 2, 2, 2, 8]), (rest) => planBatch(rest, 8))).toEqual([
      [1],
      [0, 2, 3, 4],
      [5],
    ]);
  });

  it('fills minimums first (registration order), then packable groups in queue order', () => {
    const envs = [env({ min_batch_allocation: 0.5 }), env()];
    expect(
      allBatches(queueOf([4, 4, 4, 4], [1, 1, 0, 0]), (rest) => planBatchWithMinimums(rest, 8, envs)),
    ).toEqual([
      [2, 0],
      [3, 1],
    ]);
    // Packs are per env: env 1's 2 at index 0 is packable only once its 2 at index 5 arrives.
    // Atropos then stalls (env 0's last 2 has no pack); shears forms one more batch from the
    // rest (its documented extension), after the same first batch.
    expect(
      allBatches(queueOf([2, 4, 2, 4, 2, 2], [1, 0, 0, 1, 0, 1]), (rest) =>
        planBatchWithMinimums(rest, 8, envs),
      ),
    ).toEqual([
      [1, 0, 2],
      [4, 3, 5],
    ]);
    expect(
      allBatches(queueOf([4, 2, 2, 4, 4], [1, 0, 1, 0, 1]), (rest) =>
        planBatchWithMinimums(rest, 8, [
          env({ min_batch_allocation: 0.25 }),
          env({ min_batch_allocation: 0.5 }),
        ]),
      ),
    ).toEqual([
      [3, 0],
      [1, 2, 4], // shears only: Atropos stalls on env 0's unpackable 2
    ]);
  });
});

describe('computeEnvStatus after a disconnect', () => {
  it("counts a disconnected env's queued data in full: its minimum is no longer held back", () => {
    const envs = [env({ group_size: 4, min_batch_allocation: 0.5 }), env({ group_size: 4 })];
    const queue = queueOf([4, 4, 4], [0, 0, 1]);
    const status = () => computeEnvStatus({ envId: 1, envs, queue, batchSize: 8, currentStep: 0 });
    expect(status()).toMatchObject({ queue_size: 2, self_queue_size: 1, unallocated_fraction: 0.5 });
    (envs[0] as EnvRecord).connected = false;
    expect(status()).toMatchObject({ queue_size: 3, self_queue_size: 1, unallocated_fraction: 1 });
  });
});
