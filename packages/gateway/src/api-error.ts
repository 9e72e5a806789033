// Errors as the harness's own API would send them. Every failure the gateway answers with (a bad
// body, a wrong key, an ended session, a backend that is down or rate limited) becomes one
// `GatewayApiError` with a kind; each API renders it in its real shape and status, with
// `retry-after` where the real service sends one, so the harness's own retry logic runs.
import { AbortedError, InvalidArgumentError, ServerError, ShearsError, TimeoutError } from '@shears/core';

/** The APIs the gateway speaks, as recorded per request. */
export type GatewayApi = 'chat.completions' | 'responses' | 'messages' | 'messages.count_tokens' | 'models';

/** What went wrong, independent of the API that reports it. */
export type ApiErrorKind =
  | 'invalid_request'
  | 'authentication'
  | 'permission'
  | 'not_found'
  | 'request_too_large'
  | 'rate_limit'
  | 'server'
  | 'overloaded';

/** A failure answered to the harness in its API's error shape. */
export class GatewayApiError extends ShearsError {
  readonly kind: ApiErrorKind;
  /** The request field at fault (OpenAI's `param`), e.g. `messages[2].content`. */
  readonly param: string | null;
  /** OpenAI's machine-readable `code`, e.g. `invalid_api_key`. */
  readonly apiCode: string | null;
  readonly retryAfterMs: number | undefined;

  constructor(options: {
    kind: ApiErrorKind;
    message: string;
    param?: string | null;
    apiCode?: string | null;
    retryAfterMs?: number;
    cause?: unknown;
  }) {
    super(options.message, { code: 'SHEARS_GATEWAY_API', cause: options.cause });
    this.kind = options.kind;
    this.param = options.param ?? null;
    this.apiCode = options.apiCode ?? null;
    this.retryAfterMs = options.retryAfterMs;
  }

  static override isInstance(error: unknown): error is GatewayApiError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_GATEWAY_API';
  }
}

/** How an API writes a field's path: OpenAI's `messages[0].content`, Anthropic's `messages.0.content`. */
export type ApiStyle = 'openai' | 'anthropic';

/** A field's path as the API writes it in its error messages and OpenAI's `param`. */
export function apiParam(path: ReadonlyArray<PropertyKey>, style: ApiStyle): string {
  let out = '';
  for (const key of path) {
    if (style === 'openai' && typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** Shorthand for a 400 naming the field at fault. */
export function invalidRequest(
  message: string,
  param: string | null = null,
  apiCode?: string,
): GatewayApiError {
  return new GatewayApiError({ kind: 'invalid_request', message, param, apiCode: apiCode ?? null });
}

/** Maps anything thrown while answering a request to the error the harness should see. */
export function toGatewayApiError(error: unknown): GatewayApiError {
  if (GatewayApiError.isInstance(error)) return error;
  if (ServerError.isInstance(error)) {
    const status = error.status;
    const detail = `backend ${error.message}`;
    if (status === 429) {
      const retryAfterMs = error.retryAfterMs ?? 1000;
      // OpenAI's wording; Codex reads the delay from "try again in Ns" in mid-stream failures.
      return new GatewayApiError({
        kind: 'rate_limit',
        message: `${detail}. Please try again in ${(retryAfterMs / 1000).toFixed(3)}s.`,
        apiCode: 'rate_limit_exceeded',
        retryAfterMs,
        cause: error,
      });
    }
    if (status === 503 || status === 529)
      return new GatewayApiError({
        kind: 'overloaded',
        message: detail,
        retryAfterMs: error.retryAfterMs,
        cause: error,
      });
    if (status !== undefined && status >= 400 && status < 500 && !error.retryable)
      return new GatewayApiError({ kind: 'invalid_request', message: detail, cause: error });
    return new GatewayApiError({
      kind: 'server',
      message: detail,
      retryAfterMs: error.retryAfterMs,
      cause: error,
    });
  }
  if (TimeoutError.isInstance(error))
    return new GatewayApiError({
      kind: 'server',
      message: `backend timed out: ${error.message}`,
      cause: error,
    });
  if (InvalidArgumentError.isInstance(error))
    return new GatewayApiError({
      kind: 'invalid_request',
      message: error.message,
      param: error.argument,
      cause: error,
    });
  if (AbortedError.isInstance(error))
    return new GatewayApiError({ kind: 'server', message: 'the request was aborted', cause: error });
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return new GatewayApiError({
    kind: 'server',
    message: `shears gateway internal error: ${text}`,
    cause: error,
  });
}

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

const OPENAI_STATUS: Record<ApiErrorKind, number> = {
  invalid_request: 400,
  authentication: 401,
  permission: 403,
  not_found: 404,
  request_too_large: 413,
  rate_limit: 429,
  server: 500,
  overloaded: 503,
};

const OPENAI_TYPE: Record<ApiErrorKind, string> = {
  invalid_request: 'invalid_request_error',
  authentication: 'invalid_request_error',
  permission: 'invalid_request_error',
  not_found: 'invalid_request_error',
  request_too_large: 'invalid_request_error',
  // What OpenAI itself sends on a 429 (with code `rate_limit_exceeded`).
  rate_limit: 'requests',
  server: 'server_error',
  overloaded: 'server_error',
};

// Anthropic's documented error statuses and types (https://docs.anthropic.com/en/api/errors).
const ANTHROPIC: Record<ApiErrorKind, { status: number; type: string }> = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  authentication: { status: 401, type: 'authentication_error' },
  permission: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'not_found_error' },
  request_too_large: { status: 413, type: 'request_too_large' },
  rate_limit: { status: 429, type: 'rate_limit_error' },
  server: { status: 500, type: 'api_error' },
  overloaded: { status: 529, type: 'overloaded_error' },
};

function retryHeaders(error: GatewayApiError): Record<string, string> {
  if (error.retryAfterMs === undefined) return {};
  return {
    'retry-after': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))),
    'retry-after-ms': String(Math.max(0, Math.round(error.retryAfterMs))),
  };
}

/** OpenAI's shape: `{error: {message, type, param, code}}`. */
export function renderOpenAIError(error: GatewayApiError): RenderedError {
  return {
    status: OPENAI_STATUS[error.kind],
    headers: retryHeaders(error),
    body: {
      error: {
        message: error.message,
        type: OPENAI_TYPE[error.kind],
        param: error.param,
        code: error.apiCode ?? (error.kind === 'authentication' ? 'invalid_api_key' : null),
      },
    },
  };
}

/** Anthropic's shape: `{type: "error", error: {type, message}, request_id}`. */
export function renderAnthropicError(error: GatewayApiError, requestId: string): RenderedError {
  const { status, type } = ANTHROPIC[error.kind];
  const retryable = error.kind === 'rate_limit' || error.kind === 'server' || error.kind === 'overloaded';
  return {
    status,
    headers: { ...retryHeaders(error), 'x-should-retry': String(retryable), 'request-id': requestId },
    body: { type: 'error', error: { type, message: error.message }, request_id: requestId },
  };
}

/** The Anthropic error type of a kind (for mid-stream `error` events). */
export function anthropicErrorType(kind: ApiErrorKind): string {
  return ANTHROPIC[kind].type;
}

/** The OpenAI error type of a kind (for mid-stream errors). */
export function openAIErrorType(kind: ApiErrorKind): string {
  return OPENAI_TYPE[kind];
}
