// `shears api`: run the Atropos-compatible trajectory API server until Ctrl-C. The queue file
// (api.database) is resolved against the working directory — under `pnpm shears` that is the
// repository root — so its absolute path is printed at start, with what an earlier run left.
import { startTrajectoryApiServer, type TrajectoryApiServer } from '@shears/grpo';
import { trajectoryApiServerSettings } from '../plan/api-plan.js';
import type { CommandContext } from '../session.js';

/** "3 h 5 min" from milliseconds. */
function describeAge(milliseconds: number): string {
  const minutes = Math.floor(Math.max(0, milliseconds) / 60_000);
  if (minutes < 1) return `${Math.max(0, Math.round(milliseconds / 1000))} s`;
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
  return `${Math.floor(hours / 24)} d${hours % 24 ? ` ${hours % 24} h` : ''}`;
}

/** The lines `shears api` prints about its queue file: where it is, and what an earlier run left in it. */
function describeQueueDatabase(database: TrajectoryApiServer['database'], now: number = Date.now()): string {
  if (database.path === ':memory:')
    return 'queue database: in memory (api.database ":memory:"; nothing is kept)\n';
  const { resumed } = database;
  if (resumed.groups === 0 && resumed.formedBatches === 0)
    return `queue database: ${database.path} (empty)\n`;
  const age =
    resumed.oldestReceivedAt === null
      ? 'age unknown'
      : `oldest received ${describeAge(now - resumed.oldestReceivedAt)} ago`;
  return (
    `queue database: ${database.path}\n` +
    `resumed a non-empty queue from an earlier run: ${resumed.groups} group${resumed.groups === 1 ? '' : 's'} ` +
    `(${resumed.queued} queued, ${resumed.buffered} buffered, ${resumed.formedBatches} formed batch${resumed.formedBatches === 1 ? '' : 'es'} not yet served; ${age}). ` +
    'GET /reset_data empties it; api.database names another file.\n'
  );
}

export async function apiCommand(context: CommandContext): Promise<number> {
  const server = await startTrajectoryApiServer({
    ...trajectoryApiServerSettings(context.config.api, context.io.cwd),
    logger: context.logger,
  });
  context.io.stdout(describeQueueDatabase(server.database));
  context.io.stdout(`trajectory API listening on ${server.url}\n`);
  await new Promise<void>((done) => {
    if (context.signal.aborted) return done();
    context.signal.addEventListener('abort', () => done(), { once: true });
  });
  await server.close();
  context.io.stderr('trajectory API stopped\n');
  return 0;
}
