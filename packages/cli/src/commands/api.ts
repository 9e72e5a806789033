// `shears api`: run the Atropos-compatible trajectory API server until Ctrl-C.
import { resolve } from 'node:path';
import { startTrajectoryApiServer, type TrajectoryApiServerSettings } from '@shears/grpo';
import type { ShearsConfig } from '../config/config-schema.js';
import type { CommandContext } from '../runtime.js';

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

export async function apiCommand(context: CommandContext): Promise<number> {
  const server = await startTrajectoryApiServer({
    ...trajectoryApiServerSettings(context.config.api, context.io.cwd),
    logger: context.logger,
  });
  context.io.stdout(`trajectory API listening on ${server.url}\n`);
  await new Promise<void>((done) => {
    if (context.signal.aborted) return done();
    context.signal.addEventListener('abort', () => done(), { once: true });
  });
  await server.close();
  context.io.stderr('trajectory API stopped\n');
  return 0;
}
