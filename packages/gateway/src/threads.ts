// Threads: the separate conversations inside one rollout. A harness makes many requests —
// its main loop, sub-agents, title and summary calls with other system prompts — and each
// conversation must become its own token sequence. A request joins the thread whose
// conversation it extends (the thread's messages, reply included, are a prefix of the
// request's); otherwise it starts a new thread. Messages are compared by a key that ignores
// what harnesses change when they echo history (tool-call ids, reasoning, JSON spacing in
// arguments, surrounding whitespace), so a harness's lossy echo still lands in its thread.
import { createHash, hash } from 'node:crypto';
import type { ChatMessage, ServerSessionV1, ToolSchema } from '@shears/core';
import type { GatewayApi } from './api-error.js';
import { contentText, isRecord } from './dialect.js';

/** What a thread is, so the env can decide which threads train. */
export interface ThreadTags {
  api: GatewayApi;
  /** sha256 (hex, 16 characters) of the leading system message(s); '' when there is none. */
  systemHash: string;
  /** The leading system text, cut at 300 characters. */
  systemPreview: string;
  /** The first user message's text, cut at 500 characters. */
  firstUserMessage: string;
  /** Tool names offered on the thread's first request. */
  toolNames: string[];
  /** The thread this one shares its opening with (beyond the system prompt), if any: a fork or a retry from an earlier point. */
  branchOf: string | null;
}

export interface ThreadState {
  readonly id: string;
  readonly tags: ThreadTags;
  /** Keys of `messages`. */
  keys: string[];
  /** The conversation so far: the last request's messages, plus the reply once it succeeded. */
  messages: ChatMessage[];
  /** Positions in `messages` that hold the server's own replies (restored verbatim for exact tokens). */
  produced: Set<number>;
  tools: ToolSchema[] | undefined;
  requestIndices: number[];
  busy: boolean;
  lastUsed: number;
  /** Phase-2 servers: this thread's recording session. */
  managed: ServerSessionV1 | undefined;
}

// Harnesses send the whole history with every request, so the same argument texts come back turn
// after turn: their canonical spelling is remembered (a pure function of the text and of the
// tool's schema shape), which makes a message key a map lookup instead of a JSON parse and
// re-serialisation. Bounded: cleared when full.
const canonicalCache = new Map<string, string>();
// With a tool's shape: keyed by its signature (JSON, so no raw NUL), a NUL, then the text.
const shapedCache = new Map<string, string>();
const CANONICAL_CACHE_ENTRIES = 4096;
const CANONICAL_CACHE_MAX_CHARS = 4096;
// Schemas are followed this deep (a shape below it keeps its values as they are).
const SHAPE_DEPTH = 8;

/**
 * What validating a value against a JSON Schema can change in it, and so what a harness that
 * validates a call's input before running it may echo differently from what the model wrote:
 * a property's declared `default` filled in, and, where `additionalProperties` is false,
 * undeclared properties dropped (zod's objects strip them).
 */
interface ArgumentShape {
  /** The declared default, canonical (stableStringify). */
  default?: string;
  /** The declared properties (own keys only: a null-prototype object). */
  properties?: Record<string, ArgumentShape>;
  /** `additionalProperties: false`. */
  closed?: true;
  /** The shape of an array's items. */
  items?: ArgumentShape;
}

/**
 * One tool's shape, with its signature: part of the cache key of a canonical spelling. The
 * signature is serialised on first use, for the few tools a conversation's calls name: most of a
 * request's tools are never called in its history.
 */
class ToolShape {
  #signature: string | undefined;
  constructor(readonly shape: ArgumentShape) {}
  get signature(): string {
    this.#signature ??= stableStringify(this.shape);
    return this.#signature;
  }
}

/** Per tool name, the shape of its parameters, for the tools whose validation can change a call. */
type ArgumentShapes = ReadonlyMap<string, ToolShape>;

/** The shape of `schema`; `undefined` when validating against it changes nothing. */
function shapeOf(schema: unknown, depth: number): ArgumentShape | undefined {
  if (!isRecord(schema) || depth > SHAPE_DEPTH) return undefined;
  const shape: ArgumentShape = {};
  let changes = false;
  if (depth > 0 && schema.default !== undefined) {
    shape.default = stableStringify(schema.default);
    changes = true;
  }
  if (isRecord(schema.properties)) {
    const properties: Record<string, ArgumentShape> = Object.create(null);
    for (const key of Object.keys(schema.properties)) {
      const property = shapeOf(schema.properties[key], depth + 1);
      properties[key] = property ?? {};
      if (property) changes = true;
    }
    shape.properties = properties;
  }
  if (schema.additionalProperties === false) {
    shape.closed = true;
    changes = true;
  }
  const items = Array.isArray(schema.items) ? undefined : shapeOf(schema.items, depth + 1);
  if (items) {
    shape.items = items;
    changes = true;
  }
  return changes ? shape : undefined;
}

/**
 * The shapes of a request's tools; `undefined` when no tool's validation can change a call. A
 * harness that validates a call's input against its tool's schema echoes it with the declared
 * defaults filled in (Claude Code sends `Edit` back with `replace_all: false` the model never
 * wrote) and, under `additionalProperties: false`, may drop what the schema does not declare.
 */
export function argumentShapes(tools: readonly ToolSchema[] | undefined): ArgumentShapes | undefined {
  let shapes: Map<string, ToolShape> | undefined;
  for (const tool of tools ?? []) {
    const shape = shapeOf(tool.function.parameters, 0);
    if (shape) (shapes ??= new Map()).set(tool.function.name, new ToolShape(shape));
  }
  return shapes;
}

/** `value` without what validation against `shape` may add or drop: the same call to the tool. */
function withoutValidation(value: unknown, shape: ArgumentShape): unknown {
  if (Array.isArray(value)) {
    const items = shape.items;
    return items ? value.map((item) => withoutValidation(item, items)) : value;
  }
  if (!isRecord(value) || (!shape.properties && !shape.closed)) return value;
  const kept: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(value)) {
    const property = shape.properties?.[key];
    if (!property) {
      if (!shape.closed) kept[key] = value[key];
    } else if (property.default !== stableStringify(value[key]))
      kept[key] = withoutValidation(value[key], property);
  }
  return kept;
}

/** JSON with object keys sorted, so two spellings of the same value compare equal. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (isRecord(value))
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableStringify(value[key])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/**
 * Tool-call arguments in one canonical spelling (sorted keys, no spacing); with the tool's
 * `shape`, also without what validating them may add or drop (declared defaults, undeclared
 * properties of a closed object): a call and its validated echo mean the same to the tool. Raw
 * text, trimmed, when not JSON.
 */
export function canonicalArguments(text: string, shape?: ToolShape): string {
  const cache = shape ? shapedCache : canonicalCache;
  const cacheKey = shape ? `${shape.signature}\u0000${text}` : text;
  let canonical = cache.get(cacheKey);
  if (canonical !== undefined) return canonical;
  try {
    const value: unknown = JSON.parse(text);
    canonical = stableStringify(shape ? withoutValidation(value, shape.shape) : value);
  } catch {
    canonical = text.trim();
  }
  if (text.length <= CANONICAL_CACHE_MAX_CHARS) {
    if (cache.size >= CANONICAL_CACHE_ENTRIES) cache.clear();
    cache.set(cacheKey, canonical);
  }
  return canonical;
}

/**
 * A message's identity for thread matching. `shapes`: the request's tools' shapes
 * (argumentShapes), so that a call echoed as its harness validated it keeps its identity.
 */
export function messageKey(message: ChatMessage, shapes?: ArgumentShapes): string {
  const text = contentText(message);
  // The role as JSON, then (assistant) the tool calls as JSON, then the text: each JSON part ends
  // unambiguously, so the text needs no quoting. Quoting long texts was half this function's cost,
  // and it runs for every message of every request.
  const identity =
    message.role === 'assistant'
      ? `"assistant"${JSON.stringify(
          (message.tool_calls ?? []).map((call) => [
            call.function.name,
            canonicalArguments(call.function.arguments, shapes?.get(call.function.name)),
          ]),
        )}${text.trim()}`
      : `${JSON.stringify(message.role)}${text}`;
  // An identity of up to 256 characters is its own key (marked so that it cannot equal a base64
  // digest): hashing was most of this function's cost, and most messages but tool outputs and
  // system prompts are short. A longer one is hashed, so that a thread keeps 28 characters per
  // long message, not a second copy of it (one-shot `hash`: cheaper than a Hash object).
  return identity.length <= 256 ? `\u0000${identity}` : hash('sha1', identity, 'base64');
}

function isPrefix(prefix: readonly string[], keys: readonly string[]): boolean {
  if (prefix.length > keys.length) return false;
  for (let index = prefix.length - 1; index >= 0; index--) if (prefix[index] !== keys[index]) return false;
  return true;
}

function commonPrefix(a: readonly string[], b: readonly string[]): number {
  const length = Math.min(a.length, b.length);
  let index = 0;
  while (index < length && a[index] === b[index]) index++;
  return index;
}

interface ThreadMatch {
  /** The idle thread the request continues, if any. */
  thread: ThreadState | undefined;
  /** When no idle thread fits: the thread sharing the most opening messages beyond the system prompt. */
  branchOf: ThreadState | undefined;
}

/**
 * The thread a request continues: among this API's threads whose conversation is a prefix of the
 * request, the longest (most recently used on a tie). A busy thread is never joined — two
 * requests in flight on one token sequence would interleave — so its continuation starts a
 * branch instead.
 */
export function matchThread(
  threads: readonly ThreadState[],
  api: GatewayApi,
  keys: readonly string[],
  leadingSystem: number,
): ThreadMatch {
  let best: ThreadState | undefined;
  for (const thread of threads) {
    if (thread.tags.api !== api || !isPrefix(thread.keys, keys)) continue;
    if (
      !best ||
      thread.keys.length > best.keys.length ||
      (thread.keys.length === best.keys.length && thread.lastUsed > best.lastUsed)
    )
      best = thread;
  }
  if (best && !best.busy) return { thread: best, branchOf: undefined };
  let branchOf = best;
  if (!branchOf) {
    let shared = leadingSystem;
    for (const thread of threads) {
      if (thread.tags.api !== api) continue;
      const common = commonPrefix(thread.keys, keys);
      if (common > shared) {
        shared = common;
        branchOf = thread;
      }
    }
  }
  return { thread: undefined, branchOf };
}

const cut = (text: string, length: number) => (text.length > length ? `${text.slice(0, length)}…` : text);

/** Tags of a new thread from its first request. */
export function threadTags(
  api: GatewayApi,
  messages: readonly ChatMessage[],
  tools: readonly ToolSchema[] | undefined,
  branchOf: string | null,
): ThreadTags {
  const system: string[] = [];
  for (const message of messages) {
    if (message.role !== 'system') break;
    system.push(contentText(message));
  }
  const systemText = system.join('\n');
  const firstUser = messages.find((message) => message.role === 'user');
  return {
    api,
    systemHash: system.length > 0 ? createHash('sha256').update(systemText).digest('hex').slice(0, 16) : '',
    systemPreview: cut(systemText, 300),
    firstUserMessage: firstUser ? cut(contentText(firstUser), 500) : '',
    toolNames: (tools ?? []).map((tool) => tool.function.name),
    branchOf,
  };
}

/** How many leading messages are system messages. */
export function leadingSystemCount(messages: readonly ChatMessage[]): number {
  let count = 0;
  while (count < messages.length && messages[count]?.role === 'system') count++;
  return count;
}
