// The strings the agent loop writes into tool messages, word for word as hermes-agent writes
// them: models are trained on these, so a change here changes what a policy learns to read.
import type { z } from 'zod';
import { pythonJsonDumps, pythonListRepr } from './python-format.js';

/** hermes' result for a failed call: `{"error": "..."}` as Python's json.dumps writes it. */
export function toolErrorResult(message: string): string {
  return pythonJsonDumps({ error: message });
}

/** The message for an unknown tool, listing the available names as a Python list. */
export function unknownToolMessage(name: string, available: readonly string[]): string {
  return `Unknown tool '${name}'. Available tools: ${pythonListRepr([...available].sort())}`;
}

/** The tool result for arguments that are not a JSON object (`detail` says why). */
export function invalidJsonResult(detail: string): string {
  return toolErrorResult(`Invalid JSON in tool arguments: ${detail}. Please retry with valid JSON.`);
}

/** The message for arguments that parse but do not match the tool's schema. */
export function invalidArgumentsMessage(name: string, error: z.ZodError): string {
  return `Invalid arguments for tool '${name}': ${formatIssues(error)}. Please retry with valid arguments.`;
}

/** The message for a call that ran past the per-tool timeout. */
export function toolTimeoutMessage(name: string, timeoutMs: number): string {
  return `Tool execution failed: TimeoutError: Tool '${name}' timed out after ${timeoutMs} ms`;
}

/** The message for a tool that threw. */
export function toolFailedMessage(error: unknown): string {
  return `Tool execution failed: ${describeThrown(error)}`;
}

/** Python's `f"{type(e).__name__}: {e}"` for a thrown value. */
export function describeThrown(error: unknown): string {
  if (error instanceof Error) return `${error.name || error.constructor.name}: ${error.message}`;
  return `Error: ${String(error)}`;
}

function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(arguments)'}: ${issue.message}`)
    .join('; ');
}
