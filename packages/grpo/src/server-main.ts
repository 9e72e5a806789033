#!/usr/bin/env node
// Entry script that runs the trajectory API server in its own process (crash tests, benches,
// and anyone who wants `node server-main.js` without the CLI). Settings come from the
// environment: SHEARS_API_PORT, SHEARS_API_HOST, SHEARS_API_DB, SHEARS_API_SYNCHRONOUS,
// SHEARS_API_MAX_QUEUED_GROUPS, SHEARS_API_DECODE_WORKERS, SHEARS_API_TOKEN. Prints one JSON line
// `{"event":"listening","url":...}` on stdout once it accepts connections.
import { startTrajectoryApiServer } from './api/trajectory-api-server.js';

const environment = process.env;
const number = (name: string): number | undefined =>
  environment[name] === undefined ? undefined : Number(environment[name]);

const server = await startTrajectoryApiServer({
  host: environment.SHEARS_API_HOST ?? '127.0.0.1',
  port: number('SHEARS_API_PORT') ?? 8000,
  databasePath: environment.SHEARS_API_DB ?? 'shears-trajectory-api.sqlite',
  synchronous: (environment.SHEARS_API_SYNCHRONOUS as 'full' | 'normal' | undefined) ?? 'full',
  maxQueuedGroups: number('SHEARS_API_MAX_QUEUED_GROUPS'),
  decodeWorkers: number('SHEARS_API_DECODE_WORKERS'),
  authToken: environment.SHEARS_API_TOKEN || undefined,
});
process.stdout.write(`${JSON.stringify({ event: 'listening', url: server.url, pid: process.pid })}\n`);
const stop = () => {
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
