// A server manager: one ServerV1 over several endpoints (OpenAI-compatible, vLLM or SGLang).
// It routes each call to the least-busy endpoint that is within its concurrency and rate
// limits (requests and tokens per minute), fails over to another endpoint when one fails in a
// way a retry may fix, and keeps failing endpoints out through a circuit breaker that cheap
// health probes (GET /v1/models or /health, with backoff) close again — no completion is
// spent to check health. Managed sessions route every turn independently: the token record is
// kept client-side, so a rollout survives an endpoint going away.
import {
  AbortedError,
  type ChatRequest,
  type ChatResponse,
  InvalidArgumentError,
  messageText,
  ServerError,
  type ServerV1,
} from '@shears/core';
import { backoffDelayMs, type RetrySettings, resolveRetrySettings } from '@shears/core/http';
import type { GenerateBackend, GeneratedSequence, GenerateRequest } from './generate-backends.js';
import {
  createManagedServer,
  createSglangServer,
  createVllmServer,
  type ManagedServer,
  type ManagedServerSettings,
  type ManagedSession,
  type SglangServerSettings,
  type VllmServerSettings,
} from './managed-server.js';
import {
  createOpenAICompatibleServer,
  type OpenAICompatibleServerSettings,
} from './openai-compatible-server.js';

export interface EndpointLimits {
  /** Name in logs and errors (default: the endpoint's URL or `endpoint-N`). */
  id?: string;
  /** Calls in flight at once (default 16). */
  maxConcurrency?: number;
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  /** Probe URL; default GET {baseUrl}/models for OpenAI-compatible, {origin}/health for vLLM/SGLang. */
  healthUrl?: string;
}

export type ManagerEndpoint = EndpointLimits &
  (
    | { server: ServerV1 }
    | ({ kind: 'openai' } & OpenAICompatibleServerSettings)
    | ({ kind: 'vllm' } & VllmServerSettings)
    | ({ kind: 'sglang' } & SglangServerSettings)
  );

export interface ServerManagerSettings {
  endpoints: ManagerEndpoint[];
  /** Consecutive retryable failures that open an endpoint's circuit (default 3). */
  failureThreshold?: number;
  /** How long an open circuit keeps an endpoint out before a probe (default 5 s; doubles while probes fail, up to 60 s). */
  cooldownMs?: number;
  /** Periodic probe of every endpoint (default 0 = only probe endpoints whose circuit is open). */
  healthIntervalMs?: number;
  healthTimeoutMs?: number;
  /** Attempts over all endpoints per call (default: endpoints + 2). Backoff between full rounds. */
  maxAttempts?: number;
  /** Width of the rate-limit window (default 60 s). */
  rateWindowMs?: number;
  /** Backoff between full rounds; `maxRetryAfterMs` (default 60 s) is the longest a rate-limited endpoint is kept out. */
  retry?: Pick<RetrySettings, 'baseDelayMs' | 'maxDelayMs' | 'maxRetryAfterMs' | 'random' | 'sleep'>;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
}

export interface EndpointStatus {
  id: string;
  inFlight: number;
  state: 'closed' | 'open' | 'half-open';
  consecutiveFailures: number;
  requests: number;
  failures: number;
}

export interface ServerManager extends ServerV1 {
  /** Present when every endpoint is a managed (vLLM/SGLang) server. */
  openSession?(options: { rolloutId: string }): ManagedSession;
  status(): EndpointStatus[];
  /**
   * Probes every endpoint now; resolves to the ids that answered. The answers move the
   * circuits as periodic probes do: an endpoint that does not answer is taken out (open); an
   * open one that answers goes half-open (the next real call decides).
   */
  checkHealth(): Promise<string[]>;
  close(): Promise<void>;
}

interface Endpoint {
  id: string;
  server: ServerV1;
  healthUrl: string | undefined;
  maxConcurrency: number;
  requestsPerMinute: number | undefined;
  tokensPerMinute: number | undefined;
  inFlight: number;
  /** Start times and token counts within the rate window. */
  window: Array<{ at: number; tokens: number }>;
  state: 'closed' | 'open' | 'half-open';
  consecutiveFailures: number;
  openUntil: number;
  cooldownMs: number;
  probeTimer: NodeJS.Timeout | undefined;
  /** Not before this time (a 429's Retry-After). */
  notBefore: number;
  requests: number;
  failures: number;
}

function createEndpointServer(
  endpoint: ManagerEndpoint,
  fetchImpl: typeof globalThis.fetch | undefined,
): ServerV1 {
  if ('server' in endpoint) return endpoint.server;
  // Endpoints made here do not retry on their own: the manager retries across endpoints.
  const noRetry = { maxRetries: 0 };
  const withFetch = <T extends { fetch?: typeof globalThis.fetch; retry?: RetrySettings }>(
    settings: T,
  ): T => ({
    ...settings,
    fetch: settings.fetch ?? fetchImpl,
    retry: { ...settings.retry, ...noRetry },
  });
  switch (endpoint.kind) {
    case 'openai':
      return createOpenAICompatibleServer(withFetch(endpoint));
    case 'vllm':
      return createVllmServer(withFetch(endpoint));
    case 'sglang':
      return createSglangServer(withFetch(endpoint));
    default:
      throw new InvalidArgumentError({
        argument: 'endpoints[].kind',
        value: (endpoint as { kind?: unknown }).kind,
        message: `createServerManager: unknown endpoint kind ${JSON.stringify((endpoint as { kind?: unknown }).kind)} (available: openai, vllm, sglang, or pass { server })`,
      });
  }
}

function defaultHealthUrl(endpoint: ManagerEndpoint, server: ServerV1): string | undefined {
  if (endpoint.healthUrl) return endpoint.healthUrl;
  if ('healthUrl' in server && typeof (server as ManagedServer).healthUrl === 'string')
    return (server as ManagedServer).healthUrl;
  if ('kind' in endpoint && endpoint.kind === 'openai')
    return `${endpoint.baseUrl.replace(/\/+$/, '')}/models`;
  return undefined;
}

function estimateTokens(request: ChatRequest): number {
  const characters = request.messages.reduce((sum, message) => sum + messageText(message).length, 0);
  return Math.ceil(characters / 4) + (request.maxTokens ?? 0);
}

/**
 * Managed sessions render prompts, split reasoning and parse tool calls once, client-side, with
 * the first endpoint's settings, whichever endpoint generates: endpoints that disagree would
 * silently be treated as the first. Refuse that up front, naming the endpoints on each side.
 */
function checkSessionSettingsAgree(endpoints: readonly Endpoint[]): void {
  const aspects: Array<[string, (settings: ManagedServerSettings) => string]> = [
    ['tokenizer', (settings) => JSON.stringify(settings.tokenizer?.id ?? null)],
    ['parser', (settings) => JSON.stringify(settings.parser?.id ?? null)],
    ['reasoning', (settings) => JSON.stringify(settings.reasoning ?? 'default')],
    ['templateVariables', (settings) => stableJson(settings.templateVariables ?? {})],
  ];
  const problems: string[] = [];
  for (const [aspect, describe] of aspects) {
    const groups = new Map<string, string[]>();
    for (const endpoint of endpoints) {
      const value = describe((endpoint.server as ManagedServer).settings);
      groups.set(value, [...(groups.get(value) ?? []), endpoint.id]);
    }
    if (groups.size > 1)
      problems.push(
        `${aspect} ${[...groups].map(([value, ids]) => `${value} (${ids.join(', ')})`).join(' vs ')}`,
      );
  }
  if (problems.length > 0) {
    throw new InvalidArgumentError({
      argument: 'endpoints',
      value: endpoints.map((endpoint) => endpoint.id),
      message: `createServerManager: managed endpoints must share one tokenizer, parser, reasoning markers and template variables (sessions use them for every endpoint), but they differ: ${problems.join('; ')}`,
    });
  }
}

function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

export function createServerManager(settings: ServerManagerSettings): ServerManager {
  if (!settings || !Array.isArray(settings.endpoints) || settings.endpoints.length === 0) {
    throw new InvalidArgumentError({
      argument: 'endpoints',
      value: settings?.endpoints,
      message:
        'createServerManager: "endpoints" must list at least one endpoint ({ kind: "openai" | "vllm" | "sglang", ... } or { server })',
    });
  }
  const now = settings.now ?? Date.now;
  const fetchImpl = settings.fetch ?? globalThis.fetch;
  const failureThreshold = settings.failureThreshold ?? 3;
  const baseCooldownMs = settings.cooldownMs ?? 5_000;
  const rateWindowMs = settings.rateWindowMs ?? 60_000;
  const healthTimeoutMs = settings.healthTimeoutMs ?? 5_000;
  const backoff = resolveRetrySettings(settings.retry);
  let closed = false;

  const endpoints: Endpoint[] = settings.endpoints.map((config, index) => {
    const server = createEndpointServer(config, settings.fetch);
    const healthUrl = defaultHealthUrl(config, server);
    return {
      id: config.id ?? healthUrl?.replace(/\/(health|models)$/, '') ?? `endpoint-${index}`,
      server,
      healthUrl,
      maxConcurrency: config.maxConcurrency ?? 16,
      requestsPerMinute: config.requestsPerMinute,
      tokensPerMinute: config.tokensPerMinute,
      inFlight: 0,
      window: [],
      state: 'closed',
      consecutiveFailures: 0,
      openUntil: 0,
      cooldownMs: baseCooldownMs,
      probeTimer: undefined,
      notBefore: 0,
      requests: 0,
      failures: 0,
    };
  });
  const maxAttempts = settings.maxAttempts ?? endpoints.length + 2;

  // Wakes callers waiting for a slot or a rate window.
  let wakers: Array<() => void> = [];
  const wakeAll = () => {
    const current = wakers;
    wakers = [];
    for (const wake of current) wake();
  };

  const probe = async (endpoint: Endpoint): Promise<boolean> => {
    if (!endpoint.healthUrl) return true;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), healthTimeoutMs);
    try {
      const response = await fetchImpl(endpoint.healthUrl, { method: 'GET', signal: controller.signal });
      await response.arrayBuffer().catch(() => undefined);
      return response.ok;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  };

  const scheduleProbe = (endpoint: Endpoint) => {
    if (closed || endpoint.probeTimer) return;
    endpoint.probeTimer = setTimeout(
      async () => {
        endpoint.probeTimer = undefined;
        if (closed || endpoint.state !== 'open') return;
        if (await probe(endpoint)) {
          // Alive again: let one real call through to confirm.
          endpoint.state = 'half-open';
          wakeAll();
        } else {
          endpoint.cooldownMs = Math.min(endpoint.cooldownMs * 2, 60_000);
          endpoint.openUntil = now() + endpoint.cooldownMs;
          scheduleProbe(endpoint);
        }
      },
      Math.max(0, endpoint.openUntil - now()),
    );
    endpoint.probeTimer.unref?.();
  };

  /**
   * What a health probe's answer means for the circuit, wherever the probe came from (periodic,
   * `checkHealth()`): an endpoint that does not answer is taken out (open, with the usual
   * backoff probes); an open endpoint that answers again goes half-open, so one real call
   * confirms it before it takes full load. A closed endpoint that answers stays as it is (its
   * failure count belongs to real calls).
   */
  const applyProbe = (endpoint: Endpoint, ok: boolean) => {
    if (closed) return;
    if (!ok && endpoint.state !== 'open') {
      endpoint.state = 'open';
      endpoint.openUntil = now() + endpoint.cooldownMs;
      scheduleProbe(endpoint);
    } else if (ok && endpoint.state === 'open') {
      if (endpoint.probeTimer) clearTimeout(endpoint.probeTimer);
      endpoint.probeTimer = undefined;
      endpoint.state = 'half-open';
      wakeAll();
    }
  };

  const recordSuccess = (endpoint: Endpoint) => {
    endpoint.consecutiveFailures = 0;
    endpoint.cooldownMs = baseCooldownMs;
    endpoint.state = 'closed';
  };

  const recordFailure = (endpoint: Endpoint) => {
    endpoint.failures++;
    endpoint.consecutiveFailures++;
    if (endpoint.state === 'half-open' || endpoint.consecutiveFailures >= failureThreshold) {
      endpoint.state = 'open';
      endpoint.openUntil = now() + endpoint.cooldownMs;
      scheduleProbe(endpoint);
    }
  };

  /** Milliseconds until the endpoint may take a call of `tokens` (0 = now; Infinity = not now, wait for an event). */
  const readyIn = (endpoint: Endpoint, tokens: number): number => {
    if (endpoint.state === 'open') return Number.POSITIVE_INFINITY;
    if (endpoint.state === 'half-open' && endpoint.inFlight > 0) return Number.POSITIVE_INFINITY;
    if (endpoint.inFlight >= endpoint.maxConcurrency) return Number.POSITIVE_INFINITY;
    const time = now();
    endpoint.window = endpoint.window.filter((entry) => entry.at > time - rateWindowMs);
    let wait = Math.max(0, endpoint.notBefore - time);
    if (endpoint.requestsPerMinute !== undefined && endpoint.window.length >= endpoint.requestsPerMinute) {
      const oldest = endpoint.window[endpoint.window.length - endpoint.requestsPerMinute];
      wait = Math.max(wait, (oldest?.at ?? time) + rateWindowMs - time);
    }
    if (endpoint.tokensPerMinute !== undefined) {
      let used = endpoint.window.reduce((sum, entry) => sum + entry.tokens, 0);
      // A single call larger than the whole budget may go when the window is empty.
      for (const entry of endpoint.window) {
        if (used + tokens <= endpoint.tokensPerMinute || used === 0) break;
        used -= entry.tokens;
        wait = Math.max(wait, entry.at + rateWindowMs - time);
      }
    }
    return wait;
  };

  /** Reserves the best endpoint outside `exclude`; undefined when none is left this round. */
  const acquire = async (
    tokens: number,
    exclude: Set<Endpoint>,
    signal: AbortSignal | undefined,
  ): Promise<Endpoint | undefined> => {
    for (;;) {
      if (closed) throw new ServerError({ message: 'server manager is closed', retryable: false });
      if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
      if (endpoints.every((endpoint) => endpoint.state === 'open')) {
        throw new ServerError({
          message: `all endpoints are failing (circuit open): ${endpoints.map((endpoint) => `${endpoint.id} (next probe in ${Math.max(0, endpoint.openUntil - now())} ms)`).join(', ')}`,
          retryable: true,
        });
      }
      const candidates = endpoints.filter((endpoint) => !exclude.has(endpoint) && endpoint.state !== 'open');
      if (candidates.length === 0) return undefined;
      let best: Endpoint | undefined;
      let soonest = Number.POSITIVE_INFINITY;
      for (const endpoint of candidates) {
        const wait = readyIn(endpoint, tokens);
        if (wait === 0) {
          // Least busy relative to capacity; ties keep list order (first = preferred).
          if (!best || endpoint.inFlight / endpoint.maxConcurrency < best.inFlight / best.maxConcurrency)
            best = endpoint;
        } else soonest = Math.min(soonest, wait);
      }
      if (best) {
        best.inFlight++;
        best.requests++;
        best.window.push({ at: now(), tokens });
        return best;
      }
      // Wait for a released slot, a probe, or the rate window to move.
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, Number.isFinite(soonest) ? soonest : 1_000);
        wakers.push(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
  };

  const release = (endpoint: Endpoint, entryTokens: number, actualTokens: number | undefined) => {
    endpoint.inFlight--;
    if (actualTokens !== undefined) {
      // Replace the estimate with what the server reported.
      const entry = endpoint.window.findLast((item) => item.tokens === entryTokens);
      if (entry) entry.tokens = actualTokens;
    }
    wakeAll();
  };

  /** Runs `call` on endpoints until one succeeds; fails over on retryable errors. */
  const route = async <T>(
    tokens: number,
    signal: AbortSignal | undefined,
    call: (endpoint: Endpoint) => Promise<T>,
    usedTokens: (result: T) => number | undefined,
  ): Promise<T> => {
    const tried = new Set<Endpoint>();
    let lastError: unknown;
    let rounds = 0;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      let endpoint: Endpoint | undefined;
      try {
        endpoint = await acquire(tokens, tried, signal);
        if (!endpoint) {
          // Every usable endpoint failed this round: back off, then try them again.
          await backoff.sleep(backoffDelayMs(rounds++, backoff), signal);
          tried.clear();
          endpoint = await acquire(tokens, tried, signal);
        }
      } catch (error) {
        if (ServerError.isInstance(error) && lastError !== undefined) {
          throw new ServerError({
            message: `${error.message}; last error: ${(lastError as Error).message}`,
            retryable: true,
            cause: lastError,
          });
        }
        throw error;
      }
      if (!endpoint) continue;
      tried.add(endpoint);
      let result: T;
      try {
        result = await call(endpoint);
      } catch (error) {
        release(endpoint, tokens, undefined);
        if (AbortedError.isInstance(error) || signal?.aborted) throw error;
        if (ServerError.isInstance(error) && !error.retryable) throw error;
        recordFailure(endpoint);
        // A rate-limited endpoint is not picked again before its Retry-After (at most maxRetryAfterMs).
        if (ServerError.isInstance(error) && error.retryAfterMs !== undefined) {
          endpoint.notBefore = now() + Math.min(error.retryAfterMs, backoff.maxRetryAfterMs);
        }
        lastError = error;
        continue;
      }
      release(endpoint, tokens, usedTokens(result));
      recordSuccess(endpoint);
      return result;
    }
    throw new ServerError({
      message: `all ${maxAttempts} attempts over ${endpoints.length} endpoint(s) failed; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
      retryable: true,
      cause: lastError,
    });
  };

  const periodic =
    settings.healthIntervalMs && settings.healthIntervalMs > 0
      ? setInterval(() => {
          for (const endpoint of endpoints) void probe(endpoint).then((ok) => applyProbe(endpoint, ok));
        }, settings.healthIntervalMs)
      : undefined;
  periodic?.unref?.();

  const first = endpoints[0] as Endpoint;
  const managed = endpoints.every(
    (endpoint) => 'backend' in endpoint.server && 'settings' in endpoint.server,
  );
  let sessionServer: ManagedServer | undefined;
  if (managed) {
    checkSessionSettingsAgree(endpoints);
    // One managed server whose backend routes every generate call through the manager.
    const backends = new Map(
      endpoints.map((endpoint) => [endpoint, (endpoint.server as ManagedServer).backend]),
    );
    const routingBackend: GenerateBackend = {
      provider: 'manager',
      endpoint: endpoints.map((endpoint) => endpoint.id).join(', '),
      healthUrl: (first.server as ManagedServer).healthUrl,
      generate: (request: GenerateRequest) =>
        route<GeneratedSequence[]>(
          request.promptIds.length + (request.maxTokens ?? 0),
          request.signal,
          (endpoint) => (backends.get(endpoint) as GenerateBackend).generate(request),
          (result) =>
            request.promptIds.length + result.reduce((sum, sequence) => sum + sequence.tokenIds.length, 0),
        ),
    };
    sessionServer = createManagedServer(
      { ...(first.server as ManagedServer).settings, retry: { maxRetries: 0 } },
      routingBackend,
    );
  }

  const manager: ServerManager = {
    specificationVersion: 'v1',
    provider: 'manager',
    model: first.server.model,
    chat(request: ChatRequest): Promise<ChatResponse> {
      if (!request || !Array.isArray(request.messages)) {
        throw new InvalidArgumentError({
          argument: 'messages',
          value: request?.messages,
          message: 'chat: request.messages must be an array',
        });
      }
      return route(
        estimateTokens(request),
        request.signal,
        (endpoint) => endpoint.server.chat(request),
        (response) => response.usage?.totalTokens,
      );
    },
    status() {
      return endpoints.map((endpoint) => ({
        id: endpoint.id,
        inFlight: endpoint.inFlight,
        state: endpoint.state,
        consecutiveFailures: endpoint.consecutiveFailures,
        requests: endpoint.requests,
        failures: endpoint.failures,
      }));
    },
    async checkHealth() {
      const results = await Promise.all(
        endpoints.map(async (endpoint) => {
          const ok = await probe(endpoint);
          applyProbe(endpoint, ok);
          return ok ? endpoint.id : undefined;
        }),
      );
      return results.filter((id): id is string => id !== undefined);
    },
    async close() {
      closed = true;
      if (periodic) clearInterval(periodic);
      for (const endpoint of endpoints) {
        if (endpoint.probeTimer) clearTimeout(endpoint.probeTimer);
        endpoint.probeTimer = undefined;
      }
      wakeAll();
      await Promise.all(endpoints.map((endpoint) => endpoint.server.close?.()));
    },
  };
  if (sessionServer) {
    const server = sessionServer;
    manager.openSession = (options) => server.openSession(options);
  }
  return manager;
}
