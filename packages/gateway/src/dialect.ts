// The seam between the gateway core and the three APIs it speaks. A dialect turns a request
// body into a shears ChatRequest (plus what it needs to answer), and a shears ChatResponse
// back into that API's JSON body or its stream of events. The core does everything else:
// routing, keys, sessions, threads, recording, errors and keep-alives.
import type { ChatMessage, ChatRequest, ChatResponse } from '@shears/core';
import type { GatewayApi, GatewayApiError, RenderedError } from './api-error.js';

/** A request body understood: what goes to the server, and what the answer must echo. */
export interface ParsedRequest {
  chat: Omit<ChatRequest, 'signal'>;
  stream: boolean;
  /** The model name the harness asked for (recorded and echoed; the backend's model answers). */
  model: string | null;
  /** Top-level fields (and unservable tools) accepted but not acted upon, e.g. `metadata`, `tools[3] (web_search)`. */
  ignoredFields: string[];
}

/** Per-response values the renderers share. */
export interface ResponseMeta {
  id: string;
  /** Unix seconds. */
  created: number;
  /** The model name echoed to the harness. */
  model: string;
  chunkChars: number;
  /** Next `sequence_number` (Responses streams). */
  sequence: number;
}

/** What a dialect may ask of the rollout's session while parsing. */
export interface ParseContext {
  /** The conversation a stored response ended with (Responses' `previous_response_id`). */
  recall(responseId: string): ChatMessage[] | undefined;
}

export interface Dialect<TParsed extends ParsedRequest = ParsedRequest> {
  readonly api: GatewayApi;
  /** Throws GatewayApiError (invalid_request) for a body the real API would reject. */
  parse(body: unknown, context: ParseContext): TParsed;
  /** The conversation to keep under this response's id for later `recall`, if the API stores responses. */
  remember?(parsed: TParsed, reply: ChatMessage): ChatMessage[] | undefined;
  /** The non-streaming JSON body. */
  respond(parsed: TParsed, response: ChatResponse, meta: ResponseMeta): Record<string, unknown>;
  /** The complete SSE text of a streamed answer (after any preamble already sent). */
  stream(parsed: TParsed, response: ChatResponse, meta: ResponseMeta, preambleSent: boolean): string;
  /** Events sent when the stream is committed before the backend answered (may be empty). */
  preamble(parsed: TParsed, meta: ResponseMeta): string;
  /** A failure after the stream was committed, as this API reports errors mid-stream. */
  streamError(parsed: TParsed, error: GatewayApiError, meta: ResponseMeta, preambleSent: boolean): string;
  renderError(error: GatewayApiError, requestId: string): RenderedError;
}

/** True for a plain JSON object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Keys of `body` outside `known`, for the record's `ignoredFields`. */
export function unknownKeys(body: Record<string, unknown>, known: ReadonlySet<string>): string[] {
  const ignored: string[] = [];
  for (const key of Object.keys(body)) if (!known.has(key) && body[key] !== undefined) ignored.push(key);
  return ignored;
}

/** A sampling value outside the range the API allows gets the API's 400 (the schema checked its type). */
export function inRange(
  value: number | null | undefined,
  range: { min: number; max?: number },
  error: (value: number) => GatewayApiError,
): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (value < range.min || (range.max !== undefined && value > range.max)) throw error(value);
  return value;
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string')
    return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)})`;
  return `${typeof value} (${String(value)})`;
}

/** The JSON object a model's tool-call arguments stand for, or undefined when they are not one. */
export function argumentsObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The reasoning an assistant message carries, in whichever field the server used. */
export function reasoningOf(message: ChatMessage): string | undefined {
  if (typeof message.reasoning_content === 'string' && message.reasoning_content)
    return message.reasoning_content;
  const reasoning = message.reasoning;
  if (typeof reasoning === 'string' && reasoning) return reasoning;
  const details = message.reasoning_details;
  if (Array.isArray(details)) {
    const text = details
      .map((detail) => (isRecord(detail) && typeof detail.text === 'string' ? detail.text : ''))
      .join('');
    if (text) return text;
  }
  return undefined;
}

/** The text of an assistant message's content. */
export function contentText(message: ChatMessage): string {
  const { content } = message;
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}
