// A small pool of worker threads that gunzip, parse and validate ScoredData bodies, so the
// event loop that answers /batch, /status and the trainer never waits on a 2 MB JSON.parse.
// With `workers: 0` decoding runs inline (tests, tiny deployments).
import { Worker } from 'node:worker_threads';
import * as zlib from 'node:zlib';
import { type DecodeRequest, type DecodeResult, wireDecoderSource } from './wire-decode.js';

export interface DecodePool {
  /** May detach `request.body` (its ArrayBuffer is transferred to a worker). */
  decode(request: DecodeRequest): Promise<DecodeResult>;
  close(): Promise<void>;
}

function workerSource(): string {
  // `__name` guards against bundlers/transpilers (esbuild keepNames) that wrap functions.
  return [
    'const __name = (target) => target;',
    `const build = ${wireDecoderSource.toString()};`,
    "const { parentPort } = require('node:worker_threads');",
    "const decoder = build(require('node:zlib'));",
    'parentPort.on("message", (message) => {',
    '  let result;',
    '  try { result = decoder.decode(message.request); }',
    '  catch (error) { result = { ok: false, status: 500, contentType: "text/plain; charset=utf-8", body: "Internal Server Error: " + (error && error.message) }; }',
    '  const transfer = result.ok ? result.groups.map((group) => group.payload.buffer) : [];',
    '  parentPort.postMessage({ id: message.id, result }, transfer);',
    '});',
  ].join('\n');
}

export function createDecodePool(options: { workers: number }): DecodePool {
  const inline = wireDecoderSource(zlib);
  if (options.workers <= 0) {
    return { decode: async (request) => inline.decode(request), close: async () => {} };
  }
  // Workers created with `eval: true` run as CommonJS scripts, so the source uses `require`.
  const source = workerSource();
  const pending = new Map<
    number,
    { resolve: (result: DecodeResult) => void; reject: (error: Error) => void }
  >();
  const load = new Map<Worker, number>();
  let nextId = 0;
  const workers: Worker[] = [];
  for (let index = 0; index < options.workers; index++) {
    const worker = new Worker(source, { eval: true });
    worker.unref();
    load.set(worker, 0);
    worker.on('message', (message: { id: number; result: DecodeResult }) => {
      load.set(worker, (load.get(worker) ?? 1) - 1);
      const entry = pending.get(message.id);
      pending.delete(message.id);
      entry?.resolve(message.result);
    });
    worker.on('error', (error) => {
      for (const entry of pending.values()) entry.reject(error);
      pending.clear();
    });
    workers.push(worker);
  }
  return {
    decode(request) {
      // Least-loaded worker; ties go to the first.
      let chosen = workers[0] as Worker;
      for (const worker of workers) if ((load.get(worker) ?? 0) < (load.get(chosen) ?? 0)) chosen = worker;
      load.set(chosen, (load.get(chosen) ?? 0) + 1);
      const id = nextId++;
      return new Promise<DecodeResult>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        // A body that owns its whole ArrayBuffer (Buffer.concat's result) moves to the worker
        // instead of being copied; the caller never touches it again, and the worker hands
        // the stored bytes back the same way.
        const { body } = request;
        const owned =
          body.byteOffset === 0 &&
          body.byteLength === body.buffer.byteLength &&
          body.buffer instanceof ArrayBuffer;
        chosen.postMessage({ id, request }, owned ? [body.buffer] : []);
      });
    },
    async close() {
      await Promise.all(workers.map((worker) => worker.terminate()));
    },
  };
}
