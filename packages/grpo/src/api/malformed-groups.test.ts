// Malformed ScoredData over real HTTP: every group a trainer could not read, or would train on
// misaligned, is refused before it is acknowledged (422 naming the field and index, or FastAPI's
// 400 for a body it cannot parse), nothing of a refused body is stored, and afterwards the
// reference trainer's own Python client reads every batch the server serves.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rawRequest } from '../../test/http.js';
import { startTrajectoryApiServer, type TrajectoryApiServer } from './trajectory-api-server.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..', '..', '..');
const directory = mkdtempSync(join(tmpdir(), 'shears-api-malformed-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const base = {
  tokens: [
    [5, 6, 7],
    [8, 9, 10],
  ],
  masks: [
    [-100, 6, 7],
    [-100, 9, 10],
  ],
  scores: [1.0, 0.0],
};
const json = (fields: Record<string, unknown>) => JSON.stringify({ ...base, ...fields });
const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

type Case = [name: string, body: string | Buffer, status: number, loc?: (string | number)[], type?: string];

// One case per way a group can be unreadable or misaligned; each was accepted before.
const refused: Case[] = [
  [
    'masks with fewer sequences than tokens',
    json({ masks: [[-100, 6, 7]] }),
    422,
    ['body', 'masks'],
    'length_mismatch',
  ],
  [
    'a mask row shorter than its tokens',
    json({
      masks: [
        [-100, 6, 7],
        [-100, 9],
      ],
    }),
    422,
    ['body', 'masks', 1],
  ],
  ['more scores than sequences', json({ scores: [1.0, 0.0, 0.5] }), 422, ['body', 'scores']],
  ['fewer scores than sequences', json({ scores: [1.0] }), 422, ['body', 'scores']],
  [
    'advantages longer than the tokens',
    json({
      advantages: [
        [0.1, 0.1, 0.1, 0.1],
        [0.1, 0.1, 0.1],
      ],
    }),
    422,
    ['body', 'advantages', 0],
  ],
  [
    'logprobs for one sequence of two',
    json({ inference_logprobs: [[1.0, -0.5, -0.25]] }),
    422,
    ['body', 'inference_logprobs'],
  ],
  [
    'a short ref_logprobs row',
    json({ ref_logprobs: [[-1.0, -0.5, -0.25], [-1.0]] }),
    422,
    ['body', 'ref_logprobs', 1],
  ],
  [
    'messages for one sequence of two',
    json({ messages: [[{ role: 'user', content: 'x' }]] }),
    422,
    ['body', 'messages'],
  ],
  ['overrides for three sequences of two', json({ overrides: [{}, {}, {}] }), 422, ['body', 'overrides']],
  [
    'an empty group',
    JSON.stringify({ tokens: [], masks: [], scores: [] }),
    422,
    ['body', 'tokens'],
    'too_short',
  ],
  [
    'an empty sequence',
    json({ tokens: [[], [8, 9, 10]], masks: [[], [-100, 9, 10]] }),
    422,
    ['body', 'tokens', 0],
    'too_short',
  ],
  [
    'a negative token id',
    json({
      tokens: [
        [5, -6, 7],
        [8, 9, 10],
      ],
      masks: [
        [-100, -100, 7],
        [-100, 9, 10],
      ],
    }),
    422,
    ['body', 'tokens', 0, 1],
    'greater_than_equal',
  ],
  [
    'a token id past int32',
    json({
      tokens: [
        [5, 2 ** 31, 7],
        [8, 9, 10],
      ],
      masks: [
        [-100, -100, 7],
        [-100, 9, 10],
      ],
    }),
    422,
    ['body', 'tokens', 0, 1],
    'less_than_equal',
  ],
  [
    'a 30-digit token id',
    '{"tokens":[[5,123456789012345678901234567890,7],[8,9,10]],"masks":[[-100,-100,7],[-100,9,10]],"scores":[1.0,0.0]}',
    422,
    ['body', 'tokens', 0, 1],
    'less_than_equal',
  ],
  [
    'a mask that is neither -100 nor the token',
    json({
      masks: [
        [-100, 6, 99],
        [-100, 9, 10],
      ],
    }),
    422,
    ['body', 'masks', 0, 2],
    'mask_value',
  ],
  [
    'a negative mask other than -100',
    json({
      masks: [
        [-1, 6, 7],
        [-100, 9, 10],
      ],
    }),
    422,
    ['body', 'masks', 0, 0],
    'mask_value',
  ],
  ['a score past float32', json({ scores: [1e39, 0.0] }), 422, ['body', 'scores', 0], 'float32_range'],
  [
    'an advantage of 1e300',
    json({
      advantages: [
        [0, 0, 1e300],
        [0, 0, 0],
      ],
    }),
    422,
    ['body', 'advantages', 0, 2],
    'float32_range',
  ],
  [
    'distill ids of another length',
    json({ distill_token_ids: [[[1]], [[1]]], distill_logprobs: [[[-1.0]], [[-1.0]]] }),
    422,
    ['body', 'distill_token_ids', 0],
  ],
  [
    'distill logprobs of another top-k',
    json({
      distill_token_ids: [
        [[1, 2], [1], [1]],
        [[1], [1], [1]],
      ],
      distill_logprobs: [
        [[-1.0], [-1.0], [-1.0]],
        [[-1.0], [-1.0], [-1.0]],
      ],
    }),
    422,
    ['body', 'distill_logprobs', 0, 0],
  ],
  [
    'distill ids without logprobs',
    json({
      distill_token_ids: [
        [[1], [1], [1]],
        [[1], [1], [1]],
      ],
    }),
    422,
    ['body', 'distill_logprobs'],
    'missing',
  ],
  [
    'tokens given twice',
    '{"tokens":[[5,6,7],[8,9,10]],"masks":[[-100,6,7],[-100,9,10]],"scores":[1.0,0.0],"tokens":[[1]]}',
    422,
    ['body', 'tokens'],
    'duplicate_key',
  ],
  [
    'a key given twice inside a message',
    '{"tokens":[[5,6,7],[8,9,10]],"masks":[[-100,6,7],[-100,9,10]],"scores":[1.0,0.0],"messages":[[{"role":"user","content":"a","role":"system"}],[{"role":"user","content":"b"}]]}',
    422,
    ['body', 'messages', 0, 0, 'role'],
    'duplicate_key',
  ],
  [
    'images nested 20,000 deep',
    `{"tokens":[[5,6,7],[8,9,10]],"masks":[[-100,6,7],[-100,9,10]],"scores":[1.0,0.0],"images":${deep(20_000)}}`,
    400,
  ],
  [
    'generation_params nested 100 deep',
    `{"tokens":[[5,6,7],[8,9,10]],"masks":[[-100,6,7],[-100,9,10]],"scores":[1.0,0.0],"generation_params":{"a":${deep(99)}}}`,
    400,
  ],
  [
    'an unknown key nested 20,000 deep',
    `{"tokens":[[5,6,7],[8,9,10]],"masks":[[-100,6,7],[-100,9,10]],"scores":[1.0,0.0],"extra":${deep(20_000)}}`,
    400,
  ],
];

// Bodies with invalid UTF-8 built byte by byte: a lone continuation byte, an overlong '/', an
// encoded surrogate, a sequence cut short at the end of a string.
const utf8Cases: [string, number[]][] = [
  ['a lone 0xff byte', [0xff]],
  ['a stray continuation byte', [0x80]],
  ['an overlong encoding', [0xc0, 0xaf]],
  ['an encoded surrogate', [0xed, 0xa0, 0x80]],
  ['a sequence cut short', [0xe2, 0x82]],
];
for (const [name, bytes] of utf8Cases) {
  for (const where of ['a message', 'an unknown key'] as const) {
    const marker = 'MARKER';
    const text =
      where === 'a message'
        ? json({ messages: [[{ role: 'user', content: marker }], [{ role: 'user', content: 'b' }]] })
        : json({ extra: marker });
    const [head, tail] = text.split(marker) as [string, string];
    refused.push([
      `${name} in ${where}`,
      Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]),
      400,
    ]);
  }
}
// Refused before this change too; kept here so that the class stays closed.
const alsoRefused: Case[] = [
  ['a NaN score', '{"tokens":[[5,6,7],[8,9,10]],"masks":[[-100,6,7],[-100,9,10]],"scores":[NaN,0.0]}', 422],
  [
    'an Infinity logprob',
    json({
      inference_logprobs: [
        [1.0, '-Infinity', 1.0],
        [1.0, 1.0, 1.0],
      ],
    }),
    422,
    ['body', 'inference_logprobs', 0, 1],
    'finite_number',
  ],
  [
    'a fractional token',
    json({
      tokens: [
        [5, 6.5, 7],
        [8, 9, 10],
      ],
    }),
    422,
    ['body', 'tokens', 0, 1],
    'int_from_float',
  ],
  [
    'a string of letters as a token',
    json({
      tokens: [
        [5, 'six', 7],
        [8, 9, 10],
      ],
    }),
    422,
    ['body', 'tokens', 0, 1],
    'int_parsing',
  ],
  ['tokens not nested', json({ tokens: [5, 6, 7] }), 422, ['body', 'tokens', 0], 'list_type'],
  ['scores as an object', json({ scores: { a: 1 } }), 422, ['body', 'scores'], 'list_type'],
  ['overrides holding a list', json({ overrides: [[1], {}] }), 422, ['body', 'overrides', 0], 'dict_type'],
  [
    'generation_params as a list',
    json({ generation_params: [1] }),
    422,
    ['body', 'generation_params'],
    'dict_type',
  ],
  [
    'a message without a role',
    json({ messages: [[{ content: 'x' }], [{ role: 'user', content: 'y' }]] }),
    422,
    ['body', 'messages', 0, 0, 'role'],
    'missing',
  ],
  ['env_id as a word', json({ env_id: 'first' }), 422, ['body', 'env_id'], 'int_parsing'],
];

describe('the trajectory API refuses malformed groups', () => {
  // One server: a refused body stores nothing, so the queue stays empty between cases.
  let server: TrajectoryApiServer;
  beforeAll(async () => {
    server = await startTrajectoryApiServer({
      port: 0,
      databasePath: join(directory, 'refusals.sqlite'),
      decodeWorkers: 1,
    });
    return () => server.close();
  });
  beforeEach(async () => {
    await rawRequest(server.url, '/reset_data');
  });

  const post = (path: string, body: string | Buffer, gzip: boolean) =>
    rawRequest(server.url, path, { method: 'POST', rawBody: body, gzip });

  it.each([...refused, ...alsoRefused])('refuses %s', async (name, body, status, loc, type) => {
    for (const gzip of [false, true]) {
      const response = await post('/scored_data', body, gzip);
      expect(response.status, `${name}${gzip ? ' (gzip)' : ''}: ${response.text.slice(0, 300)}`).toBe(status);
      const detail = (response.json as { detail: unknown }).detail;
      if (status === 400) expect(detail).toMatch(/^There was an error parsing the body: /);
      else {
        const first = (detail as { loc: unknown[]; type: string }[])[0];
        if (loc) expect(first?.loc).toEqual(loc);
        if (type) expect(first?.type).toBe(type);
      }
      // In a list, the same group is named by its index, and the whole list is refused.
      const text = Buffer.isBuffer(body) ? body : Buffer.from(body);
      const list = Buffer.concat([Buffer.from(`[${json({})},`), text, Buffer.from(']')]);
      const listed = await post('/scored_data_list', list, gzip);
      expect(listed.status, `${name} in a list`).toBe(status);
      if (status === 422 && loc)
        expect((listed.json as { detail: { loc: unknown[] }[] }).detail[0]?.loc).toEqual([
          'body',
          1,
          ...loc.slice(1),
        ]);
    }
    expect((await rawRequest(server.url, '/status')).json).toEqual({ current_step: 0, queue_size: 0 });
  });

  it('takes a list all or nothing: one bad group refuses the body and stores none of it', async () => {
    const good = json({});
    const response = await post(
      '/scored_data_list',
      `[${good},${good},${json({
        masks: [
          [-100, 6, 7],
          [-100, 9, 11],
        ],
      })},${good}]`,
      true,
    );
    expect(response.status).toBe(422);
    expect((response.json as { detail: { loc: unknown[] }[] }).detail.map((issue) => issue.loc)).toEqual([
      ['body', 2, 'masks', 1, 2],
    ]);
    expect((await rawRequest(server.url, '/status')).json).toEqual({ current_step: 0, queue_size: 0 });
    expect((await post('/scored_data_list', `[${good},${good}]`, true)).json).toEqual({
      status: 'received',
      groups_processed: 2,
    });
  });

  it('takes the empty optional lists Atropos BaseEnv sends, and leaves NaN-free numbers as sent', async () => {
    // collect_trajectories starts advantages, ref_logprobs, messages, overrides and images as [].
    const baseEnv = json({
      advantages: [],
      ref_logprobs: [],
      messages: [],
      overrides: [],
      images: [],
      group_overrides: {},
    });
    expect((await post('/scored_data', baseEnv, true)).status).toBe(200);
    const full = json({
      advantages: [
        [0, 0.5, 0.5],
        [0, -0.5, -0.5],
      ],
      inference_logprobs: [
        [1.0, -0.5, -0.25],
        [1.0, -1.0, -2.0],
      ],
      ref_logprobs: [
        [-1.0, -0.5, -0.25],
        [-1.0, -1.0, -2.0],
      ],
      messages: [[{ role: 'user', content: 'é ✓' }], [{ role: 'user', content: 'b' }]],
      overrides: [{ set_advantage_to_zero: true }, {}],
      distill_token_ids: [
        [
          [1, 2],
          [3, 4],
          [5, 6],
        ],
        [
          [1, 2],
          [3, 4],
          [5, 6],
        ],
      ],
      distill_logprobs: [
        [
          [-1.0, -2.0],
          [-1.0, -2.0],
          [-1.0, -2.0],
        ],
        [
          [-1.0, -2.0],
          [-1.0, -2.0],
          [-1.0, -2.0],
        ],
      ],
      images: [[[[]]]],
      env_id: null,
    });
    expect((await post('/scored_data', full, false)).status).toBe(200);
    expect((await post('/scored_data_list', `[${full},${baseEnv}]`, true)).status).toBe(200);
    expect((await rawRequest(server.url, '/status')).json).toEqual({ current_step: 0, queue_size: 4 });
  });
});

describe('after hostile posts the reference trainer reads every batch', () => {
  const python = join(repoRoot, '.venv', 'bin', 'python');

  it('serves only batches that trainers/shears_trainer turns into tensors', {
    timeout: 120_000,
  }, async () => {
    if (!existsSync(python))
      throw new Error(
        `${python} is missing: run bash scripts/setup-python.sh (CI runs it in provision-test.sh)`,
      );
    const server = await startTrajectoryApiServer({
      port: 0,
      databasePath: join(directory, 'trainer.sqlite'),
      decodeWorkers: 1,
    });
    try {
      const post = (path: string, body: string | Buffer, gzip = true) =>
        rawRequest(server.url, path, { method: 'POST', rawBody: body, gzip });
      const register = {
        wandb_group: 'g',
        wandb_project: 'p',
        batch_size: 4,
        max_token_len: 64,
        checkpoint_dir: 'c',
        save_checkpoint_interval: 1,
        starting_step: 0,
        num_steps: 10,
      };
      await rawRequest(server.url, '/register', { method: 'POST', body: register });
      await rawRequest(server.url, '/batch');
      let good = 0;
      for (const [index, [, body, status]] of [...refused, ...alsoRefused].entries()) {
        expect((await post('/scored_data', body)).status).toBe(status);
        // A good group between hostile ones, each with its own scores.
        const response = await post(
          '/scored_data',
          json({
            scores: [index, -index],
            inference_logprobs: [
              [1.0, -0.5, -0.25],
              [1.0, -1.0, -2.0],
            ],
          }),
        );
        expect(response.status).toBe(200);
        good++;
      }
      if (good % 2 === 1) {
        expect((await post('/scored_data', json({}))).status).toBe(200);
        good++;
      }
      const { stdout } = await promisify(execFile)(
        python,
        [join(here, '..', '..', 'test', 'read_batches.py'), server.url],
        {
          env: { ...process.env, PYTHONPATH: join(repoRoot, 'trainers') },
          timeout: 100_000,
        },
      ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(
          `the trainer could not read a batch: ${error.stderr || error.stdout || error.message}`,
        );
      });
      const seen = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as {
        batches: number;
        sequences: number;
        scores: number[];
      };
      expect(seen.batches).toBe(good / 2);
      expect(seen.sequences).toBe(good * 2);
      expect(seen.scores.slice(0, 4)).toEqual([0, 0, 1, -1]);
    } finally {
      await server.close();
    }
  });
});
