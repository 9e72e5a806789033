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

// Harnesses send the whole history with every request, so the same argument texts come back turn
// after turn: their canonical spelling is remembered (a pure function of the text), which makes a
// message key a map lookup instead of a JSON parse and re-serialisation. Bounded: cleared when full.
const canonicalCache = new Map<string, string>();
const CANONICAL_CACHE_ENTRIES = 4096;
const CANONICAL_CACHE_MAX_CHARS = 4096;

/** Tool-call arguments in one canonical spelling (sorted keys, no spacing); raw text when not JSON. */
export function canonicalArguments(text: string): string {
  let canonical = canonicalCache.get(text);
  if (canonical !== undefined) return canonical;
  try {
    canonical = stableStringify(JSON.parse(text));
  } catch {
    canonical = text.trim();
  }
  if (text.length <= CANONICAL_CACHE_MAX_CHARS) {
    if (canonicalCache.size >= CANONICAL_CACHE_ENTRIES) canonicalCache.clear();
    canonicalCache.set(text, canonical);
  }
  return canonical;
}

/** A message's identity for thread matching. */
export function messageKey(message: ChatMessage): string {
  const text = contentText(message);
  // The role as JSON, then (assistant) the tool calls as JSON, then the text: each JSON part ends
  // unambiguously, so the text needs no quoting. Quoting long texts was half this function's cost,
  // and it runs for every message of every request.
  const identity =
    message.role === 'assistant'
      ? `"assistant"${JSON.stringify(
          (message.tool_calls ?? []).map((call) => [
            call.function.name,
            canonicalArguments(call.function.arguments),
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
