// `shears api`: run the Atropos-compatible trajectory API server until Ctrl-C.
import { resolve } from 'node:path';
import { startTrajectoryApiServer } from '@shears/grpo';
import type { CommandContext } from '../runtime.js';

export async function apiCommand(context: CommandContext): Promise<number> {
  const { api } = context.config;
  const server = await startTrajectoryApiServer({
    host: api.host,
    port: api.port,
    databasePath: api.database === ':memory:' ? ':memory:' : resolve(context.io.cwd, api.database),
    authToken: api.auth_token,
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
