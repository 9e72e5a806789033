import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { AbortedError } from '../errors.js';
import { BodyReadError, decodeBody, readBody } from './read-body.js';

const text = 'shears '.repeat(2000);

function streamOf(...chunks: Buffer[]): Readable {
  return Readable.from(chunks);
}

async function failure(promise: Promise<unknown>): Promise<BodyReadError> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(BodyReadError.isInstance(error), String(error)).toBe(true);
  return error as BodyReadError;
}

describe('readBody', () => {
  it.each([
    ['identity', (body: Buffer) => body],
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const)('undoes %s', async (encoding, encode) => {
    const encoded = encode(Buffer.from(text));
    const halves = [encoded.subarray(0, 10), encoded.subarray(10)];
    const body = await readBody(streamOf(...halves), { encoding, maxBytes: text.length });
    expect(body.toString()).toBe(text);
    expect((await decodeBody(encoded, encoding, { maxBytes: text.length })).toString()).toBe(text);
  });

  it('refuses a body over its limit: declared, as sent, and once decoded (a gzip bomb)', async () => {
    expect(
      (
        await failure(
          readBody(streamOf(Buffer.from('x')), { maxBytes: 10, declaredLength: '11', what: 'request body' }),
        )
      ).message,
    ).toBe('request body is larger than the limit of 10 bytes (11 bytes declared)');
    const sent = await failure(readBody(streamOf(Buffer.alloc(8), Buffer.alloc(8)), { maxBytes: 10 }));
    expect(sent).toMatchObject({ reason: 'too_large', limit: 10 });
    // 1 MB of zeros gzips to about 1 KB: small as sent, refused once decoded.
    const bomb = gzipSync(Buffer.alloc(1 << 20));
    expect(bomb.length).toBeLessThan(4096);
    const decoded = await failure(readBody(streamOf(bomb), { maxBytes: 64 * 1024, encoding: 'gzip' }));
    expect(decoded.message).toBe('body (decoded) is larger than the limit of 65536 bytes');
    expect((await failure(decodeBody(bomb, 'gzip', { maxBytes: 64 * 1024 }))).reason).toBe('too_large');
  });

  it('names an encoding it cannot undo, and one that is corrupt', async () => {
    const unsupported = await failure(readBody(streamOf(Buffer.from('x')), { encoding: 'zstd' }));
    expect(unsupported.message).toBe(
      'body is encoded as "zstd", which cannot be decoded (supported: identity, gzip, deflate, br)',
    );
    const corrupt = await failure(readBody(streamOf(Buffer.from('not gzip')), { encoding: 'gzip' }));
    expect(corrupt.reason).toBe('bad_encoding');
    expect((await failure(decodeBody(Buffer.from('not gzip'), 'gzip'))).reason).toBe('bad_encoding');
  });

  it('stops at once when the signal aborts, destroying the stream (the default)', async () => {
    const source = new PassThrough();
    source.write('partial');
    const controller = new AbortController();
    const pending = readBody(source, { signal: controller.signal });
    controller.abort('stop');
    const error = await pending.catch((caught: unknown) => caught);
    expect(AbortedError.isInstance(error)).toBe(true);
    expect((error as AbortedError).cause).toBe('stop');
    expect(source.destroyed).toBe(true);
  });

  it('reports a body cut short', async () => {
    const source = new PassThrough();
    source.write('partial');
    const pending = readBody(source);
    source.destroy(new Error('socket hang up'));
    expect((await failure(pending)).message).toBe('body was cut short: socket hang up');
  });
});

describe('readBody on a server', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  async function post(
    body: Buffer,
    headers: Record<string, string>,
  ): Promise<{ status: number; text: string }> {
    if (!server) throw new Error('no server');
    const { port } = server.address() as AddressInfo;
    return new Promise((resolve, reject) => {
      const outgoing = request({ port, method: 'POST', headers }, (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
        );
      });
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  it('drains a refused request so its 413 reaches the client on the same connection', async () => {
    server = createServer((incoming, response) => {
      readBody(incoming, {
        maxBytes: 1024,
        encoding: incoming.headers['content-encoding'],
        rest: 'drain',
        what: 'request body',
      }).then(
        (body) => response.end(`got ${body.length}`),
        (error: BodyReadError) => {
          response.statusCode = error.reason === 'too_large' ? 413 : 400;
          response.end(error.message);
        },
      );
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    expect(await post(gzipSync(Buffer.from(text)), { 'content-encoding': 'gzip' })).toEqual({
      status: 413,
      text: 'request body (decoded) is larger than the limit of 1024 bytes',
    });
    expect(await post(Buffer.alloc(600), {})).toEqual({ status: 200, text: 'got 600' });
    // Sent in chunks with no length declared: refused partway, drained, answered.
    expect(await post(Buffer.alloc(200_000), { 'transfer-encoding': 'chunked' })).toMatchObject({
      status: 413,
    });
  });
});
