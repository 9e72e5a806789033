import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError, InvalidArgumentError, ServerError, TimeoutError } from '../errors.js';
import { httpRequest } from './http-request.js';
import { readBody } from './read-body.js';

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer(async (request, response) => {
    const body = (await readBody(request)).toString();
    if (request.url === '/echo') {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ method: request.method, body }));
    } else if (request.url === '/gzip') {
      response.writeHead(200, { 'content-encoding': 'gzip' });
      response.end(gzipSync('z'.repeat(5000)));
    } else if (request.url === '/busy') {
      response.writeHead(503, { 'retry-after': '2' });
      response.end('busy');
    } else if (request.url === '/hang') {
      // Never answers.
    } else if (request.url === '/cut') {
      response.writeHead(200, { 'content-length': '100' });
      response.write('partial');
      setTimeout(() => response.socket?.destroy(), 20);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function failure(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

describe('httpRequest', () => {
  it('sends a GET with a body (which fetch cannot) and reads the answer', async () => {
    const response = await httpRequest({ url: `${url}/echo`, body: '{"env_id":1}' });
    expect(response).toMatchObject({ status: 200, ok: true });
    expect(JSON.parse(response.body.toString())).toEqual({ method: 'GET', body: '{"env_id":1}' });
  });

  it('decodes a gzipped answer and returns an error status as an answer, headers and all', async () => {
    expect((await httpRequest({ url: `${url}/gzip` })).body.toString()).toBe('z'.repeat(5000));
    const busy = await httpRequest({ url: `${url}/busy`, method: 'POST' });
    expect(busy).toMatchObject({ status: 503, ok: false, headers: { 'retry-after': '2' } });
    expect(busy.body.toString()).toBe('busy');
  });

  it('turns the time limit, a refused connection and a body cut short into retryable ServerErrors naming the call', async () => {
    const timedOut = await failure(
      httpRequest({ url: `${url}/hang`, timeoutMs: 100, what: 'trajectory API GET /hang' }),
    );
    expect(timedOut).toMatchObject({
      retryable: true,
      message: 'trajectory API GET /hang: no answer within 100 ms',
    });
    expect(TimeoutError.isInstance(timedOut.cause)).toBe(true);
    const refused = await failure(httpRequest({ url: 'http://127.0.0.1:9/x' }));
    expect(ServerError.isInstance(refused)).toBe(true);
    expect(refused.message).toMatch(
      /^GET http:\/\/127\.0\.0\.1:9\/x: connection failed: connect ECONNREFUSED 127\.0\.0\.1:9$/,
    );
    const cut = await failure(httpRequest({ url: `${url}/cut` }));
    expect(cut).toMatchObject({ retryable: true });
    expect(cut.message).toMatch(/the response was cut short/);
  });

  it('refuses an answer over its size limit, which no retry fixes', async () => {
    const error = await failure(httpRequest({ url: `${url}/gzip`, maxResponseBytes: 1000 }));
    expect(error).toMatchObject({ retryable: false });
    expect(error.message).toBe(
      `GET ${url}/gzip: the response (decoded) is larger than the limit of 1000 bytes`,
    );
  });

  it('ends at once with an AbortedError when the caller aborts, and names a bad URL', async () => {
    const controller = new AbortController();
    const pending = httpRequest({ url: `${url}/hang`, signal: controller.signal });
    setTimeout(() => controller.abort('stop'), 20);
    const aborted = await failure(pending);
    expect(AbortedError.isInstance(aborted)).toBe(true);
    expect(aborted.cause).toBe('stop');
    expect(InvalidArgumentError.isInstance(await failure(httpRequest({ url: 'ftp://x/' })))).toBe(true);
    await expect(httpRequest({ url: 'not a url' })).rejects.toThrow('"not a url" is not a URL');
  });
});
