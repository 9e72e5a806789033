// How far a worker's rollouts run ahead of the trainer, in trainer batches: what `serve` pauses on
// (api.off_policy_limit).
/** How many trainer batches are waiting in the queue, from /status-env and /info. */
export function batchesAhead(status: { queue_size: number }, batchSize: number, groupSize: number): number {
  if (batchSize <= 0) return 0;
  return (status.queue_size * groupSize) / batchSize;
}

/**
 * How far this worker's rollouts run ahead of the trainer, in trainer batches: the groups queued
 * for it (/status-env), the batches already formed but not yet delivered (`GET /batch` forms
 * every batch the queue allows at once and /status-env stops counting them), and the groups this
 * worker is still running (they will be queued). Each of these is sampled before the trainer
 * takes the batches ahead of it, so each is off-policy by the time it is trained on.
 */
export function offPolicyAhead(options: {
  queueSize: number;
  /** The largest queued group (/status-env's max_group_size), when the API says. */
  maxGroupSize?: number;
  formedBatches: number;
  inFlightGroups: number;
  batchSize: number;
  groupSize: number;
}): { total: number; queued: number; formed: number; inFlight: number } {
  const { batchSize, groupSize } = options;
  if (batchSize <= 0) return { total: 0, queued: 0, formed: 0, inFlight: 0 };
  // /status-env counts the queue in units of the env's group size as it grew to its largest
  // queued group (a rollout of two sequences makes a group of 8 rollouts hold up to 16), so
  // the queue is that many sequences per unit, not env.group_size: counted by the registered
  // size, the queue looked half as long and records ran twice as far ahead as off_policy_limit.
  const unit = Math.max(groupSize, options.maxGroupSize ?? 0);
  const queued = (options.queueSize * unit) / batchSize;
  const inFlight = (options.inFlightGroups * groupSize) / batchSize;
  const formed = options.formedBatches;
  return { total: queued + formed + inFlight, queued, formed, inFlight };
}
