// Writes one JSON reply on a node:http response: the one helper of the HTTP servers shears runs
// (the gateway, the scripted test server).
import type { ServerResponse } from 'node:http';

/**
 * Sends `body` as JSON with `status`, `content-type` and `content-length` (plus `headers`). A
 * response whose headers already went out (a stream cut short) is ended as it is; one already
 * ended or destroyed is left alone.
 */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (response.writableEnded || response.destroyed) return;
  if (response.headersSent) {
    response.end();
    return;
  }
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  response.end(text);
}
