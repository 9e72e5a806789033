// Client for the Atropos trajectory API (shears' server or a real Atropos `run-api`): trainer
// and env registration (honouring "wait for trainer to start"), status, batches, and group
// submission gzipped with retries (exponential backoff, Retry-After, idempotency keys).
// Uses node:http because /status-env is a GET with a JSON body, which fetch cannot send.
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  AbortedError,
  InvalidArgumentError,
  type Logger,
  type ScoredData,
  ServerError,
  safeParseJson,
  silentLogger,
  throwIfAborted,
} from '@shears/core';
import { sleep as abortableSleep } from '@shears/core/internal';
import type { EnvStatus } from './batching.js';
import { wireJson } from './wire-json.js';

export interface TrajectoryApiClientSettings {
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** Bearer token for servers started with one. */
  authToken?: string;
  /** Attempts after the first for retryable failures (network, 5xx, 429). Default 5. */
  retries?: number;
  /** First backoff delay; doubles per attempt with jitter. Default 250 ms. */
  initialBackoffMs?: number;
  /** Longest backoff delay. Default 10 s. */
  maxBackoffMs?: number;
  /** Per-request timeout. Default 120 s. */
  timeoutMs?: number;
  /** Bodies of at least this many bytes are gzipped when that makes them smaller (BaseEnv: 1024). */
  gzipThreshold?: number;
  /** Send an `Idempotency-Key` with each submission so retries cannot duplicate groups. Default true. */
  idempotencyKeys?: boolean;
  logger?: Logger;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

export interface TrainerRegistration {
  wandb_group: string;
  wandb_project: string;
  batch_size: number;
  max_token_len: number;
  checkpoint_dir: string;
  save_checkpoint_interval: number;
  starting_step: number;
  num_steps: number;
}

export interface EnvRegistration {
  maxTokenLength: number;
  desiredName: string;
  weight?: number;
  groupSize: number;
  minBatchAllocation?: number | null;
}

export interface EnvRegistrationResult {
  status: 'success';
  env_id: number;
  wandb_name: string;
  checkpoint_dir: string | null;
  starting_step: number;
  checkpoint_interval: number | null;
  num_steps: number;
}

export interface SubmitResult {
  status: string;
  buffer_size?: number;
  groups_processed?: number;
  buffered?: number;
  last_buffer_size?: number;
}

interface Reply {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface TrajectoryApiClient {
  readonly url: string;
  /** Registers a trainer; the uuid is a 128-bit integer, returned as a decimal string. */
  registerTrainer(
    registration: TrainerRegistration,
    options?: { signal?: AbortSignal },
  ): Promise<{ uuid: string }>;
  /** Registers an env, polling while the server says "wait for trainer to start" (unless `wait: false`). */
  registerEnv(
    registration: EnvRegistration,
    options?: { wait?: boolean; pollMs?: number; signal?: AbortSignal },
  ): Promise<EnvRegistrationResult>;
  disconnectEnv(envId: number): Promise<{ status: string; error?: string }>;
  info(): Promise<{ batch_size: number; max_token_len: number }>;
  wandbInfo(): Promise<{ group: string | null; project: string | null }>;
  status(): Promise<{ current_step: number; queue_size: number }>;
  statusEnv(envId: number): Promise<EnvStatus>;
  /** POSTs one group (`/scored_data`) or several (`/scored_data_list`). */
  submit(
    groups: ScoredData | ScoredData[],
    options?: { signal?: AbortSignal; idempotencyKey?: string },
  ): Promise<SubmitResult>;
  /** One trainer batch, or null when none is ready. Throws when the trainer is not registered. */
  batch(options?: { signal?: AbortSignal }): Promise<ScoredData[] | null>;
  latestExample(): Promise<Record<string, unknown>>;
  resetData(): Promise<void>;
}

export function createTrajectoryApiClient(settings: TrajectoryApiClientSettings): TrajectoryApiClient {
  let base: URL;
  try {
    base = new URL(settings.url);
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'url',
      value: settings.url,
      message: `trajectory API client: "${settings.url}" is not a URL (e.g. http://127.0.0.1:8000)`,
      cause: error,
    });
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new InvalidArgumentError({
      argument: 'url',
      value: settings.url,
      message: `trajectory API client: protocol must be http: or https:, got ${base.protocol}`,
    });
  }
  const logger = settings.logger ?? silentLogger;
  const sleep = settings.sleep ?? abortableSleep;
  const random = settings.random ?? Math.random;
  const retries = settings.retries ?? 5;
  const timeoutMs = settings.timeoutMs ?? 120_000;
  const gzipThreshold = settings.gzipThreshold ?? 1024;

  function send(
    method: string,
    path: string,
    body: unknown,
    options: { signal?: AbortSignal; headers?: Record<string, string>; text?: string } = {},
  ): Promise<Reply> {
    throwIfAborted(options.signal);
    const url = new URL(path.replace(/^\//, ''), base.href.endsWith('/') ? base.href : `${base.href}/`);
    const headers: Record<string, string> = { 'accept-encoding': 'gzip', ...(options.headers ?? {}) };
    if (settings.authToken) headers.authorization = `Bearer ${settings.authToken}`;
    let payload: Buffer | undefined;
    if (body !== undefined || options.text !== undefined) {
      payload = Buffer.from(options.text ?? JSON.stringify(body));
      headers['content-type'] = 'application/json';
      if (payload.length >= gzipThreshold) {
        const compressed = gzipSync(payload);
        if (compressed.length < payload.length) {
          payload = compressed;
          headers['content-encoding'] = 'gzip';
        }
      }
      headers['content-length'] = String(payload.length);
    }
    const requester = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Reply>((resolve, reject) => {
      const req = requester(url, { method, headers, signal: options.signal, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          try {
            let raw = Buffer.concat(chunks);
            if (/gzip/i.test(String(res.headers['content-encoding'] ?? ''))) raw = gunzipSync(raw);
            resolve({ status: res.statusCode ?? 0, text: raw.toString('utf8'), headers: res.headers });
          } catch (error) {
            reject(error);
          }
        });
      });
      req.on('timeout', () =>
        req.destroy(
          new ServerError({
            message: `trajectory API ${method} ${path} timed out after ${timeoutMs} ms`,
            endpoint: url.href,
          }),
        ),
      );
      req.on('error', (error) =>
        reject(options.signal?.aborted ? new AbortedError({ cause: error }) : error),
      );
      req.end(payload);
    });
  }

  function parse<T>(reply: Reply, what: string): T {
    const parsed = safeParseJson(reply.text, { source: `trajectory API ${what} response` });
    if (!parsed.success) throw parsed.error;
    return parsed.value as T;
  }

  function failure(reply: Reply, what: string): ServerError {
    const retryAfter = Number(reply.headers['retry-after']);
    return new ServerError({
      message: `trajectory API ${what} answered ${reply.status}: ${reply.text.slice(0, 500)}`,
      endpoint: base.href,
      status: reply.status,
      retryable: reply.status >= 500 || reply.status === 429 || reply.status === 408,
      retryAfterMs: Number.isFinite(retryAfter) ? retryAfter * 1000 : undefined,
    });
  }

  async function withRetries(
    what: string,
    signal: AbortSignal | undefined,
    attempt: () => Promise<Reply>,
  ): Promise<Reply> {
    for (let tries = 0; ; tries++) {
      let error: unknown;
      try {
        const reply = await attempt();
        if (reply.status >= 200 && reply.status < 300) return reply;
        error = failure(reply, what);
      } catch (caught) {
        if (AbortedError.isInstance(caught)) throw caught;
        error = caught;
      }
      const retryable = !ServerError.isInstance(error) || error.retryable;
      if (!retryable || tries >= retries) throw error;
      const backoff =
        Math.min(settings.maxBackoffMs ?? 10_000, (settings.initialBackoffMs ?? 250) * 2 ** tries) *
        (0.5 + random() / 2);
      const wait =
        ServerError.isInstance(error) && error.retryAfterMs !== undefined
          ? Math.max(error.retryAfterMs, backoff)
          : backoff;
      logger.warn(
        `trajectory API ${what} failed (attempt ${tries + 1}/${retries + 1}), retrying in ${Math.round(wait)} ms: ${(error as Error).message}`,
      );
      await sleep(wait, signal);
    }
  }

  const call = async <T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> => {
    const reply = await withRetries(`${method} ${path}`, signal, () => send(method, path, body, { signal }));
    return parse<T>(reply, `${method} ${path}`);
  };

  return {
    url: base.href.replace(/\/$/, ''),
    async registerTrainer(registration, options = {}) {
      const reply = await withRetries('POST /register', options.signal, () =>
        send('POST', '/register', registration, { signal: options.signal }),
      );
      // The uuid is a 128-bit integer: read its digits, JSON.parse would round it.
      const match = /"uuid"\s*:\s*(-?\d+)/.exec(reply.text);
      if (!match?.[1])
        throw new ServerError({
          message: `trajectory API /register answered without a uuid: ${reply.text.slice(0, 200)}`,
          endpoint: base.href,
          retryable: false,
        });
      return { uuid: match[1] };
    },
    async registerEnv(registration, options = {}) {
      const body = {
        max_token_length: registration.maxTokenLength,
        desired_name: registration.desiredName,
        weight: registration.weight ?? 1.0,
        group_size: registration.groupSize,
        min_batch_allocation: registration.minBatchAllocation ?? null,
      };
      for (;;) {
        const result = await call<{ status: string } & Partial<EnvRegistrationResult>>(
          'POST',
          '/register-env',
          body,
          options.signal,
        );
        if (result.status === 'success') return result as EnvRegistrationResult;
        if (options.wait === false)
          throw new ServerError({
            message: `trajectory API /register-env answered "${result.status}"`,
            endpoint: base.href,
            retryable: true,
          });
        logger.debug(`trajectory API: ${result.status}; polling again`);
        await sleep(options.pollMs ?? 1000, options.signal);
      }
    },
    disconnectEnv: (envId) => call('POST', '/disconnect-env', { env_id: envId }),
    info: () => call('GET', '/info'),
    wandbInfo: () => call('GET', '/wandb_info'),
    status: () => call('GET', '/status'),
    statusEnv: (envId) => call('GET', '/status-env', { env_id: envId }),
    async submit(groups, options = {}) {
      const list = Array.isArray(groups);
      const path = list ? '/scored_data_list' : '/scored_data';
      const key = options.idempotencyKey ?? (settings.idempotencyKeys === false ? undefined : randomUUID());
      const headers = key ? { 'idempotency-key': key } : undefined;
      // Floats spelled as Python writes them, so the server stores the body as sent.
      const text = wireJson(groups);
      const reply = await withRetries(`POST ${path}`, options.signal, () =>
        send('POST', path, undefined, { signal: options.signal, headers, text }),
      );
      return parse<SubmitResult>(reply, `POST ${path}`);
    },
    async batch(options = {}) {
      const result = await call<{ batch: ScoredData[] | null; status?: string; message?: string }>(
        'GET',
        '/batch',
        undefined,
        options.signal,
      );
      if (result.status === 'error')
        throw new ServerError({
          message: `trajectory API /batch: ${result.message ?? 'error'}`,
          endpoint: base.href,
          retryable: false,
        });
      return result.batch && result.batch.length > 0 ? result.batch : null;
    },
    latestExample: () => call('GET', '/latest_example'),
    async resetData() {
      await withRetries('GET /reset_data', undefined, () => send('GET', '/reset_data', undefined));
    },
  };
}
