// The decode worker thread: decodes each ScoredData body it is sent (wire-decode.ts) and hands
// the stored bytes back, transferred rather than copied. Started by decode-pool.ts.
import { parentPort } from 'node:worker_threads';
import { type DecodeRequest, type DecodeResult, decode } from './wire-decode.js';

const port = parentPort;
if (port === null) throw new Error('decode-worker.ts runs as a worker thread of the trajectory API');
port.on('message', (message: { id: number; request: DecodeRequest }) => {
  let result: DecodeResult;
  try {
    result = decode(message.request);
  } catch (error) {
    result = {
      ok: false,
      status: 500,
      contentType: 'text/plain; charset=utf-8',
      body: `Internal Server Error: ${(error as Error)?.message ?? String(error)}`,
    };
  }
  // Groups of one list may share one buffer: each is transferred once. Small ones may live in
  // Node's shared Buffer pool, which must not be transferred; they are copied.
  const transfer = result.ok
    ? [...new Set(result.groups.map((group) => group.payload.buffer as ArrayBuffer))].filter(
        (buffer) => buffer.byteLength > Buffer.poolSize,
      )
    : [];
  port.postMessage({ id: message.id, result }, transfer);
});
// Loaded and listening: the pool's `ready()` resolves once every worker has said so.
port.postMessage({ ready: true });
