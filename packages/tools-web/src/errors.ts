// Errors of the web tools. Refusals (SSRF, content type, size) are shown to the model as a
// per-URL error; missing configuration names the variable to set.
import { ShearsError } from '@shears/core';

export class WebToolError extends ShearsError {
  readonly url: string | undefined;
  constructor(message: string, options: { url?: string; code?: string; cause?: unknown } = {}) {
    super(message, { code: options.code ?? 'SHEARS_WEB_TOOL', cause: options.cause });
    this.url = options.url;
  }
}

/** A URL refused by the SSRF guard: its scheme, or the address its host resolves to. */
export class SsrfBlockedError extends WebToolError {
  readonly address: string | undefined;
  readonly category: string;
  constructor(options: { url: string; message: string; address?: string; category: string }) {
    super(options.message, { url: options.url, code: 'SHEARS_SSRF_BLOCKED' });
    this.address = options.address;
    this.category = options.category;
  }
  static override isInstance(error: unknown): error is SsrfBlockedError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_SSRF_BLOCKED';
  }
}
