// The one way a run's groups leave it: every finished group is redacted once (value by value, so it
// stays valid) and written, in the order the run finished them, to each of the run's trajectory
// sinks (TrajectorySinkV1): its JSONL, the sinks the config names (`sinks`), W&B's rollouts
// table. A sink that fails fails the run, naming the sink; nothing is written past a secret.
import type { ScoredGroupRecord, TrajectorySinkV1 } from '@shears/core';
import type { Redactor } from '../redact.js';

/** A sink of the run, with how its errors are told (the run's JSONL names its file, a plugin's sink its field). */
interface RunSink {
  sink: TrajectorySinkV1;
  /** `sinks[0] (my-sink)`: prefixed to the sink's own errors. */
  label: string;
  /** Turns the sink's error into the one the user sees (default: `label: message`). */
  error?: (error: unknown) => unknown;
}

interface RunSinks {
  /** Opens every sink, in order; a resumed run hands over the groups it keeps (redacted). */
  open(options: { kept?: readonly ScoredGroupRecord[]; signal?: AbortSignal }): Promise<void>;
  /** Writes one finished group to every sink; resolves with the redacted group once all took it. */
  write(record: ScoredGroupRecord): Promise<ScoredGroupRecord>;
  /** Closes every sink, in order (each even when another failed), saying whether the run ended early. */
  close(options: { incomplete: boolean }): Promise<void>;
}

function labelled(entry: RunSink, error: unknown): unknown {
  if (entry.error) return entry.error(error);
  if (error instanceof Error) {
    error.message = `${entry.label}: ${error.message}`;
    return error;
  }
  return new Error(`${entry.label}: ${String(error)}`);
}

export function createRunSinks(sinks: readonly RunSink[], redact: Redactor): RunSinks {
  // One queue: every sink sees the groups in the same order, whichever worker finished them.
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  return {
    async open(options) {
      const kept = options.kept?.map((record) => redact.value(record));
      for (const entry of sinks) {
        try {
          await entry.sink.open?.({
            ...(kept ? { resume: { kept } } : {}),
            ...(options.signal ? { signal: options.signal } : {}),
          });
        } catch (error) {
          throw labelled(entry, error);
        }
      }
    },
    write(record) {
      const safe = redact.value(record);
      const next = queue.then(async () => {
        for (const entry of sinks) {
          try {
            await entry.sink.write(safe);
          } catch (error) {
            throw labelled(entry, error);
          }
        }
        return safe;
      });
      queue = next.catch(() => undefined);
      return next;
    },
    async close(options) {
      if (closed) return;
      closed = true;
      await queue;
      let first: unknown;
      for (const entry of sinks) {
        try {
          await entry.sink.close({ incomplete: options.incomplete });
        } catch (error) {
          first ??= labelled(entry, error);
        }
      }
      if (first !== undefined) throw first;
    },
  };
}
