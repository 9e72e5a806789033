// Tool results are JSON text, as in hermes-agent (`json.dumps(result, ensure_ascii=False)`);
// errors are `{"error": "..."}` plus optional extra fields.
import type { ToolOutput } from '@shears/core';
import { ShearsError } from '@shears/core';
import { FileToolError } from './file-tool-error.js';

/** Drops undefined, null and empty-string fields, like hermes' `to_dict`. */
function compact(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(record).filter(([, value]) => value !== undefined && value !== null && value !== ''),
  );
}

export function jsonResult(record: Record<string, unknown>, suffix = ''): ToolOutput {
  const data = compact(record);
  return { content: JSON.stringify(data) + suffix, data };
}

export function errorResult(message: string, extra: Record<string, unknown> = {}): ToolOutput {
  const data = compact({ error: message, ...extra });
  return { content: JSON.stringify(data), data, isError: true };
}

/** Runs a tool body; refusals become `{"error"}` results, infrastructure failures propagate. */
export async function guarded(body: () => Promise<ToolOutput>): Promise<ToolOutput> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof FileToolError) return errorResult(error.message, error.extra ?? {});
    if (ShearsError.isInstance(error)) throw error;
    return errorResult(error instanceof Error ? error.message : String(error));
  }
}
