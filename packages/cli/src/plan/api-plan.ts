// The `api` section as the trajectory API server (@shears/grpo) takes it: `shears api`, and
// `shears train` with train.start_api.
import { resolve } from 'node:path';
import type { TrajectoryApiServerSettings } from '@shears/grpo';
import type { ShearsConfig } from '../config/config-schema.js';

/** The server settings of the `api` config section (shared by `shears api` and `shears train`). */
export function trajectoryApiServerSettings(
  api: ShearsConfig['api'],
  cwd: string,
): Omit<TrajectoryApiServerSettings, 'logger'> {
  return {
    host: api.host,
    port: api.port,
    databasePath: api.database === ':memory:' ? ':memory:' : resolve(cwd, api.database),
    synchronous: api.synchronous,
    maxQueuedGroups: api.max_queued_groups,
    maxQueuedBytes: api.max_queued_bytes,
    maxRequestBytes: api.max_request_bytes,
    retryAfterSeconds: api.retry_after_seconds,
    splitGroups: api.split_groups,
    batchOrder: api.batch_order,
    authToken: api.auth_token,
  };
}
