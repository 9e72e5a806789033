// What an inference server's failure means for the caller: an HTTP error status or a timeout
// becomes a ServerError that names the server, the model and what to check, and says whether a
// retry can help (the statuses are core's one list, `isRetryableStatus`; the retry itself is
// core's `withRetries`).
import { ServerError, TimeoutError } from '@shears/core';
import { isRetryableStatus } from '@shears/core/http';

const CONTEXT_TOO_LONG =
  /context length|context window|maximum context|too many tokens|prompt is too long|reduce the length|input is too long|max_model_len|longer than the maximum/i;

/** Turns an HTTP failure status into a ServerError that says whether retrying can help. */
export function httpServerError(options: {
  status: number;
  detail: string;
  endpoint: string;
  model: string;
  provider: string;
  retryAfterMs?: number;
  cause?: unknown;
}): ServerError {
  const { status, detail, endpoint, model, provider } = options;
  const where = `${provider} server ${endpoint} (model "${model}")`;
  const retryable = isRetryableStatus(status);
  let hint: string;
  if (status === 429) {
    hint = 'rate limited';
  } else if (retryable) {
    hint = 'server-side failure';
  } else if (status === 404) {
    hint = `not found: check the model name "${model}" and that the base URL ${endpoint} is the API root (e.g. ending in /v1)`;
  } else if (status === 401 || status === 403) {
    hint = 'authentication failed: check the API key';
  } else if ((status === 400 || status === 413 || status === 422) && CONTEXT_TOO_LONG.test(detail)) {
    hint = 'the prompt is longer than the model context: shorten the conversation or raise max context';
  } else {
    hint = 'the request was rejected; retrying will not help';
  }
  return new ServerError({
    message: `${where}: HTTP ${status} (${hint})${detail ? `: ${detail}` : ''}`,
    endpoint,
    model,
    status,
    retryable,
    retryAfterMs: options.retryAfterMs,
    cause: options.cause,
  });
}

/** A ServerError for a call that ran past its timeout (retryable: a slow server may recover). */
export function timeoutServerError(options: {
  endpoint: string;
  model: string;
  provider: string;
  timeoutMs: number;
  cause?: unknown;
}): ServerError {
  return new ServerError({
    message: `${options.provider} server ${options.endpoint} (model "${options.model}"): no answer within ${options.timeoutMs} ms`,
    endpoint: options.endpoint,
    model: options.model,
    retryable: true,
    cause:
      options.cause ??
      new TimeoutError({ message: `timed out after ${options.timeoutMs} ms`, timeoutMs: options.timeoutMs }),
  });
}
