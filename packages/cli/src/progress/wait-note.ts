// A run that waits says so at once, and again every `everyMs` while it still waits, with what it
// waits for and for how long: a worker waiting for a trainer to register, or paused until the
// trainer takes batches, never sits silent.

/** `4.4s`, `45s`, `3m 05s`, `2h 01m`. */
export function formatWait(ms: number): string {
  if (ms < 9_950) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}

interface WaitNote {
  /**
   * Called on every poll while waiting: says `waiting for <what>` the first time (unless `said`:
   * the caller said it in its own words), then again every `everyMs`.
   */
  waiting(what: string, options?: { said?: boolean }): void;
  /** The wait is over; the milliseconds it lasted (undefined when there was none). */
  done(): number | undefined;
}

export function createWaitNote(options: {
  note: (text: string) => void;
  everyMs: number;
  now?: () => number;
}): WaitNote {
  const now = options.now ?? Date.now;
  let since: number | undefined;
  let last = 0;
  return {
    waiting(what, waitOptions) {
      const at = now();
      if (since === undefined) {
        since = at;
        last = at;
        if (!waitOptions?.said) options.note(`waiting for ${what}`);
      } else if (at - last >= options.everyMs) {
        last = at;
        options.note(`still waiting for ${what}: ${formatWait(at - since)} so far`);
      }
    },
    done() {
      const lasted = since === undefined ? undefined : now() - since;
      since = undefined;
      return lasted;
    },
  };
}
