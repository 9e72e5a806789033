// The worker's link to the trajectory API against a real HTTP server: "wait for trainer to start"
// is waited out (and reported), an API that goes away while the worker waits is a failure, and
// the gentle stop ends a wait.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAtroposLink } from './atropos-link.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((done) => server.close(done))));
});

/** A /register-env that answers "wait for trainer to start" `waits` times, then success. */
async function api(waits: number): Promise<{ url: string; server: Server; asked: () => number }> {
  let asked = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (request.url === '/register-env') {
        asked++;
        const body =
          asked > waits ? { status: 'success', env_id: 7 } : { status: 'wait for trainer to start' };
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      } else response.writeHead(404).end();
    });
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, asked: () => asked };
}

const fastClient = { retries: 1, initialBackoffMs: 5, maxBackoffMs: 10, timeoutMs: 2000 };

describe('AtroposLink.registerEnv', () => {
  it('waits while the trainer has not started, reporting the wait, then registers', async () => {
    const { url, asked } = await api(3);
    const link = createAtroposLink({ url, pollMs: 10, client: fastClient });
    let waits = 0;
    const envId = await link.registerEnv({
      name: 'demo',
      groupSize: 2,
      maxTokenLength: 64,
      onWait: () => waits++,
    });
    expect(envId).toBe(7);
    expect(waits).toBe(3);
    expect(asked()).toBe(4);
  });

  it('fails, naming the cause, when the API goes away while the worker waits (not an endless wait)', async () => {
    const { url, server } = await api(Number.POSITIVE_INFINITY);
    const link = createAtroposLink({ url, pollMs: 20, client: fastClient });
    let waits = 0;
    const registering = link.registerEnv({
      name: 'demo',
      groupSize: 2,
      maxTokenLength: 64,
      onWait: () => {
        waits++;
        // After the first "wait", the API process is gone.
        if (waits === 1) {
          server.closeAllConnections();
          server.close();
        }
      },
    });
    await expect(registering).rejects.toThrow(/ECONNREFUSED|refused|connect/i);
    expect(waits).toBe(1);
  });

  it('ends the wait at once on the gentle stop', async () => {
    const { url } = await api(Number.POSITIVE_INFINITY);
    const link = createAtroposLink({ url, pollMs: 60_000, client: fastClient });
    const drain = new AbortController();
    const registering = link.registerEnv({
      name: 'demo',
      groupSize: 2,
      maxTokenLength: 64,
      signal: drain.signal,
      onWait: () => drain.abort(),
    });
    await expect(registering).rejects.toThrow(/abort/i);
  });
});
