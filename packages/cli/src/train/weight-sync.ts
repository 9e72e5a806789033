// Weight sync from the reference trainer to a vLLM server (train.weight_sync): the trainer writes
// a checkpoint every train.reference.checkpoint_every steps (OUTPUT/checkpoints/step-N, its
// `checkpoint.json` last); `shears train` watches for them and either restarts the vLLM server it
// supervises with that folder as its model (`restart`), or loads the checkpoint's LoRA adapter
// into the running server through `/v1/unload_lora_adapter` + `/v1/load_lora_adapter` under one
// name (`lora`; the server needs VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora, and the
// workers ask for that name as their model). A sync that fails stops the run: training on, while
// the server keeps serving old weights, would be off-policy without a word.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AbortedError, ServerError } from '@shears/core';
import { sleep } from '@shears/core/http';
import { linkSignals } from '@shears/core/internal';

interface WeightSyncSettings {
  mode: 'restart' | 'lora';
  /** The vLLM server's origin, e.g. http://127.0.0.1:8001. */
  baseUrl: string;
  /** `restart`: the server's command; "{model}" is replaced by the model folder. */
  command?: readonly string[];
  /** `lora`: the adapter name the workers ask for (server.model). */
  loraName?: string;
  /** The model the server starts with (`restart`), before the first checkpoint. */
  initialModel: string;
  /** OUTPUT/checkpoints of the trainer. */
  checkpoints: string;
  /** How long a (re)started server may take to answer /health. */
  healthTimeoutMs?: number;
  pollMs?: number;
  env?: Record<string, string | undefined>;
  fetch?: typeof globalThis.fetch;
  log: (line: string) => void;
}

export interface SyncedCheckpoint {
  step: number;
  folder: string;
  policyVersion: number | null;
}

export interface WeightSync {
  /** Starts the server (`restart`) and the watcher. */
  start(): Promise<void>;
  /** Checkpoints synced so far, in order. */
  readonly synced: readonly SyncedCheckpoint[];
  /** Settles with the first failure (the run then stops); never resolves otherwise. */
  readonly failed: Promise<Error>;
  close(): Promise<void>;
}

/** Completed checkpoints (their checkpoint.json written), oldest first. */
function completedCheckpoints(folder: string): SyncedCheckpoint[] {
  if (!existsSync(folder)) return [];
  const found: SyncedCheckpoint[] = [];
  for (const name of readdirSync(folder)) {
    const match = /^step-(\d+)$/.exec(name);
    const marker = join(folder, name, 'checkpoint.json');
    if (!match || !existsSync(marker)) continue;
    let policyVersion: number | null = null;
    try {
      const parsed = JSON.parse(readFileSync(marker, 'utf8')) as { policy_version?: unknown };
      if (typeof parsed.policy_version === 'number') policyVersion = parsed.policy_version;
    } catch {
      continue; // being written: the next poll reads it
    }
    found.push({ step: Number(match[1]), folder: join(folder, name), policyVersion });
  }
  return found.sort((a, b) => a.step - b.step);
}

async function waitHealthy(
  url: string,
  fetcher: typeof globalThis.fetch,
  options: { timeoutMs: number; alive: () => boolean; signal: AbortSignal },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (options.signal.aborted) throw new AbortedError({ cause: options.signal.reason });
    if (!options.alive()) throw new Error(`the vLLM server exited before ${url} answered`);
    const attempt = linkSignals([options.signal], { timeoutMs: 5000 });
    try {
      const response = await fetcher(url, { signal: attempt.signal });
      if (response.ok) return;
      last = `HTTP ${response.status}`;
    } catch (error) {
      last = (error as Error).message;
    } finally {
      attempt.dispose();
    }
    // Ends at once when the sync closes (the run stops), so no wait outlives it.
    await sleep(200, options.signal);
  }
  const timeoutMs = options.timeoutMs;
  throw new Error(`${url} did not answer 200 within ${Math.round(timeoutMs / 1000)} s (last: ${last})`);
}

async function post(
  fetcher: typeof globalThis.fetch,
  url: string,
  body: unknown,
  signal: AbortSignal,
): Promise<{ status: number; text: string }> {
  const call = linkSignals([signal], { timeoutMs: 600_000 });
  try {
    const response = await fetcher(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: call.signal,
    });
    return { status: response.status, text: (await response.text()).slice(0, 500) };
  } finally {
    call.dispose();
  }
}

export function createWeightSync(settings: WeightSyncSettings): WeightSync {
  const fetcher = settings.fetch ?? globalThis.fetch;
  const origin = settings.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  const healthTimeoutMs = settings.healthTimeoutMs ?? 600_000;
  const synced: SyncedCheckpoint[] = [];
  let child: ChildProcess | undefined;
  let timer: NodeJS.Timeout | undefined;
  let busy = false;
  let closed = false;
  // Aborted by close(): ends a health wait or an adapter load in flight.
  const closing = new AbortController();
  let restarting = false;
  let fail!: (error: Error) => void;
  const failed = new Promise<Error>((done) => {
    fail = done;
  });

  const launch = (model: string) => {
    const command = (settings.command ?? []).map((part) => part.replaceAll('{model}', model));
    settings.log(`starting the vLLM server: ${command.join(' ')}`);
    const started = spawn(command[0]!, command.slice(1), {
      env: { ...process.env, ...settings.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
    });
    for (const stream of [started.stdout, started.stderr])
      if (stream)
        createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) =>
          settings.log(line),
        );
    started.once('error', (error) =>
      fail(new Error(`the vLLM server command failed to start: ${error.message}`)),
    );
    started.once('exit', (code, signal) => {
      if (!closed && !restarting && child === started)
        fail(new Error(`the vLLM server exited (${code ?? signal}) while the run needs it`));
    });
    child = started;
    return started;
  };

  const stopChild = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null || running.pid === undefined)
      return;
    const exited = new Promise<void>((done) => running.once('exit', () => done()));
    const signal = (name: NodeJS.Signals) => {
      try {
        if (process.platform === 'win32') running.kill(name);
        else process.kill(-running.pid!, name);
      } catch {
        // already gone
      }
    };
    signal('SIGTERM');
    const killed = setTimeout(() => signal('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killed);
  };

  const startServer = async (model: string) => {
    const started = launch(model);
    await waitHealthy(`${origin}/health`, fetcher, {
      timeoutMs: healthTimeoutMs,
      alive: () => started.exitCode === null && started.signalCode === null,
      signal: closing.signal,
    });
  };

  const sync = async (checkpoint: SyncedCheckpoint) => {
    if (settings.mode === 'restart') {
      settings.log(`step ${checkpoint.step}: restarting the vLLM server from ${checkpoint.folder}`);
      restarting = true;
      try {
        await stopChild();
        await startServer(checkpoint.folder);
      } finally {
        restarting = false;
      }
    } else {
      const adapter = join(checkpoint.folder, 'adapter');
      if (!existsSync(join(adapter, 'adapter_config.json')))
        throw new Error(
          `${adapter} holds no LoRA adapter (adapter_config.json): weight_sync lora needs train.reference.lora_rank > 0`,
        );
      const name = settings.loraName ?? 'policy';
      // Same name, new weights: unload, then load. Before the first sync the name is not loaded
      // and vLLM answers 4xx, which is expected; a 5xx is not.
      const unloaded = await post(
        fetcher,
        `${origin}/v1/unload_lora_adapter`,
        { lora_name: name },
        closing.signal,
      );
      if (unloaded.status >= 500)
        throw new Error(`POST ${origin}/v1/unload_lora_adapter: HTTP ${unloaded.status}: ${unloaded.text}`);
      const loaded = await post(
        fetcher,
        `${origin}/v1/load_lora_adapter`,
        { lora_name: name, lora_path: adapter },
        closing.signal,
      );
      if (loaded.status !== 200)
        throw new Error(
          `POST ${origin}/v1/load_lora_adapter (${name} ← ${adapter}): HTTP ${loaded.status}: ${loaded.text}`,
        );
      settings.log(`step ${checkpoint.step}: loaded LoRA adapter ${adapter} as "${name}"`);
    }
    synced.push(checkpoint);
  };

  const poll = async () => {
    if (busy || closed) return;
    busy = true;
    try {
      const last = synced.at(-1)?.step ?? 0;
      const next = completedCheckpoints(settings.checkpoints).filter((entry) => entry.step > last);
      // Only the newest matters: an older one would be replaced at once.
      const newest = next.at(-1);
      if (newest) await sync(newest);
    } catch (error) {
      // A sync cut short by close() is the run stopping, not a failed sync.
      if (closed) return;
      fail(
        new ServerError({
          message: `weight sync (${settings.mode}) to ${origin} failed: ${(error as Error).message}`,
          endpoint: origin,
          model: settings.loraName ?? settings.initialModel,
          retryable: false,
          cause: error,
        }),
      );
    } finally {
      busy = false;
    }
  };

  return {
    synced,
    failed,
    async start() {
      if (settings.mode === 'restart') await startServer(settings.initialModel);
      timer = setInterval(() => void poll(), settings.pollMs ?? 500);
    },
    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      closing.abort();
      while (busy) await sleep(50);
      await stopChild();
    },
  };
}
