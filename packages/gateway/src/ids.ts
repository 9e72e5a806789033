// Ids in the styles the real APIs use (`chatcmpl-…`, `resp_…`, `msg_…`, `toolu_…`): prefix plus
// 24 hex characters of a random UUID.
import { randomUUID } from 'node:crypto';

export function randomId(prefix: string): string {
  // The first 24 hex digits of the UUID (8-4-4-4-12), sliced around the dashes.
  const uuid = randomUUID();
  return (
    prefix +
    uuid.slice(0, 8) +
    uuid.slice(9, 13) +
    uuid.slice(14, 18) +
    uuid.slice(19, 23) +
    uuid.slice(24, 28)
  );
}
