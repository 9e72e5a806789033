// Pure batch-formation and env-status arithmetic for the trajectory API: which queued groups
// make the next trainer batch, how undersized groups are combined, and what /status-env says.
// No I/O here, so the rules can be tested exhaustively.

/** A queued group as the batcher sees it (payloads stay on disk). */
export interface QueuedGroup {
  id: number;
  envId: number | null;
  /** Sequences in the group. */
  size: number;
  /**
   * The rest of a group split at a batch boundary (its first sequences went into a batch): while
   * one is queued, batches take the oldest groups first, so it goes into the next batch. Atropos
   * never splits a group, so this never changes a batch Atropos would form.
   */
  rest?: boolean;
}

/** An env registration record, as Atropos keeps it (field names are the wire's). */
export interface EnvRecord {
  max_context_len: number;
  weight: number;
  desired_name: string;
  real_name: string;
  registered_id: number;
  last_update: number;
  connected: boolean;
  min_batch_allocation: number | null;
  /** The env's group size: registered, then grown by /status-env to its largest queued group (as Atropos). */
  group_size: number;
  /**
   * The group size the env registered, which /status-env never grows: a group smaller than this is
   * buffered until buffered groups sum to it. (Absent in records stored before it existed.)
   */
  registered_group_size?: number;
}

export interface BatchPlan {
  /** Indices into the queue, in the order the groups go into the batch. */
  take: number[];
  /** When the batch size cannot be reached from whole groups: this queue index is split and its first `sequences` sequences complete the batch. */
  split?: { index: number; sequences: number };
}

/**
 * Atropos's `find_groups_summing_to_target`: a FIFO greedy pass, then a subset-sum search
 * that prefers later items when backtracking. Returns ascending indices, or [] when impossible.
 */
export function findGroupsSummingToTarget(sizes: readonly number[], target: number): number[] {
  if (sizes.length === 0 || target <= 0) return [];
  const greedy: number[] = [];
  let sum = 0;
  sizes.forEach((size, index) => {
    if (sum + size <= target) {
      greedy.push(index);
      sum += size;
    }
  });
  if (sum === target) return greedy;
  // reach[i][s]: s is reachable with the first i items.
  const reach: Uint8Array[] = [new Uint8Array(target + 1)];
  (reach[0] as Uint8Array)[0] = 1;
  for (let index = 0; index < sizes.length; index++) {
    const previous = reach[index] as Uint8Array;
    const next = previous.slice();
    const size = sizes[index] as number;
    for (let total = size; total <= target; total++) if (previous[total - size]) next[total] = 1;
    reach.push(next);
  }
  if (!(reach[sizes.length] as Uint8Array)[target]) return [];
  const chosen: number[] = [];
  let remaining = target;
  for (let index = sizes.length; index > 0 && remaining > 0; index--) {
    const size = sizes[index - 1] as number;
    if (size <= remaining && (reach[index - 1] as Uint8Array)[remaining - size]) {
      chosen.push(index - 1);
      remaining -= size;
    }
  }
  return chosen.sort((a, b) => a - b);
}

/** How many queued groups the exact search looks at; bounds the work per batch. */
const BATCH_SEARCH_WINDOW = 4096;

/**
 * Atropos's packs (`grab_exact_from_heterogeneous_queue`): walking the queue in order, groups
 * of each size are collected until they add up to the largest queued group size; each full
 * collection is a pack, appended to the packable list when it completes. Returns the packable
 * indices in that order (so a pack completed by a later group comes before groups of smaller
 * packs that complete later, e.g. sizes [2,8,2,2,2] → [1,0,2,3,4]).
 */
function atroposPacks(queue: readonly QueuedGroup[], indices: readonly number[], largest: number): number[] {
  const open = new Map<number, number[]>();
  const packable: number[] = [];
  for (const index of indices) {
    const size = (queue[index] as QueuedGroup).size;
    const bucket = open.get(size) ?? [];
    bucket.push(index);
    if (bucket.length * size === largest) {
      packable.push(...bucket);
      open.set(size, []);
    } else open.set(size, bucket);
  }
  return packable;
}

/**
 * Atropos's batch (`grab_exact_from_heterogeneous_queue`), items and order exactly: packable
 * groups in pack-completion order until exactly `batchSize`; undefined where Atropos forms none.
 */
export function planAtroposBatch(queue: readonly QueuedGroup[], batchSize: number): BatchPlan | undefined {
  if (batchSize <= 0 || queue.length === 0) return undefined;
  let total = 0;
  let largest = 0;
  for (const group of queue) {
    total += group.size;
    largest = Math.max(largest, group.size);
  }
  if (total < batchSize) return undefined;
  const take: number[] = [];
  let sum = 0;
  for (const index of atroposPacks(
    queue,
    queue.map((_, index) => index),
    largest,
  )) {
    take.push(index);
    sum += (queue[index] as QueuedGroup).size;
    if (sum === batchSize) return { take };
    if (sum > batchSize) return undefined;
  }
  return undefined;
}

/**
 * Atropos's batch where Atropos forms one (`planAtroposBatch`: same groups, same order), as long
 * as every queued group size divides the largest: then Atropos's packs take every group in time.
 * A size that does not (a group of 9 among 8s and 16s: a rollout of two sequences makes such
 * sizes) is never packed by Atropos, so it would wait behind newer groups batch after batch (in
 * one run records grew 5 optimiser steps old where `off_policy_limit: 1` allows 2). Then, unless
 * `splitGroups` is false, shears takes the oldest groups first and splits the group at the batch
 * boundary: no group waits behind newer ones. The same while the rest of a split group is queued
 * (`rest`): a rest of 2 or 8 among 16s divides the largest, and Atropos's packs would hold it
 * until enough groups of its size arrive (records 4 steps old in learning-test runs). Otherwise
 * where Atropos forms none: whole groups, FIFO greedy, else the lexicographically earliest subset
 * that sums to `batchSize`, else one group split (waiting for more data could deadlock: an env
 * paces itself by the queue).
 */
export function planBatch(
  queue: readonly QueuedGroup[],
  batchSize: number,
  options: { splitGroups?: boolean } = {},
): BatchPlan | undefined {
  if (batchSize <= 0 || queue.length === 0) return undefined;
  let largest = 0;
  let rest = false;
  for (const group of queue) {
    largest = Math.max(largest, group.size);
    if (group.rest) rest = true;
  }
  const packable = queue.every((group) => largest % group.size === 0);
  if ((!packable || rest) && options.splitGroups !== false) return planOldestFirst(queue, batchSize);
  return planAtroposBatch(queue, batchSize) ?? planWholeGroups(queue, batchSize, options);
}

/** The oldest groups in queue order, the one at the batch boundary split; none while too few are queued. */
function planOldestFirst(queue: readonly QueuedGroup[], batchSize: number): BatchPlan | undefined {
  let total = 0;
  for (const group of queue) total += group.size;
  if (total < batchSize) return undefined;
  const take: number[] = [];
  let filled = 0;
  for (let index = 0; index < queue.length; index++) {
    const size = (queue[index] as QueuedGroup).size;
    if (filled + size > batchSize) return { take, split: { index, sequences: batchSize - filled } };
    take.push(index);
    filled += size;
    if (filled === batchSize) return { take };
  }
  return undefined;
}

/** Where Atropos forms no batch: whole groups (FIFO greedy, else the earliest exact subset), else one split. */
function planWholeGroups(
  queue: readonly QueuedGroup[],
  batchSize: number,
  options: { splitGroups?: boolean },
): BatchPlan | undefined {
  let total = 0;
  for (const group of queue) total += group.size;
  if (total < batchSize) return undefined;
  const take: number[] = [];
  let sum = 0;
  for (let index = 0; index < queue.length && sum < batchSize; index++) {
    const size = (queue[index] as QueuedGroup).size;
    if (sum + size <= batchSize) {
      take.push(index);
      sum += size;
    }
  }
  if (sum === batchSize) return { take };
  const window = Math.min(queue.length, BATCH_SEARCH_WINDOW);
  // can[i][s]: s is reachable with items i..window-1.
  const can: Uint8Array[] = new Array(window + 1);
  can[window] = new Uint8Array(batchSize + 1);
  (can[window] as Uint8Array)[0] = 1;
  for (let index = window - 1; index >= 0; index--) {
    const after = can[index + 1] as Uint8Array;
    const here = after.slice();
    const size = (queue[index] as QueuedGroup).size;
    for (let target = size; target <= batchSize; target++) if (after[target - size]) here[target] = 1;
    can[index] = here;
  }
  if ((can[0] as Uint8Array)[batchSize]) {
    const chosen: number[] = [];
    let remaining = batchSize;
    for (let index = 0; index < window && remaining > 0; index++) {
      const size = (queue[index] as QueuedGroup).size;
      if (size <= remaining && (can[index + 1] as Uint8Array)[remaining - size]) {
        chosen.push(index);
        remaining -= size;
      }
    }
    return { take: chosen };
  }
  if (options.splitGroups === false) return undefined;
  // No whole groups sum to the batch size now. Waiting for more data could deadlock: an env
  // paces itself by the queue (`off_policy_limit`), so with enough queued it sends nothing more.
  return planOldestFirst(queue, batchSize);
}

/**
 * Atropos's `grab_batch_with_minimum_allocations`, items and order exactly: packs are formed
 * per env (groups without an env id are ignored), each connected env's minimum is filled from
 * its packable groups first (in registration order), then packable groups of any env in queue
 * order. Undefined where Atropos forms no batch.
 */
export function planAtroposBatchWithMinimums(
  queue: readonly QueuedGroup[],
  batchSize: number,
  envs: readonly EnvRecord[],
): BatchPlan | undefined {
  if (queue.length === 0) return undefined;
  const allocations = new Map<number, number>();
  // Keyed by position, which is the registered id (`registered_id` in Atropos) on a real server.
  envs.forEach((env, envId) => {
    if (env.connected && env.min_batch_allocation !== null && env.min_batch_allocation !== undefined)
      allocations.set(envId, env.min_batch_allocation);
  });
  if (allocations.size === 0) return planAtroposBatch(queue, batchSize);
  let largest = 0;
  for (const group of queue) largest = Math.max(largest, group.size);
  const byEnv = new Map<number, number[]>();
  queue.forEach((group, index) => {
    if (group.envId === null) return;
    const list = byEnv.get(group.envId) ?? [];
    list.push(index);
    byEnv.set(group.envId, list);
  });
  const packable = new Map<number, number[]>();
  for (const [envId, indices] of byEnv) packable.set(envId, atroposPacks(queue, indices, largest));
  const minimums = new Map<number, number>();
  let reserved = 0;
  for (const [envId, fraction] of allocations) {
    const sequences = Math.trunc(batchSize * fraction);
    if (sequences <= 0) continue;
    if (!byEnv.has(envId) || (packable.get(envId) ?? []).length === 0) return undefined;
    minimums.set(envId, sequences);
    reserved += sequences;
  }
  if (reserved > batchSize) {
    const scale = batchSize / reserved;
    for (const [envId, sequences] of minimums) {
      const smallest = Math.min(
        ...(packable.get(envId) ?? []).map((index) => (queue[index] as QueuedGroup).size),
      );
      minimums.set(envId, Math.max(smallest, Math.trunc(sequences * scale)));
    }
  }
  const take: number[] = [];
  const taken = new Set<number>();
  let total = 0;
  for (const [envId, sequences] of minimums) {
    let got = 0;
    for (const index of packable.get(envId) ?? []) {
      if (got >= sequences) break;
      const size = (queue[index] as QueuedGroup).size;
      if (total + size <= batchSize) {
        take.push(index);
        taken.add(index);
        got += size;
        total += size;
      }
    }
  }
  if (total < batchSize) {
    const anyPackable = new Set<number>();
    for (const indices of packable.values()) for (const index of indices) anyPackable.add(index);
    for (let index = 0; index < queue.length && total < batchSize; index++) {
      if (taken.has(index) || !anyPackable.has(index)) continue;
      const size = (queue[index] as QueuedGroup).size;
      if (total + size <= batchSize) {
        take.push(index);
        total += size;
      }
    }
  }
  return total === batchSize ? { take } : undefined;
}

/**
 * Batches with per-env minimum allocations: Atropos's batch where Atropos forms one
 * (`planAtroposBatchWithMinimums`). Where it forms none, minimums of connected envs are
 * honoured first in registration order from any of their groups, then the rest is filled with
 * `planBatch`'s rules (queue order first, then the exact search, then — unless `splitGroups`
 * is false — one split group when the rest can never be reached from whole groups). Unlike
 * Atropos, groups without an env id are then still batched. While the rest of a split group is
 * queued (`rest`; only when splitting is on), Atropos's batch is not used: the rest goes first,
 * counted toward its env's minimum.
 */
export function planBatchWithMinimums(
  queue: readonly QueuedGroup[],
  batchSize: number,
  envs: readonly EnvRecord[],
  options: { splitGroups?: boolean } = {},
): BatchPlan | undefined {
  if (batchSize <= 0 || queue.length === 0) return undefined;
  const rests = options.splitGroups !== false && queue.some((group) => group.rest);
  const atropos = rests ? undefined : planAtroposBatchWithMinimums(queue, batchSize, envs);
  if (atropos) return atropos;
  const minimums = new Map<number, number>();
  envs.forEach((env, envId) => {
    if (!env.connected || env.min_batch_allocation === null || env.min_batch_allocation === undefined) return;
    const sequences = Math.trunc(batchSize * env.min_batch_allocation);
    if (sequences > 0) minimums.set(envId, sequences);
  });
  if (minimums.size === 0) return planBatch(queue, batchSize, options);
  for (const envId of minimums.keys()) if (!queue.some((group) => group.envId === envId)) return undefined;
  const reserved = [...minimums.values()].reduce((a, b) => a + b, 0);
  if (reserved > batchSize) {
    for (const [envId, sequences] of minimums) {
      const smallest = Math.min(...queue.filter((group) => group.envId === envId).map((group) => group.size));
      minimums.set(envId, Math.max(Math.trunc((sequences * batchSize) / reserved), smallest));
    }
  }
  const taken = new Set<number>();
  const take: number[] = [];
  let remaining = batchSize;
  // The rests of split groups first, oldest first: they count toward their env's minimum.
  const got = new Map<number | null, number>();
  const takeGroup = (group: QueuedGroup, index: number) => {
    taken.add(index);
    take.push(index);
    got.set(group.envId, (got.get(group.envId) ?? 0) + group.size);
    remaining -= group.size;
  };
  if (rests)
    queue.forEach((group, index) => {
      if (group.rest && group.size <= remaining) takeGroup(group, index);
    });
  for (const [envId, sequences] of minimums)
    queue.forEach((group, index) => {
      if (group.envId !== envId || taken.has(index) || (got.get(envId) ?? 0) >= sequences) return;
      if (group.size <= remaining) takeGroup(group, index);
    });
  if (remaining === 0) return { take };
  const restIndices: number[] = [];
  queue.forEach((_, index) => {
    if (!taken.has(index)) restIndices.push(index);
  });
  const rest = planWholeGroups(
    restIndices.map((index) => queue[index] as QueuedGroup),
    remaining,
    options,
  );
  if (!rest) return undefined;
  const plan: BatchPlan = { take: [...take, ...rest.take.map((index) => restIndices[index] as number)] };
  if (rest.split)
    plan.split = { index: restIndices[rest.split.index] as number, sequences: rest.split.sequences };
  return plan;
}

/** Whether any env record (connected or not) asks for a minimum share — Atropos's mode switch. */
export function usesMinimumAllocations(envs: readonly EnvRecord[]): boolean {
  return envs.some((env) => env.min_batch_allocation !== null && env.min_batch_allocation !== undefined);
}

export interface EnvStatus {
  current_step: number;
  queue_size: number;
  unallocated_fraction: number;
  self_queue_size: number;
  max_group_size: number;
  env_weight: number;
}

export class EnvStatusError extends Error {}

/**
 * The /status-env arithmetic (atropos-api.md §1.3), including its side effect: the env's
 * recorded group size grows to the largest of its groups in the queue.
 */
export function computeEnvStatus(options: {
  envId: number;
  envs: EnvRecord[];
  queue: readonly QueuedGroup[];
  batchSize: number;
  currentStep: number;
}): EnvStatus {
  const { envId, envs, queue, batchSize } = options;
  const env = Number.isInteger(envId) && envId >= 0 ? envs[envId] : undefined;
  if (!env)
    throw new EnvStatusError(
      `unknown env_id ${envId} (registered: ${envs.length === 0 ? 'none' : `0..${envs.length - 1}`})`,
    );
  let total = 0;
  for (const record of envs)
    if (record.connected) total += record.max_context_len * Math.max(0, record.weight);
  if (total === 0) throw new EnvStatusError('the connected envs have a total weight of 0');
  const envWeight = Math.max(0.01, (env.max_context_len * env.weight) / total);
  let allocated = 0;
  for (const record of envs)
    if (record.connected && record.min_batch_allocation !== null) allocated += record.min_batch_allocation;
  const unallocated = 1 - Math.min(1, allocated);
  let maxGroup = 1;
  let ownLargest = 0;
  let ownSequences = 0;
  const others = new Map<number | null, number>();
  for (const group of queue) {
    maxGroup = Math.max(maxGroup, group.size);
    if (group.envId === envId) {
      ownLargest = Math.max(ownLargest, group.size);
      ownSequences += group.size;
    } else others.set(group.envId, (others.get(group.envId) ?? 0) + group.size);
  }
  const groupSize = Math.max(env.group_size, ownLargest);
  env.group_size = groupSize;
  let competing = 0;
  if (maxGroup > 1) {
    for (const [otherId, sequences] of others) {
      // Only connected envs hold back their minimum: a disconnected env's queued data competes
      // in full, as in Atropos.
      const record = otherId === null ? undefined : envs[otherId];
      const reserved =
        record?.connected && record.min_batch_allocation !== null
          ? Math.trunc(batchSize * record.min_batch_allocation)
          : 0;
      competing += Math.max(0, Math.ceil(sequences / maxGroup) * maxGroup - reserved);
    }
  }
  const divisor = Math.max(1, groupSize);
  return {
    current_step: options.currentStep,
    queue_size: Math.floor((ownSequences + competing) / divisor),
    unallocated_fraction: unallocated,
    self_queue_size: Math.floor(ownSequences / divisor),
    max_group_size: maxGroup,
    env_weight: envWeight,
  };
}
