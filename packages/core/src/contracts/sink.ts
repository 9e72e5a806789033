// TrajectorySink contract: where scored groups go (JSONL, a trajectory API, a replay buffer, a
// tracker). A run opens its sinks once, writes every group it finishes to each of them (redacted:
// a sink never sees a secret the run knows), and closes them when it ends, saying whether it ended
// early. `open`, `flush` and the write receipt were added to v1 without changing what a v1 sink
// must do: a sink with only `write` and `close` is still a whole v1 sink.
import type { ScoredGroupRecord } from '../schemas/group-record.js';

export interface SinkOpenOptions {
  /**
   * The run continues an earlier run of the same configuration (`--resume`): `kept` are the groups
   * of that run it keeps, in order. A sink that stores a run's groups (a file) keeps exactly these
   * of what it holds for the run and adds the new ones after them, never rewriting in place; a sink
   * that forwards groups (an API) sent them already and sends nothing again. Absent: a new run.
   */
  resume?: { kept: readonly ScoredGroupRecord[] };
  signal?: AbortSignal;
}

/** What a sink did with a group, when it did not simply take it. */
export interface SinkWriteReceipt {
  /** false: the sink left this group out on purpose (not an error); `reason` says why, in words. */
  accepted: boolean;
  reason?: string;
}

export interface SinkCloseOptions {
  /**
   * The run ended before it was done (interrupted, stopped by the circuit breaker): what the sink
   * received is part of a run. Groups cut off mid-way are marked in the record itself (`partial`).
   */
  incomplete?: boolean;
}

export interface TrajectorySinkV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  /**
   * Called once before the first write, when the run starts writing (optional: a sink without it
   * gets the first write unannounced). Create files and connections here, so a sink that cannot
   * work fails before any group is spent.
   */
  open?(options?: SinkOpenOptions): Promise<void>;
  /**
   * Takes one group. Writes may come concurrently; none may be lost. Resolves once the group is
   * stored or sent (or deliberately left out: a receipt with `accepted: false`).
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a sink with nothing to say resolves with void, as v1 sinks always did
  write(group: ScoredGroupRecord, options?: { signal?: AbortSignal }): Promise<void | SinkWriteReceipt>;
  /** Makes what was written so far durable (optional; close does it too). */
  flush?(): Promise<void>;
  /** Flush and release; calling it twice is harmless, and a write after it is refused. */
  close(options?: SinkCloseOptions): Promise<void>;
}
