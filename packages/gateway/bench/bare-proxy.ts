// The overhead bench's floor for any proxy: a pass-through HTTP proxy that forwards each request
// body, bytes as they are, to the same path on the backend (node:http, a keep-alive agent) and
// sends the answer back in one write, as the gateway does. No JSON, sessions, threads or records.
// What it adds over calling the backend directly is what a second HTTP hop between processes
// costs on the machine; the gateway's added time minus it is the gateway's own work.
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SessionAddress } from './overhead-requests.js';

export interface BareProxy {
  /** Base URLs shaped as a gateway session's, so the bench's client calls it the same way. */
  address: SessionAddress;
  close(): Promise<void>;
}

export async function startBareProxy(backendBaseUrl: string): Promise<BareProxy> {
  const backend = new URL(backendBaseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const upstream = httpRequest(
        {
          host: backend.hostname,
          port: backend.port,
          path: request.url,
          method: request.method,
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => parts.push(chunk));
          answer.on('end', () => {
            const out = Buffer.concat(parts);
            response.writeHead(answer.statusCode ?? 502, {
              'content-type': answer.headers['content-type'] ?? 'application/json',
              'content-length': out.length,
            });
            response.end(out);
          });
        },
      );
      upstream.on('error', (error) => {
        response.writeHead(502, { 'content-type': 'text/plain' });
        response.end(String(error));
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    address: { baseUrl: url, openaiBaseUrl: `${url}/v1`, apiKey: 'none' },
    close: async () => {
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
