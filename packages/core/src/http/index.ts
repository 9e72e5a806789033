// @shears/core/http: what every shears package that talks HTTP shares, so each concept has one
// owner: the retry policy (backoff with jitter, Retry-After in all its forms, capped), the
// abortable sleep it waits with, the body reader (decoding, size limit, abort) and a node:http
// client for one exchange. The model is vercel/ai's provider-utils; see README.md here and
// docs/decisions/http-helpers.md.

export { ignoreAborted, sleep } from '../sleep.js';
export type { HttpRequestOptions, HttpResponse } from './http-request.js';
export { httpRequest } from './http-request.js';
export type { BodyReadFailure, ReadBodyOptions } from './read-body.js';
export { BodyReadError, decodeBody, readBody } from './read-body.js';
export type {
  HeadersLike,
  ResolvedRetrySettings,
  RetryContext,
  RetrySettings,
  WithRetriesOptions,
} from './retry.js';
export {
  backoffDelayMs,
  headerValue,
  isRetryableStatus,
  parseRetryAfter,
  resolveRetrySettings,
  withRetries,
} from './retry.js';
