// Ids in the styles the real APIs use (`chatcmpl-…`, `resp_…`, `msg_…`, `toolu_…`): prefix plus
// 24 hex characters of a random UUID.
import { randomUUID } from 'node:crypto';

export function randomId(prefix: string): string {
  return prefix + randomUUID().replaceAll('-', '').slice(0, 24);
}
