// One signal for one piece of work: it aborts when any of its sources does (with that source's
// reason) or when its time limit passes, and `dispose()` takes its listeners off the sources and
// clears its timer. Why not `AbortSignal.any` / `AbortSignal.timeout`: on Node 20 a signal made
// by `AbortSignal.any` stays reachable from a long-lived source (the run's stop signal) after
// the work is done, and a timeout signal cannot be cleared; per tool call that measured as
// ~2 KB of heap kept per call and half the agent loop's in-process speed
// (docs/decisions/closures-and-exports.md).

interface LinkedSignal {
  readonly signal: AbortSignal;
  /** True when the time limit, not a source, aborted the signal. */
  readonly timedOut: boolean;
  abort(reason?: unknown): void;
  /** Stops listening to the sources and clears the timer; call it when the work is done. */
  dispose(): void;
}

interface LinkSignalsOptions {
  timeoutMs?: number | undefined;
  /** The abort reason when the time limit passes (default: a `TimeoutError` DOMException, as `AbortSignal.timeout` gives). */
  timeoutReason?: () => unknown;
}

export function linkSignals(
  sources: ReadonlyArray<AbortSignal | undefined>,
  options: LinkSignalsOptions = {},
): LinkedSignal {
  const controller = new AbortController();
  const live = sources.filter((source): source is AbortSignal => source !== undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  // Once aborted, it lets go of the sources and the timer at once, disposed or not.
  const dispose = () => {
    if (timer !== undefined) clearTimeout(timer);
    for (const source of live) source.removeEventListener('abort', onAbort);
  };
  const onAbort = (event: Event) => {
    dispose();
    controller.abort((event.target as AbortSignal).reason);
  };
  const already = live.find((source) => source.aborted);
  if (already) controller.abort(already.reason);
  else {
    for (const source of live) source.addEventListener('abort', onAbort, { once: true });
    if (options.timeoutMs !== undefined)
      timer = setTimeout(() => {
        timedOut = true;
        dispose();
        controller.abort(
          options.timeoutReason
            ? options.timeoutReason()
            : new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
        );
      }, options.timeoutMs);
  }
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    abort: (reason?: unknown) => controller.abort(reason),
    dispose,
  };
}
