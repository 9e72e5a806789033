// The trajectory API client's retries, against a real HTTP server that answers as scripted: the
// one retry policy of @shears/core/http (Retry-After as an HTTP date honoured, a long one not
// waited for, the run's stop signal ending a wait at once).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AbortedError, ServerError } from '@shears/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createTrajectoryApiClient } from './trajectory-api-client.js';

type Answer = (request: IncomingMessage, response: ServerResponse) => void;

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A server answering each request with the next of `answers` (the last one repeats). */
async function scripted(answers: Answer[]): Promise<{ url: string; requests: () => number }> {
  let count = 0;
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => (answers[Math.min(count++, answers.length - 1)] as Answer)(request, response));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests: () => count };
}

const busy =
  (headers: Record<string, string> = {}): Answer =>
  (_request, response) => {
    response.writeHead(503, headers);
    response.end('busy');
  };
const ok: Answer = (_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end('{"current_step":4,"queue_size":0}');
};

describe('trajectory API client retries', () => {
  it('honours Retry-After given as an HTTP date', async () => {
    const later = new Date(Date.now() + 30_000).toUTCString();
    const api = await scripted([busy({ 'retry-after': later }), ok]);
    const waits: number[] = [];
    const client = createTrajectoryApiClient({ url: api.url, sleep: async (ms) => void waits.push(ms) });
    expect(await client.status()).toEqual({ current_step: 4, queue_size: 0 });
    // The date has a resolution of a second; the backoff alone would be at most 250 ms.
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(28_000);
    expect(waits[0]).toBeLessThanOrEqual(30_000);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs: it fails at once, saying why', async () => {
    const api = await scripted([busy({ 'retry-after': '3600' }), busy({ 'retry-after': '3600' }), ok]);
    const waits: number[] = [];
    const client = createTrajectoryApiClient({ url: api.url, sleep: async (ms) => void waits.push(ms) });
    const error = await client.status().catch((caught: unknown) => caught);
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /^trajectory API GET \/status answered 503: busy \(Retry-After 3600 s exceeds maxRetryAfterMs 60000 ms; not waiting\)$/,
    );
    expect(waits).toEqual([]);
    expect(api.requests()).toBe(1);
    // A client that may wait longer does.
    const patient = createTrajectoryApiClient({
      url: api.url,
      maxRetryAfterMs: 2 * 3_600_000,
      sleep: async (ms) => void waits.push(ms),
    });
    expect(await patient.status()).toMatchObject({ current_step: 4 });
    expect(waits).toEqual([3_600_000]);
  });

  it('the run’s stop signal ends a retry wait at once, for calls that pass no signal of their own', async () => {
    const api = await scripted([busy()]);
    const stop = new AbortController();
    // A backoff of an hour, on the real abortable sleep: only the stop signal can end it.
    const client = createTrajectoryApiClient({
      url: api.url,
      signal: stop.signal,
      initialBackoffMs: 3_600_000,
      maxBackoffMs: 3_600_000,
    });
    const pending = client.status();
    while (api.requests() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    stop.abort(new Error('Ctrl-C'));
    const error = await pending.catch((caught: unknown) => caught);
    expect(AbortedError.isInstance(error)).toBe(true);
    expect(api.requests()).toBe(1);
    // Once stopped, nothing more is sent.
    await expect(client.info()).rejects.toSatisfy((caught) => AbortedError.isInstance(caught));
    expect(api.requests()).toBe(1);
  });

  it('the stop signal also ends the wait for the trainer to start', async () => {
    const api = await scripted([
      (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"status":"wait for trainer to start"}');
      },
    ]);
    const stop = new AbortController();
    const client = createTrajectoryApiClient({ url: api.url, signal: stop.signal });
    const pending = client.registerEnv(
      { maxTokenLength: 16, desiredName: 'env', groupSize: 2 },
      { pollMs: 3_600_000 },
    );
    while (api.requests() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    stop.abort();
    await expect(pending).rejects.toSatisfy((caught) => AbortedError.isInstance(caught));
    expect(api.requests()).toBe(1);
  });
});
