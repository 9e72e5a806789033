// TrajectorySink contract: where scored groups go (JSONL, a trajectory API, a replay buffer).
import type { ScoredGroupRecord } from '../schemas/group-record.js';

export interface TrajectorySinkV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  write(group: ScoredGroupRecord, options?: { signal?: AbortSignal }): Promise<void>;
  /** Flush and release; calling it twice is harmless. */
  close(): Promise<void>;
}
