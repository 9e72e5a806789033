// Tool contract: a named function the model can call. Tools run inside the rollout's sandbox.
import type { z } from 'zod';
import type { ImageUrlContentPart } from './chat.js';
import type { Logger } from './logger.js';
import type { SandboxV1 } from './sandbox.js';

export interface ToolContext {
  /** The rollout's own sandbox. */
  sandbox: SandboxV1;
  taskId: string;
  rolloutId: string;
  signal: AbortSignal;
  logger: Logger;
  /** The first user message of the rollout (at most 500 characters), as hermes-agent passes it. */
  userTask?: string;
  /** Per-rollout state shared between tools (e.g. background process registries). */
  state: Map<string, unknown>;
  /**
   * Registers clean-up to run when the rollout ends, before its sandbox is disposed (closing a
   * connection the tool opened for this rollout). Given by the group runner; absent elsewhere.
   */
  onRolloutEnd?: (cleanup: () => Promise<void> | void) => void;
}

export interface ToolOutput {
  /** What the model sees. */
  content: string;
  /** Structured data kept on the trajectory, never shown to the model. */
  data?: unknown;
  /** True when the tool reports failure (counted as a tool error). */
  isError?: boolean;
  /**
   * Images for a multimodal model. A tool message carries text only, so the kernel sends them in a
   * user message right after the turn's tool messages (OpenAI chat's `image_url` parts), introduced
   * by a text part naming the call. Text-only tokenizer paths refuse such messages.
   */
  images?: ImageUrlContentPart[];
}

export interface ToolV1<TArgs = any> {
  readonly specificationVersion: 'v1';
  readonly name: string;
  readonly description: string;
  /** Validates (and coerces) the arguments. */
  readonly inputSchema: z.ZodType<TArgs>;
  /** Exact JSON Schema shown to the model; derived from `inputSchema` when absent. */
  readonly jsonSchema?: Record<string, unknown>;
  /** Toolset this tool belongs to (`terminal`, `file`, `web`, ...). */
  readonly toolset?: string;
  /** Result size above which the result is persisted into the sandbox (Infinity: never). */
  readonly maxResultChars?: number;
  execute(args: TArgs, context: ToolContext): Promise<ToolOutput | string>;
}

/** A tool call about to run, as a rollout's `beforeToolCall` hook sees it. */
export interface ToolCallRequest {
  id: string;
  name: string;
  /** Validated arguments. */
  arguments: Record<string, unknown>;
  /** 1-based turn number. */
  turn: number;
  tool: ToolV1;
}

export type ToolCallDecision = { allow: true } | { allow: false; message: string };

/** Identity helper that fills in `specificationVersion` and keeps argument types. */
export function defineTool<TArgs>(tool: Omit<ToolV1<TArgs>, 'specificationVersion'>): ToolV1<TArgs> {
  return { specificationVersion: 'v1', ...tool };
}
