// GET /metrics of the trajectory API: Prometheus text from the queue's counters and state and
// the transport's request counts.
import type { TrajectoryQueue } from './trajectory-queue.js';

export function metricsText(queue: TrajectoryQueue, requests: ReadonlyMap<string, number>): string {
  const { store, counters, settings } = queue;
  const lines: string[] = [];
  const metric = (name: string, type: string, help: string, samples: [string, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`);
  };
  const queuedSequences = store.queue.reduce((sum, group) => sum + group.size, 0);
  metric(
    'shears_api_requests_total',
    'counter',
    'HTTP requests by path and status.',
    [...requests].map(([key, value]) => [key, value]),
  );
  metric(
    'shears_api_groups_received_total',
    'counter',
    'Groups accepted by /scored_data and /scored_data_list.',
    [['', counters.groupsReceived]],
  );
  metric('shears_api_sequences_received_total', 'counter', 'Sequences accepted.', [
    ['', counters.sequencesReceived],
  ]);
  metric('shears_api_batches_served_total', 'counter', 'Batches delivered to trainers.', [
    ['', counters.batchesServed],
  ]);
  metric('shears_api_sequences_served_total', 'counter', 'Sequences delivered to trainers.', [
    ['', counters.sequencesServed],
  ]);
  metric(
    'shears_api_rejected_total',
    'counter',
    'Rejected submissions by reason.',
    [...counters.rejected].map(([reason, value]) => [`{reason="${reason}"}`, value]),
  );
  metric(
    'shears_api_idempotent_replays_total',
    'counter',
    'Retried POSTs answered from the idempotency record.',
    [['', counters.idempotentReplays]],
  );
  metric('shears_api_queue_groups', 'gauge', 'Groups waiting in the main queue.', [['', store.queue.length]]);
  metric('shears_api_queue_sequences', 'gauge', 'Sequences waiting in the main queue.', [
    ['', queuedSequences],
  ]);
  metric('shears_api_buffered_groups', 'gauge', 'Undersized groups waiting in env buffers.', [
    ['', queue.bufferedGroups()],
  ]);
  metric('shears_api_formed_batches', 'gauge', 'Formed batches not yet delivered.', [
    ['', store.formed.length],
  ]);
  metric('shears_api_stored_groups', 'gauge', 'Groups on disk.', [['', store.storedGroups]]);
  metric('shears_api_stored_bytes', 'gauge', 'Payload bytes on disk.', [['', store.storedBytes]]);
  metric('shears_api_queue_limit_groups', 'gauge', 'Stored-group limit before 429.', [
    ['', settings.maxQueuedGroups],
  ]);
  metric('shears_api_current_step', 'gauge', 'Trainer step (batches formed).', [['', store.run.step]]);
  metric('shears_api_registered_envs', 'gauge', 'Registered envs (connected or not).', [
    ['', store.run.envs.length],
  ]);
  metric('process_resident_memory_bytes', 'gauge', 'Resident memory of the server process.', [
    ['', process.memoryUsage().rss],
  ]);
  return `${lines.join('\n')}\n`;
}
