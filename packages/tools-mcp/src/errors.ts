// Typed errors of @shears/tools-mcp. Each names the MCP server (and tool) it is about and what
// went wrong, so the model's tool error and the terminal at start say which server to fix.
import { ShearsError } from '@shears/core';

/** Where an MCP server failed: starting, listing its tools, or during a call. */
export type McpPhase = 'start' | 'list' | 'call';

/** An MCP server could not be started, listed or called (crashed, hung, wrote malformed output). */
export class McpServerError extends ShearsError {
  readonly server: string;
  readonly phase: McpPhase;
  readonly tool: string | undefined;
  constructor(options: { server: string; phase: McpPhase; tool?: string; message: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_MCP_SERVER', cause: options.cause });
    this.server = options.server;
    this.phase = options.phase;
    this.tool = options.tool;
  }
  static override isInstance(error: unknown): error is McpServerError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_MCP_SERVER';
  }
}

/** A tool an MCP server lists cannot be offered: invalid JSON Schema, bad name, or a name clash. */
export class McpToolDefinitionError extends ShearsError {
  readonly server: string;
  readonly tool: string;
  constructor(options: { server: string; tool: string; message: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_MCP_TOOL_DEFINITION', cause: options.cause });
    this.server = options.server;
    this.tool = options.tool;
  }
  static override isInstance(error: unknown): error is McpToolDefinitionError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_MCP_TOOL_DEFINITION';
  }
}
