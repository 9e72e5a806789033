import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { sendJson } from './send-json.js';

async function serve(handler: RequestListener): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('sendJson', () => {
  it('sends the body with its status, length and extra headers', async () => {
    const server = await serve((_request, response) =>
      sendJson(response, 429, { error: 'slow down', note: 'héllo' }, { 'retry-after': '2' }),
    );
    try {
      const response = await fetch(server.url);
      expect(response.status).toBe(429);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.headers.get('retry-after')).toBe('2');
      const text = await response.text();
      expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
      expect(JSON.parse(text)).toEqual({ error: 'slow down', note: 'héllo' });
    } finally {
      await server.close();
    }
  });

  it('ends a response whose headers already went out instead of throwing, and leaves an ended one alone', async () => {
    const thrown: unknown[] = [];
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: partial\n\n');
      try {
        sendJson(response, 500, { error: 'late' });
        sendJson(response, 500, { error: 'later still' });
      } catch (error) {
        thrown.push(error);
      }
    });
    try {
      const response = await fetch(server.url);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('data: partial\n\n');
      expect(thrown).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
