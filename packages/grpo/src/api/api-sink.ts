// TrajectorySinkV1 that pushes scored groups to an Atropos-compatible trajectory API, so core's
// group runner can feed a trainer directly. Dropped groups (all scores equal, nothing counted)
// are skipped; the env registers itself on first write when `register` is given.
import {
  AbortedError,
  type ScoredGroupRecord,
  ShearsError,
  type TokenizerV1,
  type TrajectorySinkV1,
  throwIfAborted,
} from '@shears/core';
import { scoredDataFromRecord } from '../advantages/scored-group.js';
import {
  createTrajectoryApiClient,
  type EnvRegistration,
  type TrajectoryApiClient,
  type TrajectoryApiClientSettings,
} from './trajectory-api-client.js';

export interface ApiSinkSettings extends Partial<TrajectoryApiClientSettings> {
  /** An existing client; otherwise one is created from `url` and the other client settings. */
  client?: TrajectoryApiClient;
  /** Env id to stamp on groups (from an earlier /register-env). */
  envId?: number | null;
  /** Register an env on first write (waits for the trainer to start) and use its id. */
  register?: EnvRegistration;
  /** Tokenises phase-1 rollouts that have no token record. */
  tokenizer?: TokenizerV1;
  /** Echo transcripts as `messages`. Default true. */
  includeMessages?: boolean;
}

export interface ApiSink extends TrajectorySinkV1 {
  /** Groups sent, and groups skipped because they were dropped or had no counted rollout. */
  readonly counts: { sent: number; skipped: number };
}

export function createApiSink(settings: ApiSinkSettings): ApiSink {
  if (!settings.client && !settings.url) {
    throw new ShearsError('createApiSink: give either `client` or `url` (e.g. http://127.0.0.1:8000)', {
      code: 'SHEARS_INVALID_ARGUMENT',
    });
  }
  const client = settings.client ?? createTrajectoryApiClient({ ...settings, url: settings.url as string });
  let envId: Promise<number | null> | undefined;
  const resolveEnvId = () => {
    envId ??= settings.register
      ? client.registerEnv(settings.register).then((result) => result.env_id)
      : Promise.resolve(settings.envId ?? null);
    return envId;
  };
  let closed = false;
  const pending = new Set<Promise<unknown>>();
  const counts = { sent: 0, skipped: 0 };
  return {
    specificationVersion: 'v1',
    id: 'atropos-api',
    counts,
    async write(group: ScoredGroupRecord, options = {}) {
      if (closed)
        throw new ShearsError('atropos-api sink: write after close', { code: 'SHEARS_SINK_CLOSED' });
      throwIfAborted(options.signal);
      const work = (async () => {
        const id = await resolveEnvId();
        const data = scoredDataFromRecord(group, {
          envId: id,
          tokenizer: settings.tokenizer,
          includeMessages: settings.includeMessages,
        });
        if (!data) {
          counts.skipped++;
          return;
        }
        // The group id makes a retried write after a lost answer harmless.
        await client.submit(data, {
          signal: options.signal,
          idempotencyKey: `${group.envId}:${group.groupId}`,
        });
        counts.sent++;
      })();
      pending.add(work);
      try {
        await work;
      } catch (error) {
        if (options.signal?.aborted && !AbortedError.isInstance(error))
          throw new AbortedError({ cause: error });
        throw error;
      } finally {
        pending.delete(work);
      }
    },
    async close() {
      closed = true;
      await Promise.allSettled([...pending]);
    },
  };
}
