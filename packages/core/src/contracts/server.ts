// Server contract: one chat completion per call. Phase-1 servers (OpenAI-compatible chat) let
// the server parse tool calls; managed phase-2 servers (vLLM/SGLang token-in/token-out) render
// the template themselves and record exact tokens per rollout through a session.
import type { AssistantMessage, ChatMessage, ToolSchema } from './chat.js';

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ToolSchema[];
  toolChoice?: ToolChoice;
  /** Number of completions; the agent loop always asks for 1. */
  n?: number;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string[];
  seed?: number;
  /** Provider-specific body fields passed through verbatim (e.g. OpenRouter provider routing). */
  extraBody?: Record<string, unknown>;
  /** Per-request timeout; the server's default applies when absent. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  reasoningTokens?: number;
  costUsd?: number;
}

export interface ChatChoice {
  index: number;
  message: AssistantMessage;
  finishReason: string | null;
}

export interface ChatResponse {
  id?: string;
  model?: string;
  choices: ChatChoice[];
  usage?: Usage;
}

/** One token sequence of a managed rollout: prompt and generated tokens with a training mask. */
export interface TokenSequence {
  tokens: number[];
  /** -100 on prompt/tool positions; the token id itself on generated positions (Atropos convention). */
  masks: number[];
  /** Per-token logprobs, 1.0 placeholders on masked positions (Atropos convention). */
  logprobs: number[];
  /**
   * The policy version that sampled each generated turn of this sequence, in order, when the
   * server says it (the reference trainer's colocated policy server sends `policy_version`;
   * vLLM does not). The oldest one bounds how stale the sequence is when a trainer consumes it.
   */
  policyVersions?: number[];
}

export interface TokenRecord {
  /** Usually one; more when a template re-rendered history and the record had to be split. */
  sequences: TokenSequence[];
  /** How many times the record was split because a prompt did not extend the recorded tokens. */
  splits: number;
}

/** A per-rollout view of a managed server: chat calls that record exact tokens. */
export interface ServerSessionV1 {
  chat(request: ChatRequest): Promise<ChatResponse>;
  tokenRecord(): TokenRecord;
  close(): void;
}

export interface ServerV1 {
  readonly specificationVersion: 'v1';
  /** Provider id, e.g. `openai`, `vllm`, `sglang`, `scripted`. */
  readonly provider: string;
  readonly model: string;
  chat(request: ChatRequest): Promise<ChatResponse>;
  /** Managed servers only: open a recording session for one rollout. */
  openSession?(options: { rolloutId: string }): ServerSessionV1;
  close?(): Promise<void>;
}

/** Anything that can answer chat requests: a server or a managed session. */
export type ChatClient = Pick<ServerV1, 'chat'>;

export function isManagedServer(
  server: ServerV1,
): server is ServerV1 & Required<Pick<ServerV1, 'openSession'>> {
  return typeof server.openSession === 'function';
}
