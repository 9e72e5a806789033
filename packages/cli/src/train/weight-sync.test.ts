// Weight sync to vLLM, the HTTP and process side (no real vLLM runs here): LoRA hot-swap against
// the scripted server speaking vLLM's /v1/unload_lora_adapter and /v1/load_lora_adapter (404 for
// an adapter that is not loaded, 400 for a name loaded twice, as vLLM does), and restart from a
// checkpoint with a real server process shears starts, stops and starts again.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScriptedServer, type ScriptedServer } from '@shears/core/test';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runShears } from '../test-support/run-cli.js';
import { freeLoopbackPort } from './reference-trainer.js';
import { createWeightSync, type WeightSync } from './weight-sync.js';

const dir = mkdtempSync(join(tmpdir(), 'shears-weight-sync-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const open: (WeightSync | ScriptedServer)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((entry) => entry.close()));
});

function send(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

/** vLLM's runtime LoRA routes, as the server answers them (VLLM_ALLOW_RUNTIME_LORA_UPDATING=True). */
async function scriptedLoraServer(options: { failLoads?: boolean } = {}) {
  const loaded = new Map<string, string>();
  const calls: string[] = [];
  const server = await createScriptedServer({
    routes: {
      '/v1/load_lora_adapter': (_request, response, raw) => {
        const body = JSON.parse(raw.toString()) as { lora_name: string; lora_path: string };
        calls.push(`load ${body.lora_name} ${body.lora_path}`);
        if (options.failLoads) return send(response, 500, { error: { message: 'CUDA out of memory' } });
        if (loaded.has(body.lora_name))
          return send(response, 400, {
            error: { message: `The lora adapter '${body.lora_name}' has already been loaded.` },
          });
        if (!existsSync(join(body.lora_path, 'adapter_config.json')))
          return send(response, 404, { error: { message: `No adapter found at ${body.lora_path}` } });
        loaded.set(body.lora_name, body.lora_path);
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end(`Success: LoRA adapter '${body.lora_name}' added successfully.`);
      },
      '/v1/unload_lora_adapter': (_request, response, raw) => {
        const body = JSON.parse(raw.toString()) as { lora_name: string };
        calls.push(`unload ${body.lora_name}`);
        if (!loaded.delete(body.lora_name))
          return send(response, 404, {
            error: { message: `The lora adapter '${body.lora_name}' cannot be found.` },
          });
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end(`Success: LoRA adapter '${body.lora_name}' removed successfully.`);
      },
    },
  });
  open.push(server);
  return { server, loaded, calls };
}

/** A checkpoint as the trainer writes it: the folder, the adapter, checkpoint.json last. */
function writeCheckpoint(checkpoints: string, step: number, adapter = true): string {
  const folder = join(checkpoints, `step-${step}`);
  mkdirSync(join(folder, 'adapter'), { recursive: true });
  if (adapter) writeFileSync(join(folder, 'adapter', 'adapter_config.json'), '{"r": 8}');
  writeFileSync(join(folder, 'checkpoint.json'), JSON.stringify({ step, policy_version: step }));
  return folder;
}

async function until(condition: () => boolean, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

describe('weight sync: LoRA hot-swap through /v1/load_lora_adapter', () => {
  it('loads each new checkpoint under one name (unload, then load), newest only', async () => {
    const { server, loaded, calls } = await scriptedLoraServer();
    const checkpoints = join(dir, 'lora', 'checkpoints');
    const logs: string[] = [];
    const sync = createWeightSync({
      mode: 'lora',
      baseUrl: `${server.origin}/v1`,
      loraName: 'policy',
      initialModel: '/models/base',
      checkpoints,
      pollMs: 50,
      log: (line) => logs.push(line),
    });
    open.push(sync);
    await sync.start();
    // A folder still being written (no checkpoint.json yet) is not synced.
    mkdirSync(join(checkpoints, 'step-1', 'adapter'), { recursive: true });
    await new Promise((done) => setTimeout(done, 300));
    expect(calls).toEqual([]);

    const second = writeCheckpoint(checkpoints, 2);
    await until(() => sync.synced.length === 1, 'the first sync');
    expect(loaded.get('policy')).toBe(join(second, 'adapter'));
    // Two checkpoints at once: only the newest is loaded.
    writeCheckpoint(checkpoints, 4);
    const sixth = writeCheckpoint(checkpoints, 6);
    await until(() => sync.synced.length === 2, 'the second sync');
    expect(sync.synced.map((entry) => [entry.step, entry.policyVersion])).toEqual([
      [2, 2],
      [6, 6],
    ]);
    expect(loaded.get('policy')).toBe(join(sixth, 'adapter'));
    expect(calls).toEqual([
      'unload policy',
      `load policy ${join(second, 'adapter')}`,
      'unload policy',
      `load policy ${join(sixth, 'adapter')}`,
    ]);
    expect(logs.at(-1)).toBe(`step 6: loaded LoRA adapter ${join(sixth, 'adapter')} as "policy"`);
  });

  it('fails the run, naming the endpoint and the answer, when the server refuses the adapter', async () => {
    const { server } = await scriptedLoraServer({ failLoads: true });
    const checkpoints = join(dir, 'lora-fail', 'checkpoints');
    const sync = createWeightSync({
      mode: 'lora',
      baseUrl: server.origin,
      initialModel: '/models/base',
      checkpoints,
      pollMs: 50,
      log: () => {},
    });
    open.push(sync);
    await sync.start();
    writeCheckpoint(checkpoints, 1);
    const error = await sync.failed;
    expect(error.message).toMatch(
      /weight sync \(lora\) to http:\/\/127\.0\.0\.1:\d+ failed: POST http:\/\/127\.0\.0\.1:\d+\/v1\/load_lora_adapter \(policy ← .*step-1\/adapter\): HTTP 500: .*CUDA out of memory/,
    );
    // A checkpoint without an adapter (a run without LoRA) is refused with the fix.
    const { server: other } = await scriptedLoraServer();
    const plain = join(dir, 'lora-plain', 'checkpoints');
    const noAdapter = createWeightSync({
      mode: 'lora',
      baseUrl: other.origin,
      initialModel: '/models/base',
      checkpoints: plain,
      pollMs: 50,
      log: () => {},
    });
    open.push(noAdapter);
    await noAdapter.start();
    writeCheckpoint(plain, 1, false);
    expect((await noAdapter.failed).message).toContain('needs train.reference.lora_rank > 0');
  });
});

// A stand-in for `vllm serve MODEL --port PORT`: a real server process that answers /health and
// appends the model it was started with to a log (no real vLLM can run here).
const FAKE_SERVE = `
const http = require('node:http');
const fs = require('node:fs');
const [model, port, log] = process.argv.slice(1);
fs.appendFileSync(log, model + ' ' + process.pid + '\\n');
http.createServer((request, response) => {
  response.writeHead(request.url === '/health' ? 200 : 404);
  response.end();
}).listen(Number(port), '127.0.0.1');
`;

describe('weight sync: restart the vLLM server from a checkpoint', () => {
  it('starts the server on the initial model, restarts it on each checkpoint, stops it at the end', async () => {
    const port = await freeLoopbackPort();
    const log = join(dir, 'restart.log');
    const checkpoints = join(dir, 'restart', 'checkpoints');
    const sync = createWeightSync({
      mode: 'restart',
      baseUrl: `http://127.0.0.1:${port}`,
      command: [process.execPath, '-e', FAKE_SERVE, '{model}', String(port), log],
      initialModel: '/models/base',
      checkpoints,
      pollMs: 50,
      healthTimeoutMs: 30_000,
      log: () => {},
    });
    open.push(sync);
    await sync.start();
    const started = () => readFileSync(log, 'utf8').trim().split('\n');
    expect(started().map((line) => line.split(' ')[0])).toEqual(['/models/base']);
    const folder = writeCheckpoint(checkpoints, 3, false);
    await until(() => sync.synced.length === 1, 'the restart');
    const lines = started();
    expect(lines.map((line) => line.split(' ')[0])).toEqual(['/models/base', folder]);
    const [first, second] = lines.map((line) => Number(line.split(' ')[1]));
    expect(second).not.toBe(first);
    // The old server is gone, the new one answers.
    expect(() => process.kill(first!, 0)).toThrow();
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    await sync.close();
    expect(() => process.kill(second!, 0)).toThrow();
  });

  it('fails when the server exits before it answers /health, naming what happened', async () => {
    const port = await freeLoopbackPort();
    const sync = createWeightSync({
      mode: 'restart',
      baseUrl: `http://127.0.0.1:${port}`,
      command: [process.execPath, '-e', 'process.exit(3)', '{model}'],
      initialModel: '/models/base',
      checkpoints: join(dir, 'never'),
      healthTimeoutMs: 30_000,
      log: () => {},
    });
    open.push(sync);
    await expect(sync.start()).rejects.toThrow(
      /the vLLM server exited before http:\/\/127\.0\.0\.1:\d+\/health answered/,
    );
  });
});

describe('train.weight_sync: refused before anything starts when it cannot work', () => {
  const base = [
    'env: { name: demo }',
    'server: { provider: vllm, base_url: "http://127.0.0.1:9", model: policy, tokenizer: ./tokenizer }',
  ];
  const cases: [string, string, RegExp][] = [
    [
      'colocated',
      'train: { reference: { model: ./m, checkpoint_every: 2 }, weight_sync: { mode: lora } }',
      /colocated policy server is updated in place after every step and needs no sync/,
    ],
    [
      'no checkpoints',
      'train: { reference: { model: ./m, colocated: false, lora_rank: 8 }, weight_sync: { mode: lora } }',
      /set train.reference.checkpoint_every to N/,
    ],
    [
      'lora without LoRA',
      'train: { reference: { model: ./m, colocated: false, checkpoint_every: 2 }, weight_sync: { mode: lora } }',
      /set train.reference.lora_rank/,
    ],
    [
      'restart without {model}',
      'train: { reference: { model: ./m, colocated: false, checkpoint_every: 2 }, weight_sync: { mode: restart, command: ["vllm", "serve", "./m"] } }',
      /names no "\{model\}", so every restart would serve the same weights/,
    ],
    [
      'a trainer command',
      'train: { trainer: { command: ["python3", "t.py"] }, weight_sync: { mode: lora } }',
      /syncs the reference trainer's checkpoints; set train.reference/,
    ],
  ];
  for (const [name, train, message] of cases)
    it(name, async () => {
      const folder = mkdtempSync(join(dir, 'refuse-'));
      mkdirSync(join(folder, 'm'));
      writeFileSync(join(folder, 'm', 'config.json'), '{}');
      // Paths in a config must exist (checked first); the refusals under test come after.
      mkdirSync(join(folder, 'tokenizer'));
      writeFileSync(join(folder, 'train.yaml'), [...base, train].join('\n'));
      const run = await runShears(['train', '--config', 'train.yaml', '--output', 'out'], {
        cwd: folder,
        env: { ...process.env },
      });
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(message);
      expect(existsSync(join(folder, 'out'))).toBe(false);
    });
});
