// Errors of starting the trajectory API that a user can act on: each names the file or port
// and what to do, instead of a stack trace.
import { ShearsError } from '@shears/core';

/** The queue database is held by another trajectory API process. */
export class TrajectoryApiLockedError extends ShearsError {
  constructor(
    readonly databasePath: string,
    readonly owner: { pid?: number; host?: string; startedAt?: string } | undefined,
    cause?: unknown,
  ) {
    const who = owner?.pid
      ? `process ${owner.pid}${owner.host ? ` on ${owner.host}` : ''}${owner.startedAt ? `, started ${owner.startedAt}` : ''}`
      : 'another process';
    super(
      `The trajectory API queue ${databasePath} is in use by ${who}. Two servers must not share a queue: stop the other one, or give this one another file (api.database).`,
      { code: 'SHEARS_API_LOCKED', cause },
    );
  }
}

/** The queue database cannot be created or opened. */
export class TrajectoryApiDatabaseError extends ShearsError {
  constructor(
    readonly databasePath: string,
    reason: string,
    cause?: unknown,
  ) {
    super(`Cannot open the trajectory API queue ${databasePath}: ${reason}`, {
      code: 'SHEARS_API_DATABASE',
      cause,
    });
  }
}

/** The server cannot listen on its address. */
export class TrajectoryApiListenError extends ShearsError {
  constructor(
    readonly host: string,
    readonly port: number,
    reason: string,
    cause?: unknown,
  ) {
    super(`The trajectory API cannot listen on ${host}:${port}: ${reason}`, {
      code: 'SHEARS_API_LISTEN',
      cause,
    });
  }
}
