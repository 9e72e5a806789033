// HTTP error answers of the trajectory API, shaped as FastAPI writes them.

/** An answer other than 200, thrown anywhere below the router and written by the transport. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly contentType = 'application/json',
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

/** FastAPI's `{"detail": …}` error body. */
export const detail = (status: number, message: unknown, headers: Record<string, string> = {}) =>
  new HttpError(status, JSON.stringify({ detail: message }), 'application/json', headers);

export const TEXT_PLAIN = 'text/plain; charset=utf-8';
