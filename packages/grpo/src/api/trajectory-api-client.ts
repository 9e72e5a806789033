// Client for the Atropos trajectory API (shears' server or a real Atropos `run-api`): trainer
// and env registration (honouring "wait for trainer to start"), status, batches, and group
// submission gzipped, with idempotency keys. Every call goes through @shears/core/http: one
// exchange over node:http (/status-env is a GET with a JSON body, which fetch cannot send) and
// the one retry policy (backoff with jitter, Retry-After in every form, a long one not waited
// for); the run's stop signal ends any call and any wait at once.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import {
  InvalidArgumentError,
  type Logger,
  type ScoredData,
  ServerError,
  safeParseJson,
  silentLogger,
  throwIfAborted,
} from '@shears/core';
import {
  type HttpResponse,
  httpRequest,
  isRetryableStatus,
  parseRetryAfter,
  resolveRetrySettings,
  withRetries,
} from '@shears/core/http';
import { linkSignals } from '@shears/core/internal';
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
  /** A `Retry-After` longer than this is not waited for: the call fails at once, saying so. Default 60 s. */
  maxRetryAfterMs?: number;
  /** The run's stop signal: ends every call and every retry or polling wait at once (AbortedError). */
  signal?: AbortSignal;
  /** Per-request timeout. Default 120 s. */
  timeoutMs?: number;
  /** Bodies of at least this many bytes are gzipped when that makes them smaller (BaseEnv: 1024). */
  gzipThreshold?: number;
  /** Send an `Idempotency-Key` with each submission so retries cannot duplicate groups. Default true. */
  idempotencyKeys?: boolean;
  logger?: Logger;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  /** The clock an HTTP-date `Retry-After` is read against. */
  now?: () => number;
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

export interface TrajectoryApiClient {
  readonly url: string;
  /** Registers a trainer; the uuid is a 128-bit integer, returned as a decimal string. */
  registerTrainer(
    registration: TrainerRegistration,
    options?: { signal?: AbortSignal },
  ): Promise<{ uuid: string }>;
  /**
   * Registers an env, polling while the server says "wait for trainer to start" (each such
   * answer is reported to `onWait`), or throwing a retryable ServerError on the first one with
   * `wait: false`. A failure to reach the server (after the retries) always throws.
   */
  registerEnv(
    registration: EnvRegistration,
    options?: { wait?: boolean; pollMs?: number; signal?: AbortSignal; onWait?: (status: string) => void },
  ): Promise<EnvRegistrationResult>;
  disconnectEnv(envId: number): Promise<{ status: string; error?: string }>;
  info(options?: { signal?: AbortSignal }): Promise<{ batch_size: number; max_token_len: number }>;
  wandbInfo(): Promise<{ group: string | null; project: string | null }>;
  status(): Promise<{ current_step: number; queue_size: number }>;
  statusEnv(envId: number, options?: { signal?: AbortSignal }): Promise<EnvStatus>;
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
  const retry = resolveRetrySettings(
    {
      maxRetries: settings.retries,
      baseDelayMs: settings.initialBackoffMs,
      maxDelayMs: settings.maxBackoffMs,
      maxRetryAfterMs: settings.maxRetryAfterMs,
      sleep: settings.sleep,
      random: settings.random,
      now: settings.now,
    },
    { maxRetries: 5, baseDelayMs: 250, maxDelayMs: 10_000 },
  );
  const timeoutMs = settings.timeoutMs ?? 120_000;
  const gzipThreshold = settings.gzipThreshold ?? 1024;
  const root = base.href.endsWith('/') ? base.href : `${base.href}/`;

  /**
   * Runs `work` under one signal that aborts with the call's own or the run's stop signal
   * (linkSignals, not AbortSignal.any: on Node 20 the latter stays reachable from the long-lived
   * stop signal after every call).
   */
  async function stoppable<T>(
    signal: AbortSignal | undefined,
    work: (signal?: AbortSignal) => Promise<T>,
  ): Promise<T> {
    if (!signal || !settings.signal) return work(signal ?? settings.signal);
    const linked = linkSignals([signal, settings.signal]);
    try {
      return await work(linked.signal);
    } finally {
      linked.dispose();
    }
  }

  async function send(
    method: string,
    path: string,
    options: { signal?: AbortSignal; headers?: Record<string, string>; text?: string },
  ): Promise<HttpResponse> {
    const headers: Record<string, string> = { 'accept-encoding': 'gzip', ...options.headers };
    if (settings.authToken) headers.authorization = `Bearer ${settings.authToken}`;
    let payload: Buffer | undefined;
    if (options.text !== undefined) {
      payload = Buffer.from(options.text);
      headers['content-type'] = 'application/json';
      if (payload.length >= gzipThreshold) {
        const compressed = gzipSync(payload);
        if (compressed.length < payload.length) {
          payload = compressed;
          headers['content-encoding'] = 'gzip';
        }
      }
    }
    const what = `trajectory API ${method} ${path}`;
    const response = await httpRequest({
      url: new URL(path.replace(/^\//, ''), root),
      method,
      headers,
      body: payload,
      timeoutMs,
      signal: options.signal,
      what,
    });
    if (response.ok) return response;
    throw new ServerError({
      message: `${what} answered ${response.status}: ${response.body.toString('utf8').slice(0, 500)}`,
      endpoint: base.href,
      status: response.status,
      retryable: isRetryableStatus(response.status),
      retryAfterMs: parseRetryAfter(response.headers, retry.now()),
    });
  }

  /** One call with the retry policy; the text of its answer. */
  async function exchange(
    method: string,
    path: string,
    options: { signal?: AbortSignal; headers?: Record<string, string>; text?: string } = {},
  ): Promise<string> {
    const response = await stoppable(options.signal, (signal) => {
      throwIfAborted(signal);
      return withRetries(() => send(method, path, { ...options, signal }), retry, {
        signal,
        onRetry: (error, delayMs, attempt) =>
          logger.warn(
            `trajectory API ${method} ${path} failed (attempt ${attempt + 1}/${retry.maxRetries + 1}), retrying in ${Math.round(delayMs)} ms: ${error.message}`,
          ),
      });
    });
    return response.body.toString('utf8');
  }

  function parse<T>(text: string, what: string): T {
    const parsed = safeParseJson(text, { source: `trajectory API ${what} response` });
    if (!parsed.success) throw parsed.error;
    return parsed.value as T;
  }

  const call = async <T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> => {
    const text = await exchange(method, path, {
      signal,
      text: body === undefined ? undefined : JSON.stringify(body),
    });
    return parse<T>(text, `${method} ${path}`);
  };

  return {
    url: base.href.replace(/\/$/, ''),
    async registerTrainer(registration, options = {}) {
      const text = await exchange('POST', '/register', {
        signal: options.signal,
        text: JSON.stringify(registration),
      });
      // The uuid is a 128-bit integer: read its digits, JSON.parse would round it.
      const match = /"uuid"\s*:\s*(-?\d+)/.exec(text);
      if (!match?.[1])
        throw new ServerError({
          message: `trajectory API /register answered without a uuid: ${text.slice(0, 200)}`,
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
        options.onWait?.(result.status);
        await stoppable(options.signal, (signal) => retry.sleep(options.pollMs ?? 1000, signal));
      }
    },
    disconnectEnv: (envId) => call('POST', '/disconnect-env', { env_id: envId }),
    info: (options = {}) => call('GET', '/info', undefined, options.signal),
    wandbInfo: () => call('GET', '/wandb_info'),
    status: () => call('GET', '/status'),
    statusEnv: (envId, options = {}) => call('GET', '/status-env', { env_id: envId }, options.signal),
    async submit(groups, options = {}) {
      const list = Array.isArray(groups);
      const path = list ? '/scored_data_list' : '/scored_data';
      const key = options.idempotencyKey ?? (settings.idempotencyKeys === false ? undefined : randomUUID());
      const headers = key ? { 'idempotency-key': key } : undefined;
      // Floats spelled as Python writes them, so the server stores the body as sent.
      const text = wireJson(groups);
      const reply = await exchange('POST', path, { signal: options.signal, headers, text });
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
      await exchange('GET', '/reset_data');
    },
  };
}
