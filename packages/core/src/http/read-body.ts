// The one body reader of shears' HTTP code, for requests a server receives and responses a client
// downloads: it undoes the Content-Encoding (identity, gzip, deflate, br), refuses a body larger
// than its limit before and after decoding (so a small gzip bomb is refused too), and stops at
// once when the caller's signal aborts. Shaped after vercel/ai's `readResponseWithSizeLimit`.
import type { Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import { AbortedError, ShearsError } from '../errors.js';

/** Why a body could not be read: too large, an encoding this reader cannot undo or a corrupt one, or cut short. */
export type BodyReadFailure = 'too_large' | 'unsupported_encoding' | 'bad_encoding' | 'incomplete';

export class BodyReadError extends ShearsError {
  readonly reason: BodyReadFailure;
  /** The limit in bytes, for `too_large`. */
  readonly limit: number | undefined;
  constructor(options: { message: string; reason: BodyReadFailure; limit?: number; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_BODY_READ', cause: options.cause });
    this.reason = options.reason;
    this.limit = options.limit;
  }
  static override isInstance(error: unknown): error is BodyReadError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_BODY_READ';
  }
}

const SUPPORTED_ENCODINGS = ['identity', 'gzip', 'deflate', 'br'] as const;

export interface ReadBodyOptions {
  /** The largest body accepted, in bytes, both as sent and once decoded (default: no limit). */
  maxBytes?: number;
  /** The `content-encoding` header to undo (default identity). */
  encoding?: string | string[] | undefined;
  /** The `content-length` header: a larger one is refused before a byte is read. */
  declaredLength?: string | string[] | number | undefined;
  /** Ends the read at once with an AbortedError. */
  signal?: AbortSignal;
  /**
   * What becomes of the rest of a body that is refused or aborted: `destroy` the stream (a
   * response being downloaded: stop the transfer; the default) or `drain` it (a request its
   * server still answers, with a 413 say, on the same connection).
   */
  rest?: 'destroy' | 'drain';
  /** What the body is, for messages ("request body", "response from http://…"); default "body". */
  what?: string;
}

function encodingOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  const encoding = (value ?? '').trim().toLowerCase();
  return encoding === '' ? 'identity' : encoding === 'x-gzip' ? 'gzip' : encoding;
}

function decoderFor(
  encoding: string,
  what: string,
): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  switch (encoding) {
    case 'identity':
      return null;
    case 'gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      throw unsupported(encoding, what);
  }
}

function unsupported(encoding: string, what: string): BodyReadError {
  return new BodyReadError({
    reason: 'unsupported_encoding',
    message: `${what} is encoded as "${encoding}", which cannot be decoded (supported: ${SUPPORTED_ENCODINGS.join(', ')})`,
  });
}

function tooLarge(what: string, limit: number, size?: number): BodyReadError {
  return new BodyReadError({
    reason: 'too_large',
    limit,
    message: `${what} is larger than the limit of ${limit} bytes${size === undefined ? '' : ` (${size} bytes declared)`}`,
  });
}

/**
 * Reads a whole body from a Node stream (an IncomingMessage, undici's or `Readable.fromWeb`'s
 * body) into one Buffer, decoded. Rejects with a BodyReadError (too large, unsupported or corrupt
 * encoding, cut short) or an AbortedError.
 */
export function readBody(
  source: Readable | NodeJS.ReadableStream,
  options: ReadBodyOptions = {},
): Promise<Buffer> {
  const what = options.what ?? 'body';
  const limit = options.maxBytes ?? Number.POSITIVE_INFINITY;
  const stream = source as Readable;
  const release = () => {
    if (options.rest === 'drain') stream.resume();
    else stream.destroy();
  };
  const declared = Number(
    (Array.isArray(options.declaredLength) ? options.declaredLength[0] : options.declaredLength) ??
      Number.NaN,
  );
  if (Number.isFinite(declared) && declared > limit) {
    release();
    return Promise.reject(tooLarge(what, limit, declared));
  }
  if (options.signal?.aborted) {
    release();
    return Promise.reject(new AbortedError({ cause: options.signal.reason }));
  }
  let decoder: ReturnType<typeof decoderFor>;
  try {
    decoder = decoderFor(encodingOf(options.encoding), what);
  } catch (error) {
    release();
    return Promise.reject(error);
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let raw = 0;
    let decoded = 0;
    let settled = false;
    const finish = (error: unknown, body?: Buffer) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', onAbort);
      stream.off('data', onRaw);
      if (error !== undefined) {
        decoder?.destroy();
        release();
        reject(error);
      } else resolve(body as Buffer);
    };
    const onAbort = () => finish(new AbortedError({ cause: options.signal?.reason }));
    const onDecoded = (chunk: Buffer) => {
      decoded += chunk.length;
      if (decoded > limit) finish(tooLarge(`${what} (decoded)`, limit));
      else chunks.push(chunk);
    };
    const onRaw = (chunk: Buffer | string) => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      raw += bytes.length;
      if (raw > limit) finish(tooLarge(what, limit));
      else if (decoder) decoder.write(bytes);
      else onDecoded(bytes);
    };
    const done = () =>
      finish(undefined, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, decoded));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    stream.on('data', onRaw);
    stream.once('error', (error: Error) =>
      finish(
        options.signal?.aborted
          ? new AbortedError({ cause: options.signal.reason })
          : new BodyReadError({
              reason: 'incomplete',
              message: `${what} was cut short: ${error.message}`,
              cause: error,
            }),
      ),
    );
    // A response whose connection closed before its end never emits 'end'.
    stream.once('close', () => {
      if (!stream.readableEnded)
        finish(
          new BodyReadError({
            reason: 'incomplete',
            message: `${what} was cut short: the connection closed`,
          }),
        );
    });
    if (decoder) {
      decoder.on('data', onDecoded);
      decoder.once('error', (error: Error) =>
        finish(
          new BodyReadError({
            reason: 'bad_encoding',
            message: `${what} is not valid ${encodingOf(options.encoding)}: ${error.message}`,
            cause: error,
          }),
        ),
      );
      decoder.once('end', done);
      stream.once('end', () => decoder.end());
    } else stream.once('end', done);
  });
}

/**
 * Decodes a body already read whole (the undici client gathers its chunks itself) by its
 * `content-encoding`, refusing more than `maxBytes` once decoded. Rejects like `readBody`.
 */
export async function decodeBody(
  body: Buffer,
  encoding: string | string[] | undefined,
  options: { maxBytes?: number; what?: string } = {},
): Promise<Buffer> {
  const what = options.what ?? 'body';
  const name = encodingOf(encoding);
  if (name === 'identity') {
    if (options.maxBytes !== undefined && body.length > options.maxBytes)
      throw tooLarge(what, options.maxBytes);
    return body;
  }
  const limits = options.maxBytes === undefined ? {} : { maxOutputLength: options.maxBytes };
  type Decode = (
    buffer: Buffer,
    options: zlib.ZlibOptions & zlib.BrotliOptions,
    callback: (error: Error | null, result: Buffer) => void,
  ) => void;
  const decoders: Record<string, Decode> = {
    gzip: zlib.gunzip,
    deflate: zlib.inflate,
    br: zlib.brotliDecompress,
  };
  const decode = decoders[name];
  if (!decode) throw unsupported(name, what);
  return new Promise<Buffer>((resolve, reject) => {
    decode(body, limits, (error, result) => {
      if (!error) return resolve(result);
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' && options.maxBytes !== undefined)
        return reject(tooLarge(`${what} (decoded)`, options.maxBytes));
      reject(
        new BodyReadError({
          reason: 'bad_encoding',
          message: `${what} is not valid ${name}: ${error.message}`,
          cause: error,
        }),
      );
    });
  });
}
