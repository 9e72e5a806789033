// A real HTTP server on 127.0.0.1 for the web-tool tests, with per-path handlers and a log of
// the requests it received.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '@shears/core/http';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void;

export interface TestServer {
  origin: string;
  port: number;
  requests: RecordedRequest[];
  route(path: string, handler: Handler): void;
  close(): Promise<void>;
}

export async function startServer(): Promise<TestServer> {
  const routes = new Map<string, Handler>();
  const requests: RecordedRequest[] = [];
  const server = createServer(async (request, response) => {
    const raw = await readBody(request).catch(() => undefined);
    if (raw === undefined) return;
    const body = raw.toString('utf8');
    const path = request.url ?? '/';
    requests.push({ method: request.method ?? 'GET', path, headers: request.headers, body });
    const handler = routes.get(path.split('?')[0]!);
    if (!handler) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    handler(request, response, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    route: (path, handler) => routes.set(path, handler),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function send(type: string, body: string | Buffer, status = 200): Handler {
  return (_request, response) => response.writeHead(status, { 'content-type': type }).end(body);
}
