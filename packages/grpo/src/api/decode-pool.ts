// A small pool of worker threads that gunzip, parse and validate ScoredData bodies, so the
// event loop that answers /batch, /status and the trainer never waits on a 2 MB body. Each
// worker runs decode-worker.ts, which imports the decoder like any module. With `workers: 0`
// decoding runs inline (tests, tiny deployments).
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type DecodeRequest, type DecodeResult, decode } from './wire-decode.js';

export interface DecodePool {
  /** May detach `request.body` (its ArrayBuffer is transferred to a worker). */
  decode(request: DecodeRequest): Promise<DecodeResult>;
  /** Resolves once every worker has loaded the decoder (or rejects with a worker's start error). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

// From dist the worker is decode-worker.js. From source (the repository's tests and benches run
// the TypeScript through tsx) the worker's modules are bundled once per process with esbuild
// (a dev dependency) and evaluated as one script: registering tsx in every worker cost ~2 s
// of start-up per worker on a busy machine, bundling costs ~0.1 s once.
let sourceBundle: Promise<string> | undefined;

async function startWorker(): Promise<Worker> {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./decode-worker.js', here));
  sourceBundle ??= import('esbuild').then(async (esbuild) => {
    const built = await esbuild.build({
      entryPoints: [fileURLToPath(new URL('./decode-worker.ts', here))],
      bundle: true,
      write: false,
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      conditions: ['@shears/source'],
      logLevel: 'silent',
    });
    return built.outputFiles[0]?.text ?? '';
  });
  return new Worker(await sourceBundle, { eval: true });
}

export function createDecodePool(options: { workers: number }): DecodePool {
  if (options.workers <= 0) {
    return { decode: async (request) => decode(request), ready: async () => {}, close: async () => {} };
  }
  const pending = new Map<
    number,
    { resolve: (result: DecodeResult) => void; reject: (error: Error) => void }
  >();
  const load = new Map<Worker, number>();
  let nextId = 0;
  const workers: Worker[] = [];
  const attach = (worker: Worker): Promise<void> => {
    worker.unref();
    load.set(worker, 0);
    workers.push(worker);
    worker.on('message', (message: { id: number; result: DecodeResult } | { ready: true }) => {
      if ('ready' in message) return;
      load.set(worker, (load.get(worker) ?? 1) - 1);
      const entry = pending.get(message.id);
      pending.delete(message.id);
      entry?.resolve(message.result);
    });
    worker.on('error', (error) => {
      for (const entry of pending.values()) entry.reject(error);
      pending.clear();
    });
    return new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('message', () => {
        worker.off('error', reject);
        resolve();
      });
    });
  };
  const started = Promise.all(Array.from({ length: options.workers }, () => startWorker().then(attach))).then(
    () => undefined,
  );
  started.catch(() => {}); // reported by ready() and decode()
  return {
    async decode(request) {
      await started;
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
          body.byteLength > Buffer.poolSize &&
          body.buffer instanceof ArrayBuffer;
        chosen.postMessage({ id, request }, owned ? [body.buffer] : []);
      });
    },
    ready: () => started,
    async close() {
      await started.catch(() => {});
      await Promise.all(workers.map((worker) => worker.terminate()));
    },
  };
}
