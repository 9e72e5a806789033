// Tool-call parser contract: raw completion text <-> {content, toolCalls}, whole-text and
// incremental, plus `render` back to the model's own format. A parser never throws.
import type { ToolSchema } from './chat.js';

export interface ParsedToolCall {
  /** Present when the format carries ids (Mistral v11+, Kimi K2). */
  id?: string;
  name: string;
  /** Arguments as JSON text serialised like Python `json.dumps(ensure_ascii=False)`, or raw text when kept unparsed. */
  arguments: string;
}

export interface ParseIssue {
  /** Index of the offending call in the text, in order of appearance. */
  index: number;
  reason: string;
  raw: string;
}

export interface ParseResult {
  content: string | null;
  toolCalls: ParsedToolCall[];
  /** Calls that were skipped, and why. */
  issues: ParseIssue[];
  /** Text after the last call, when `keepTrailingText` is set. */
  trailingText?: string | null;
}

export interface ParseOptions {
  /** Offered tools: used for name validation and schema-typed values (qwen3_coder, glm45). */
  tools?: ToolSchema[];
  /** Skip calls whose name is not among `tools` (default: true when tools are given). */
  validateNames?: boolean;
  /** Keep arguments that are not valid JSON as raw text instead of skipping the call. */
  keepInvalidArguments?: boolean;
  /** Report text after the last call in `trailingText`. */
  keepTrailingText?: boolean;
}

/** Incremental parser: feeding the text in any chunking yields exactly the whole-text result. */
export interface ToolCallStreamV1 {
  /** Feeds the next piece of text; returns the calls completed by this piece, if any. */
  feed(delta: string): ParsedToolCall[];
  finish(): ParseResult;
}

export interface RenderInput {
  content: string | null;
  toolCalls: Array<Pick<ParsedToolCall, 'id' | 'name' | 'arguments'>>;
}

export interface ToolCallParserV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  readonly aliases?: readonly string[];
  parse(text: string, options?: ParseOptions): ParseResult;
  createStream(options?: ParseOptions): ToolCallStreamV1;
  /** Renders content and calls as the model would have written them. */
  render(input: RenderInput): string;
}
