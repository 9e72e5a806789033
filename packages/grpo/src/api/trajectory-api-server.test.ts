// The Atropos API test suite (atropos-api.md §7) run over real HTTP against the shears server,
// plus the behaviours where shears deliberately does better (docs/atropos-differences.md).
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rawRequest } from '../../test/http.js';
import {
  startTrajectoryApiServer,
  type TrajectoryApiServer,
  type TrajectoryApiServerSettings,
} from './trajectory-api-server.js';

const KEYS = [
  'tokens',
  'masks',
  'scores',
  'advantages',
  'ref_logprobs',
  'messages',
  'generation_params',
  'inference_logprobs',
  'overrides',
  'group_overrides',
  'images',
  'env_id',
  'distill_token_ids',
  'distill_logprobs',
];

let directory: string;
beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), 'shears-api-test-'));
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

let counter = 0;
async function start(settings: TrajectoryApiServerSettings = {}): Promise<TrajectoryApiServer> {
  return startTrajectoryApiServer({
    port: 0,
    databasePath: join(directory, `db-${counter++}.sqlite`),
    decodeWorkers: 1,
    ...settings,
  });
}

function group(size: number, length = 3, extra: Record<string, unknown> = {}) {
  return {
    tokens: Array.from({ length: size }, (_, index) =>
      Array.from({ length }, (_, position) => index * 1000 + position),
    ),
    masks: Array.from({ length: size }, (_, index) =>
      Array.from({ length }, (_, position) => (position === 0 ? -100 : index * 1000 + position)),
    ),
    scores: Array.from({ length: size }, (_, index) => index / size),
    ...extra,
  };
}

const registration = (batchSize: number) => ({
  wandb_group: 'test',
  wandb_project: 'test',
  batch_size: batchSize,
  max_token_len: 2048,
  checkpoint_dir: 'checkpoints',
  save_checkpoint_interval: 10,
  starting_step: 0,
  num_steps: 10,
});

describe('trajectory API (Atropos §7 behaviours)', () => {
  let server: TrajectoryApiServer;
  let url: string;
  const get = (path: string, options = {}) => rawRequest(url, path, { method: 'GET', ...options });
  const post = (path: string, body: unknown, options = {}) =>
    rawRequest(url, path, { method: 'POST', body, ...options });

  beforeAll(async () => {
    server = await start();
    url = server.url;
  });
  afterAll(() => server.close());
  beforeEach(async () => {
    expect((await get('/reset_data')).status).toBe(200);
  });

  it('answers the health probe', async () => {
    expect((await get('/')).json).toEqual({ message: 'AtroposLib API' });
  });

  it('registers a trainer with a 128-bit integer uuid', async () => {
    const response = await post('/register', registration(8));
    expect(response.status).toBe(200);
    expect(response.text).toMatch(/^\{"uuid":\d+\}$/);
    const digits = /\d+/.exec(response.text)?.[0] ?? '';
    expect(BigInt(digits) > 2n ** 64n).toBe(true);
    // uuid4 layout: version 4.
    expect(BigInt(digits).toString(16).padStart(32, '0')[12]).toBe('4');
  });

  it('resets to the unregistered state (test_reset)', async () => {
    await post('/register', registration(8));
    expect((await post('/scored_data', { ...group(1), ref_logprobs: [[0.1, 0.2, 0.3]] })).status).toBe(200);
    const reset = await get('/reset_data');
    expect(reset.status).toBe(200);
    expect(reset.text).toBe('Reset successful');
    expect((await get('/info')).json).toEqual({ batch_size: -1, max_token_len: 2048 });
    expect((await get('/status')).json).toEqual({ current_step: 0, queue_size: 0 });
    expect((await get('/wandb_info')).json).toEqual({ group: null, project: null });
  });

  it('reports -1 before any register and the registered values after', async () => {
    expect((await get('/info')).json).toMatchObject({ batch_size: -1 });
    await post('/register', registration(64));
    expect((await get('/info')).json).toEqual({ batch_size: 64, max_token_len: 2048 });
    expect((await get('/wandb_info')).json).toEqual({ group: 'test', project: 'test' });
  });

  it('does not reset on a second register', async () => {
    await post('/register', registration(64));
    await post('/register', { ...registration(8), wandb_group: 'other' });
    expect((await get('/info')).json).toMatchObject({ batch_size: 64 });
  });

  it('does not gzip small responses even when asked to', async () => {
    const response = await get('/info', { acceptGzip: true });
    expect(response.headers['content-encoding']).toBeUndefined();
    expect(response.text).toContain('batch_size');
  });

  it('gzips large responses and returns the group intact', async () => {
    await post('/register', registration(16));
    const big = group(16, 512, {
      advantages: Array.from({ length: 16 }, () => Array(512).fill(0.5)),
      ref_logprobs: Array.from({ length: 16 }, () => Array(512).fill(-0.5)),
      messages: Array.from({ length: 16 }, () => [{ role: 'user', content: 'hi' }]),
    });
    (big.tokens[0] as number[])[0] = 0;
    expect((await post('/scored_data', big)).json).toEqual({ status: 'received' });
    const batch = await get('/batch');
    expect(batch.headers['content-encoding']).toBe('gzip');
    const groups = (batch.json as { batch: { tokens: number[][] }[] }).batch;
    expect(groups[0]?.tokens).toHaveLength(16);
    expect(groups[0]?.tokens[0]).toHaveLength(512);
    expect(groups[0]?.tokens[0]?.[0]).toBe(0);
  });

  it('sends /batch to a trainer on this host as stored-block gzip, to another host compressed', async () => {
    const post16 = async (base: string) => {
      await rawRequest(base, '/register', { method: 'POST', body: registration(16) });
      await rawRequest(base, '/scored_data', { method: 'POST', body: group(16, 512), gzip: true });
    };
    await post16(url);
    const local = await get('/batch');
    expect(local.headers['content-encoding']).toBe('gzip');
    // Stored blocks: the gzip body is a little larger than the JSON it holds.
    expect(Number(local.headers['content-length'])).toBeGreaterThan(Buffer.byteLength(local.text));
    expect((local.json as { batch: unknown[] }).batch).toHaveLength(1);
    // The same server reached through a non-loopback address of this machine.
    const external = Object.values(networkInterfaces())
      .flat()
      .find((entry) => entry?.family === 'IPv4' && !entry.internal)?.address;
    if (external === undefined) throw new Error('this test needs a non-loopback IPv4 address on the machine');
    const remote = await start({ host: '0.0.0.0' });
    try {
      const base = `http://${external}:${new URL(remote.url).port}`;
      await post16(base);
      const batch = await rawRequest(base, '/batch', { method: 'GET' });
      expect(batch.headers['content-encoding']).toBe('gzip');
      expect(Number(batch.headers['content-length'])).toBeLessThan(Buffer.byteLength(batch.text) / 2);
      expect(batch.json).toEqual(local.json);
    } finally {
      await remote.close();
    }
  });

  it('returns a null batch while too little data is queued', async () => {
    await post('/register', registration(32));
    await post('/scored_data', group(16));
    const batch = await get('/batch', { headers: { 'accept-encoding': 'gzip' } });
    expect(batch.status).toBe(200);
    expect(batch.json).toEqual({ batch: null });
  });

  it('returns a 32×1024 group intact', async () => {
    await post('/register', registration(32));
    const big = group(32, 1024);
    await post('/scored_data', big, { gzip: true });
    const groups = ((await get('/batch')).json as { batch: { tokens: number[][] }[] }).batch;
    expect(groups[0]?.tokens).toEqual(big.tokens);
  });

  it('walks the environment handshake with a GET-with-body /status-env', async () => {
    await post('/register', registration(32));
    expect(
      (
        await post('/register-env', {
          max_token_length: 2048,
          desired_name: 'early',
          weight: 1,
          group_size: 4,
        })
      ).json,
    ).toEqual({
      status: 'wait for trainer to start',
    });
    await get('/batch');
    const env = await post('/register-env', {
      max_token_length: 2048,
      desired_name: 'gsm8k',
      weight: 1.0,
      group_size: 4,
      min_batch_allocation: null,
    });
    expect(env.json).toEqual({
      status: 'success',
      env_id: 0,
      wandb_name: 'gsm8k_0',
      checkpoint_dir: 'checkpoints',
      starting_step: 0,
      checkpoint_interval: 10,
      num_steps: 10,
    });
    expect(
      (
        await post('/register-env', {
          max_token_length: 2048,
          desired_name: 'gsm8k',
          weight: 1,
          group_size: 4,
        })
      ).json,
    ).toMatchObject({
      env_id: 1,
      wandb_name: 'gsm8k_1',
    });
    expect((await post('/scored_data', { ...group(4), env_id: 0 })).status).toBe(200);
    const status = await get('/status-env', { body: { env_id: 0 } });
    expect(status.status).toBe(200);
    expect(status.json).toEqual({
      current_step: 0,
      queue_size: 1,
      unallocated_fraction: 1,
      self_queue_size: 1,
      max_group_size: 4,
      env_weight: 0.5,
    });
    // Float fields keep Python's float form.
    expect(status.text).toContain('"unallocated_fraction":1.0');
    expect(status.text).toContain('"env_weight":0.5');
    expect((await get('/status-env')).status).toBe(422);
    expect((await get('/status-env', { body: { env_id: 7 } })).status).toBe(500);
    expect((await get('/status-env?env_id=1')).json).toMatchObject({ self_queue_size: 0 });
  });

  it('accepts gzipped scored data', async () => {
    await post('/register', registration(8));
    expect((await post('/scored_data', group(8), { gzip: true })).json).toEqual({ status: 'received' });
    const groups = ((await get('/batch')).json as { batch: unknown[] }).batch;
    expect(groups).toHaveLength(1);
  });

  it('answers 400 to bodies that are not gzip or are damaged', async () => {
    expect(
      (
        await rawRequest(url, '/scored_data', {
          rawBody: 'not gzip',
          headers: { 'content-encoding': 'gzip' },
        })
      ).status,
    ).toBe(400);
    const { gzipSync } = await import('node:zlib');
    const truncated = gzipSync(JSON.stringify(group(8))).subarray(0, 40);
    const response = await rawRequest(url, '/scored_data', {
      rawBody: truncated,
      headers: { 'content-encoding': 'GZIP' },
    });
    expect(response.status).toBe(400);
    expect(response.text).toBe('Invalid gzip payload');
  });

  it('takes lists of groups and batches exactly batch_size sequences', async () => {
    await post('/register', registration(32));
    const response = await post('/scored_data_list', [group(8), group(8), group(8), group(8)], {
      gzip: true,
    });
    expect(response.json).toEqual({ status: 'received', groups_processed: 4 });
    const groups = ((await get('/batch')).json as { batch: { tokens: unknown[] }[] }).batch;
    expect(groups.reduce((sum, item) => sum + item.tokens.length, 0)).toBe(32);
  });

  it('passes messages, generation params and logprobs through to /latest_example', async () => {
    await post('/register', registration(8));
    const messages = [
      [
        { role: 'user', content: 'What is 2+2?', reward: null },
        { role: 'assistant', content: '4', reward: null },
      ],
    ];
    const posted = await post('/scored_data', {
      ...group(1),
      messages,
      advantages: [[0.1, 0.2, 0.3]],
      ref_logprobs: [[-0.1, -0.2, -0.3]],
      generation_params: { temperature: 0.7 },
      inference_logprobs: [[-1.0, -0.7, -0.2]],
    });
    expect(posted.json).toEqual({ status: 'received' });
    const latest = (await get('/latest_example')).json as Record<string, unknown>;
    expect(Object.keys(latest).sort()).toEqual([...KEYS].sort());
    expect(latest.generation_params).toEqual({ temperature: 0.7 });
    expect(latest.messages).toEqual(messages);
    expect(latest.inference_logprobs).toEqual([[-1.0, -0.7, -0.2]]);
  });

  it('serves batches of groups in submission order with every key present', async () => {
    await post('/register', registration(2));
    await post('/scored_data', {
      ...group(1),
      messages: [[{ role: 'user', content: 'first' }]],
      overrides: [{ temperature: 0.5 }],
      unknown_key: 1,
    });
    await post('/scored_data', {
      ...group(1),
      messages: [[{ role: 'user', content: 'second' }]],
      generation_params: { temperature: 0.8 },
    });
    const groups = ((await get('/batch')).json as { batch: Record<string, unknown>[] }).batch;
    expect(groups).toHaveLength(2);
    for (const item of groups) expect(Object.keys(item).sort()).toEqual([...KEYS].sort());
    expect(groups[0]?.messages).toEqual([[{ role: 'user', content: 'first' }]]);
    expect(groups[0]?.overrides).toEqual([{ temperature: 0.5 }]);
    expect(groups[0]?.unknown_key).toBeUndefined();
    expect(groups[1]?.generation_params).toEqual({ temperature: 0.8 });
    expect(groups[1]?.overrides).toBeNull();
  });

  it('accepts every message shape Atropos accepts and rejects messages without role or content', async () => {
    await post('/register', registration(8));
    const shapes: unknown[] = [
      [
        { role: 'system', content: 's' },
        { role: 'user', content: 'u' },
        { role: 'assistant', content: 'a' },
        { role: 'tool', content: 't' },
      ],
      [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'hi' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
      [{ role: 'user', content: { nested: true } }],
      [
        { role: 'user', content: '' },
        { role: 'user', content: ' ' },
        { role: 'user', content: '0' },
        { role: 'user', content: '12345' },
      ],
      [{ role: 'dog', content: 'woof', reward: 0.5, extra: true, other: null }],
      [{ role: 'USER', content: 'x'.repeat(10_000) }],
      [{ role: 'user', content: 'emoji 🚀 ünïcödé \n\t "quoted"' }],
    ];
    for (const conversation of shapes) {
      expect((await post('/scored_data', { ...group(1), messages: [conversation] })).status).toBe(200);
    }
    expect((await post('/scored_data', { ...group(1), images: ['aGVsbG8='] })).status).toBe(200);
    expect((await post('/scored_data', { ...group(1), messages: [] })).status).toBe(200);
    expect((await post('/scored_data', { ...group(1), messages: [[{ content: 'no role' }]] })).status).toBe(
      422,
    );
    expect((await post('/scored_data', { ...group(1), messages: [[{ role: 'user' }]] })).status).toBe(422);
  });

  it('answers 422 in FastAPI shape for bad bodies', async () => {
    const missing = await post('/scored_data', { tokens: [[1]] });
    expect(missing.status).toBe(422);
    expect((missing.json as { detail: { loc: unknown[] }[] }).detail.map((issue) => issue.loc)).toEqual([
      ['body', 'masks'],
      ['body', 'scores'],
    ]);
    expect((await post('/scored_data', { ...group(1), tokens: [[1.5]] })).status).toBe(422);
    expect((await rawRequest(url, '/scored_data', { rawBody: '{not json' })).status).toBe(422);
    expect((await rawRequest(url, '/scored_data', { method: 'POST', rawBody: '' })).status).toBe(422);
    expect(
      (await post('/register-env', { max_token_length: 1, desired_name: null, weight: 1, group_size: 4 }))
        .status,
    ).toBe(422);
    expect((await post('/register', { wandb_group: 'g' })).status).toBe(422);
    expect((await post('/scored_data_list', [group(1), { tokens: 1 }])).status).toBe(422);
    // Lax mode: integral floats and numeric strings are ints.
    expect((await post('/scored_data', { ...group(1), tokens: [[0.0, '1', 2]], scores: [1] })).status).toBe(
      200,
    );
  });

  it('handles SFT-style groups (test_sft_batch_processing)', async () => {
    await post('/register', registration(4));
    // Atropos's own test posts 9 advantages for 6 tokens and expects 200; shears refuses the
    // misaligned row (docs/atropos-differences.md) and takes the aligned one.
    const misaligned = await post('/scored_data', {
      tokens: [[1, 2, 3, 603, 604, 605]],
      masks: [[-100, -100, -100, 603, 604, 605]],
      scores: [1],
      advantages: [[1, 1, 1, 1, 1, 1, 1, 1, 1]],
    });
    expect(misaligned.status).toBe(422);
    expect((misaligned.json as { detail: { loc: unknown[] }[] }).detail[0]?.loc).toEqual([
      'body',
      'advantages',
      0,
    ]);
    for (let index = 0; index < 4; index++) {
      const response = await post('/scored_data', {
        tokens: [[1, 2, 3, 603, 604, 605]],
        masks: [[-100, -100, -100, 603, 604, 605]],
        scores: [1],
        advantages: [[1, 1, 1, 1, 1, 1]],
        overrides: [{ sft: true }],
        group_overrides: { sft: true },
      });
      expect(response.status).toBe(200);
    }
    expect((await get('/status')).json).toEqual({ current_step: 0, queue_size: 4 });
    const groups = (
      (await get('/batch')).json as {
        batch: { overrides: { sft: boolean }[]; group_overrides: { sft: boolean } }[];
      }
    ).batch;
    expect(groups).toHaveLength(4);
    for (const item of groups) {
      expect(item.group_overrides.sft).toBe(true);
      expect(item.overrides[0]?.sft).toBe(true);
    }
  });

  it('answers /batch before any register with the error and an empty list', async () => {
    expect((await get('/batch')).json).toEqual({
      status: 'error',
      message: 'Trainer not registered. Call /register first.',
      batch: [],
    });
  });

  it('returns the empty latest example before anything was queued', async () => {
    const fresh = await start();
    try {
      expect((await rawRequest(fresh.url, '/latest_example')).json).toEqual({
        tokens: [],
        masks: [],
        scores: [],
        advantages: [],
        ref_logprobs: [],
        generation_params: [],
        inference_logprobs: [],
        messages: [],
        images: [],
      });
    } finally {
      await fresh.close();
    }
  });

  it('reports failure for disconnecting an unknown env and excludes disconnected envs from weights', async () => {
    await post('/register', registration(8));
    expect((await post('/disconnect-env', { env_id: 3 })).json).toMatchObject({ status: 'failure' });
    await get('/batch');
    await post('/register-env', { max_token_length: 1000, desired_name: 'a', weight: 1, group_size: 2 });
    await post('/register-env', { max_token_length: 3000, desired_name: 'b', weight: 1, group_size: 2 });
    expect((await get('/status-env', { body: { env_id: 0 } })).json).toMatchObject({ env_weight: 0.25 });
    expect((await post('/disconnect-env', { env_id: 1 })).json).toEqual({ status: 'success' });
    expect((await get('/status-env', { body: { env_id: 0 } })).json).toMatchObject({ env_weight: 1 });
  });

  it('answers 404 and 405 like FastAPI', async () => {
    const missing = await get('/nope');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ detail: 'Not Found' });
    expect((await post('/batch', {})).status).toBe(405);
  });

  it('buffers groups smaller than the registered size and releases them once they add up', async () => {
    await post('/register', registration(8));
    await get('/batch');
    await post('/register-env', { max_token_length: 2048, desired_name: 'env', weight: 1, group_size: 8 });
    expect((await post('/scored_data', { ...group(4), env_id: 0 })).json).toEqual({
      status: 'buffered',
      buffer_size: 4,
    });
    expect((await get('/status')).json).toMatchObject({ queue_size: 0 });
    expect(
      (
        await post('/scored_data_list', [
          { ...group(2), env_id: 0 },
          { ...group(2), env_id: 0 },
        ])
      ).json,
    ).toEqual({
      status: 'received',
      groups_processed: 2,
      buffered: 2,
      last_buffer_size: 0,
    });
    expect((await get('/status')).json).toMatchObject({ queue_size: 3 });
    const groups = ((await get('/batch')).json as { batch: { tokens: unknown[] }[] }).batch;
    expect(groups.map((item) => item.tokens.length)).toEqual([4, 2, 2]);
  });

  it('advances the step by every batch formed and serves formed batches oldest first', async () => {
    await post('/register', registration(8));
    for (let index = 0; index < 3; index++)
      await post('/scored_data', group(8, 3, { group_overrides: { index } }));
    const first = (await get('/batch')).json as { batch: { group_overrides: { index: number } }[] };
    expect(first.batch[0]?.group_overrides.index).toBe(0);
    expect((await get('/status')).json).toEqual({ current_step: 3, queue_size: 0 });
    const second = (await get('/batch')).json as { batch: { group_overrides: { index: number } }[] };
    expect(second.batch[0]?.group_overrides.index).toBe(1);
    expect((await get('/status')).json).toEqual({ current_step: 3, queue_size: 0 });
  });

  it('serves every number with the type Atropos serves, on /batch and /latest_example, whatever the spelling posted', async () => {
    await post('/register', registration(4));
    // As a JavaScript client writes it (whole floats as ints) and with odd spellings.
    const posted =
      '{"tokens":[[1,2.0],[1e2,-0]],"masks":[[-100,2.0],[-100,-0.0]],"scores":[1,-0],' +
      '"advantages":[[1,0.5],[1E-7,2]],"ref_logprobs":null,"inference_logprobs":[[1,-0.25],[1,-1e-5]],' +
      '"distill_token_ids":[[[3.0],[5]],[[4],[6]]],"distill_logprobs":[[[0],[-1]],[[-2],[-3]]],"env_id":7.0,' +
      '"messages":[[{"role":"user","content":"x","reward":1.0,"turn":1}],[{"role":"user","content":"y"}]]}';
    expect((await post('/scored_data', undefined, { rawBody: posted, gzip: true })).status).toBe(200);
    expect((await post('/scored_data_list', undefined, { rawBody: `[${posted}]` })).status).toBe(200);
    const expected =
      '"tokens":[[1,2],[100,0]],"masks":[[-100,2],[-100,0]],"scores":[1.0,0.0],' +
      '"advantages":[[1.0,0.5],[1e-07,2.0]],"ref_logprobs":null,"inference_logprobs":[[1.0,-0.25],[1.0,-1e-05]],' +
      '"distill_token_ids":[[[3],[5]],[[4],[6]]],"distill_logprobs":[[[0.0],[-1.0]],[[-2.0],[-3.0]]],"env_id":7,' +
      '"messages":[[{"role":"user","content":"x","reward":1.0,"turn":1}],[{"role":"user","content":"y"}]]';
    expect((await get('/latest_example')).text).toContain(expected);
    const batch = await get('/batch');
    expect(batch.text.split(expected)).toHaveLength(3);
    expect(batch.text).not.toMatch(/"scores":\[1,|\[1,-0\.25\]|"env_id":7\.0/);
  });

  it('refuses non-finite scores with 422 (Atropos accepts them, then every /batch answers 500)', async () => {
    await post('/register', registration(2));
    for (const scores of ['[NaN,1]', '[1e400,1]', '["nan",1]', '["-Infinity",1]']) {
      const response = await post('/scored_data', undefined, {
        rawBody: `{"tokens":[[1],[2]],"masks":[[1],[2]],"scores":${scores}}`,
      });
      expect(response.status, scores).toBe(422);
    }
    expect((await get('/status')).json).toEqual({ current_step: 0, queue_size: 0 });
  });

  it('packs batches in Atropos order: sizes [8,4,4,2,8,2,2,2] at batch 16 give [0,1,2] then [4,3,5,6,7]', async () => {
    await post('/register', registration(16));
    const sizes = [8, 4, 4, 2, 8, 2, 2, 2];
    for (const [index, size] of sizes.entries())
      await post('/scored_data', group(size, 2, { group_overrides: { index } }));
    const order = async () =>
      ((await get('/batch')).json as { batch: { group_overrides: { index: number } }[] }).batch.map(
        (item) => item.group_overrides.index,
      );
    expect(await order()).toEqual([0, 1, 2]);
    expect(await order()).toEqual([4, 3, 5, 6, 7]);
  });

  it("keeps counting a disconnected env's queued data in /status-env queue_size, without its minimum", async () => {
    await post('/register', registration(8));
    await get('/batch');
    await post('/register-env', {
      max_token_length: 100,
      desired_name: 'a',
      weight: 1,
      group_size: 4,
      min_batch_allocation: 0.5,
    });
    await post('/register-env', { max_token_length: 100, desired_name: 'b', weight: 1, group_size: 4 });
    for (const envId of [0, 0, 1]) await post('/scored_data', { ...group(4), env_id: envId });
    const status = async () => (await get('/status-env', { body: { env_id: 1 } })).text;
    expect(await status()).toBe(
      '{"current_step":0,"queue_size":2,"unallocated_fraction":0.5,"self_queue_size":1,"max_group_size":4,"env_weight":0.5}',
    );
    await post('/disconnect-env', { env_id: 0 });
    expect(await status()).toBe(
      '{"current_step":0,"queue_size":3,"unallocated_fraction":1.0,"self_queue_size":1,"max_group_size":4,"env_weight":1.0}',
    );
  });

  it('honours minimum batch allocations: a minimum-holding env without data stalls the batch', async () => {
    await post('/register', registration(8));
    await get('/batch');
    await post('/register-env', {
      max_token_length: 2048,
      desired_name: 'a',
      weight: 1,
      group_size: 4,
      min_batch_allocation: 0.5,
    });
    await post('/register-env', { max_token_length: 2048, desired_name: 'b', weight: 1, group_size: 4 });
    await post('/scored_data', { ...group(4), env_id: 1 });
    await post('/scored_data', { ...group(4), env_id: 1 });
    expect((await get('/batch')).json).toEqual({ batch: null });
    expect((await get('/status-env', { body: { env_id: 1 } })).json).toMatchObject({
      unallocated_fraction: 0.5,
    });
    await post('/scored_data', { ...group(4), env_id: 0 });
    const groups = ((await get('/batch')).json as { batch: { env_id: number }[] }).batch;
    expect(groups.map((item) => item.env_id)).toEqual([0, 1]);
  });
});

describe('trajectory API: where shears does better than Atropos', () => {
  let server: TrajectoryApiServer;
  const get = (path: string, options = {}) => rawRequest(server.url, path, { method: 'GET', ...options });
  const post = (path: string, body: unknown, options = {}) =>
    rawRequest(server.url, path, { method: 'POST', body, ...options });
  afterEach(() => server?.close());

  it('queues a group larger than the registered size instead of losing it', async () => {
    server = await start();
    await post('/register', registration(12));
    await get('/batch');
    await post('/register-env', { max_token_length: 2048, desired_name: 'env', weight: 1, group_size: 8 });
    expect((await post('/scored_data', { ...group(12), env_id: 0 })).json).toEqual({ status: 'received' });
    const groups = ((await get('/batch')).json as { batch: { tokens: unknown[] }[] }).batch;
    expect(groups[0]?.tokens).toHaveLength(12);
  });

  it('forms batches when batch_size is not a multiple of the group size, splitting one group', async () => {
    server = await start();
    await post('/register', registration(12));
    for (let index = 0; index < 3; index++)
      await post('/scored_data', group(8, 3, { group_overrides: { index } }));
    const first = (
      (await get('/batch')).json as {
        batch: { tokens: unknown[]; scores: number[]; group_overrides: { index: number } }[];
      }
    ).batch;
    expect(first.map((item) => item.tokens.length)).toEqual([8, 4]);
    expect(first[1]?.scores).toEqual([0, 0.125, 0.25, 0.375]);
    // The halves of a split group keep Python's number types (a whole float stays `0.0`).
    expect((await get('/latest_example')).text).toContain(
      '"scores":[0.0,0.125,0.25,0.375,0.5,0.625,0.75,0.875]',
    );
    const second = (
      (await get('/batch')).json as {
        batch: { tokens: unknown[]; scores: number[]; group_overrides: { index: number } }[];
      }
    ).batch;
    expect(second.map((item) => [item.group_overrides.index, item.tokens.length])).toEqual([
      [1, 4],
      [2, 8],
    ]);
    expect(second[0]?.scores).toEqual([0.5, 0.625, 0.75, 0.875]);
    await post('/reset_data', undefined, { method: 'GET' });
    await post('/register', registration(3));
    await post('/scored_data', {
      tokens: [[1], [2]],
      masks: [[1], [2]],
      scores: [1, 0],
      messages: [[{ role: 'u', content: 'a', reward: 1.5 }], [{ role: 'u', content: 'b' }]],
    });
    await post('/scored_data', group(2, 1));
    const split = (await get('/batch')).text;
    expect(split).toContain('"scores":[1.0,0.0]');
    expect(split).toContain('"scores":[0.0]');
    await post('/scored_data', group(2, 1));
    expect((await get('/batch')).text).toContain('"scores":[0.5]');
  });

  it('splits a group in minimum-allocation mode too, unless splitGroups is false', async () => {
    for (const splitGroups of [true, false]) {
      server = await start({ splitGroups });
      await post('/register', registration(12));
      await get('/batch');
      await post('/register-env', {
        max_token_length: 2048,
        desired_name: 'a',
        weight: 1,
        group_size: 8,
        min_batch_allocation: 0.5,
      });
      await post('/register-env', { max_token_length: 2048, desired_name: 'b', weight: 1, group_size: 8 });
      await post('/scored_data', { ...group(8), env_id: 1 });
      await post('/scored_data', { ...group(8), env_id: 0 });
      await post('/scored_data', { ...group(8), env_id: 1 });
      const batch = ((await get('/batch')).json as { batch: { env_id: number; tokens: unknown[] }[] | null })
        .batch;
      if (splitGroups)
        expect(batch?.map((item) => [item.env_id, item.tokens.length])).toEqual([
          [0, 8],
          [1, 4],
        ]);
      else expect(batch).toBeNull();
      await server.close();
    }
  });

  it('answers 429 with Retry-After when the queue is full', async () => {
    server = await start({ maxQueuedGroups: 2, retryAfterSeconds: 3 });
    await post('/register', registration(64));
    expect((await post('/scored_data', group(2))).status).toBe(200);
    expect((await post('/scored_data', group(2))).status).toBe(200);
    const full = await post('/scored_data', group(2));
    expect(full.status).toBe(429);
    expect(full.headers['retry-after']).toBe('3');
    expect((await get('/metrics')).text).toContain('shears_api_rejected_total{reason="queue_full"} 1');
  });

  it('answers 413 to bodies over the size limit, compressed or not', async () => {
    server = await start({ maxRequestBytes: 10_000 });
    expect((await post('/scored_data', group(8, 1000))).status).toBe(413);
    // 40 KB of JSON that gzips far below the limit still inflates past it.
    expect(
      (await post('/scored_data', { ...group(1), images: 'a'.repeat(40_000) }, { gzip: true })).status,
    ).toBe(413);
  });

  it('requires the bearer token when one is configured', async () => {
    server = await start({ authToken: 'sekret' });
    expect((await get('/info')).status).toBe(401);
    expect((await get('/info', { headers: { authorization: 'Bearer wrong!' } })).status).toBe(401);
    expect((await get('/info', { headers: { authorization: 'Bearer sekret' } })).status).toBe(200);
  });

  it('makes a retried POST with the same Idempotency-Key harmless', async () => {
    server = await start();
    await post('/register', registration(64));
    const headers = { 'idempotency-key': 'group-42' };
    expect((await post('/scored_data', group(4), { headers })).json).toEqual({ status: 'received' });
    const again = await post('/scored_data', group(4), { headers });
    expect(again.json).toEqual({ status: 'received' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect((await get('/status')).json).toMatchObject({ queue_size: 1 });
  });

  it('keeps queued groups, run state and formed batches across a restart, and never serves a batch twice', async () => {
    const databasePath = join(directory, 'restart.sqlite');
    server = await startTrajectoryApiServer({ port: 0, databasePath, decodeWorkers: 0 });
    await post('/register', registration(4));
    await get('/batch');
    await post('/register-env', { max_token_length: 2048, desired_name: 'env', weight: 1, group_size: 4 });
    for (let index = 0; index < 3; index++)
      await post('/scored_data', { ...group(4), env_id: 0, group_overrides: { index } });
    await post('/scored_data', { ...group(2), env_id: 0 });
    const first = ((await get('/batch')).json as { batch: { group_overrides: { index: number } }[] }).batch;
    expect(first[0]?.group_overrides.index).toBe(0);
    await server.close();
    server = await startTrajectoryApiServer({ port: 0, databasePath, decodeWorkers: 0 });
    expect((await get('/info')).json).toEqual({ batch_size: 4, max_token_len: 2048 });
    expect((await get('/status')).json).toEqual({ current_step: 3, queue_size: 0 });
    const second = ((await get('/batch')).json as { batch: { group_overrides: { index: number } }[] }).batch;
    expect(second[0]?.group_overrides.index).toBe(1);
    // The buffered 2-sequence group survived too.
    expect((await post('/scored_data', { ...group(2), env_id: 0 })).json).toEqual({
      status: 'buffered',
      buffer_size: 0,
    });
  });
});

describe('request bodies answered as FastAPI answers them', () => {
  // Recorded from Atropos run-api (the pinned snapshot, fastapi 0.142 / pydantic 2.13) for the same bodies.
  it.each([
    [
      '/register',
      {
        wandb_group: 'g',
        batch_size: 'x',
        max_token_len: 1.5,
        checkpoint_dir: 3,
        save_checkpoint_interval: '1_0',
        starting_step: true,
        num_steps: '7',
      },
      [
        ['missing', ['body', 'wandb_project'], 'Field required'],
        [
          'int_parsing',
          ['body', 'batch_size'],
          'Input should be a valid integer, unable to parse string as an integer',
        ],
        [
          'int_from_float',
          ['body', 'max_token_len'],
          'Input should be a valid integer, got a number with a fractional part',
        ],
        ['string_type', ['body', 'checkpoint_dir'], 'Input should be a valid string'],
      ],
    ],
    [
      '/register-env',
      {
        max_token_length: [1],
        desired_name: null,
        weight: 'abc',
        group_size: '4.0',
        min_batch_allocation: true,
      },
      [
        ['int_type', ['body', 'max_token_length'], 'Input should be a valid integer'],
        ['string_type', ['body', 'desired_name'], 'Input should be a valid string'],
        [
          'float_parsing',
          ['body', 'weight'],
          'Input should be a valid number, unable to parse string as a number',
        ],
      ],
    ],
    [
      '/disconnect-env',
      { env_id: null },
      [['int_type', ['body', 'env_id'], 'Input should be a valid integer']],
    ],
    [
      '/disconnect-env',
      [1],
      [
        [
          'model_attributes_type',
          ['body'],
          'Input should be a valid dictionary or object to extract fields from',
        ],
      ],
    ],
  ])('POST %s', async (path, body, expected) => {
    const server = await start();
    try {
      const response = await rawRequest(server.url, path, { method: 'POST', body });
      expect(response.status).toBe(422);
      const detail = (
        response.json as { detail: { type: string; loc: unknown[]; msg: string; input: unknown }[] }
      ).detail;
      expect(detail.map((issue) => [issue.type, issue.loc, issue.msg])).toEqual(expected);
      if (expected[0]?.[0] === 'missing') expect(detail[0]?.input).toEqual(body);
    } finally {
      await server.close();
    }
  });
});
