// The error type file tools throw for refusals the model should read (bad paths, missing
// files). Tool handlers turn it into hermes-style `{"error": ...}` JSON.
import { ShearsError } from '@shears/core';

export class FileToolError extends ShearsError {
  readonly path: string | undefined;
  readonly extra: Record<string, unknown> | undefined;
  constructor(
    message: string,
    options: { path?: string; extra?: Record<string, unknown>; code?: string; cause?: unknown } = {},
  ) {
    super(message, { code: options.code ?? 'SHEARS_FILE_TOOL', cause: options.cause });
    this.path = options.path;
    this.extra = options.extra;
  }
}
