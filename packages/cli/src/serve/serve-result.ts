// What a serve loop did (`shears serve`, each of `train`'s workers), and how it is told: groups
// sent and not sent (by reason), pauses, how the API took them.
import type { GroupTally } from '../progress/progress.js';
import type { FailureCount, StoppedBy } from '../runtime/run-control.js';

export interface ServeResult {
  /** Groups the API acknowledged (fresh ones; replays are counted in `replaysSent`). */
  groupsSent: number;
  /** Replayed groups (loop.replay) the API acknowledged. */
  replaysSent: number;
  /** Groups finished but not sent, by the reason in words. */
  notSent: Record<string, number>;
  pauses: number;
  /** Rollouts that got a reward (sent or not). */
  scoredRollouts: number;
  stoppedBy: StoppedBy | undefined;
  failures: FailureCount[];
  /** Groups the API acknowledged but buffered (smaller than the env's group size; see postScoredData). */
  bufferedByApi: number;
  /** Groups with fewer sequences than env.group_size, sent without env_id so the API queues them. */
  sentWithoutEnvId: number;
  /** Every fresh group this loop finished, sent or not (replays are not counted again): the closing summary's tallies. */
  tally: GroupTally;
}

/** `sent 5 groups to URL; not sent: 2 (1 all scores equal, 1 no scored rollout); 1 pause`. */
type SentCounts = Pick<ServeResult, 'groupsSent' | 'replaysSent' | 'bufferedByApi' | 'sentWithoutEnvId'>;

/** What was sent ("N groups and M replayed groups") and how the API took it: serve's and train's summaries. */
export function describeSent(counts: SentCounts): { groups: string; notes: string } {
  return {
    groups: `${counts.groupsSent} groups${counts.replaysSent ? ` and ${counts.replaysSent} replayed groups` : ''}`,
    notes: `${counts.bufferedByApi ? ` (${counts.bufferedByApi} of them buffered by the API, not queued)` : ''}${counts.sentWithoutEnvId ? ` (${counts.sentWithoutEnvId} smaller than env.group_size, sent without env_id)` : ''}`,
  };
}

export function formatServeResult(result: ServeResult, url: string): string {
  const notSentTotal = Object.values(result.notSent).reduce((sum, count) => sum + count, 0);
  const reasons = Object.entries(result.notSent)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, count]) => `${count} ${reason}`)
    .join(', ');
  const sent = describeSent(result);
  return `sent ${sent.groups} to ${url}${sent.notes}; not sent: ${notSentTotal}${notSentTotal ? ` (${reasons})` : ''}; ${result.pauses} pause${result.pauses === 1 ? '' : 's'}`;
}
