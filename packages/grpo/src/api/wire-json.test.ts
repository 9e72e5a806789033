// The client's group JSON: float fields spelled as Python writes them, so shears' server keeps
// the body exactly as sent (no rewrite at ingest) and any trainer reads floats.
import * as zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decode } from './wire-decode.js';
import { wireJson } from './wire-json.js';

const decoder = { decode };

const group = {
  tokens: [
    [1, 2, 3],
    [4, 5, 6],
  ],
  masks: [
    [-100, 2, 3],
    [-100, 5, 6],
  ],
  scores: [1, -0, 0.5, 1e-7, 1.2345678901234567e19, 1e-4],
  advantages: [[1, 0, -2.5]],
  inference_logprobs: [
    [1, 1, -0.25],
    [1, -1e-5, 0],
  ],
  distill_logprobs: [[[0, -1.5]]],
  messages: [[{ role: 'user', content: 'hi', reward: 1 }]],
  env_id: 0,
};

describe('wireJson', () => {
  it('writes float fields as Python does and leaves the rest to JSON.stringify', () => {
    const text = wireJson(group);
    expect(JSON.parse(text)).toEqual(group);
    expect(text).toContain('"scores":[1.0,-0.0,0.5,1e-07,1.2345678901234567e+19,0.0001]');
    expect(text).toContain('"inference_logprobs":[[1.0,1.0,-0.25],[1.0,-1e-05,0.0]]');
    expect(text).toContain('"tokens":[[1,2,3],[4,5,6]]');
    expect(text).toContain('"reward":1}');
  });

  it('is stored by the server exactly as sent, gzip and all', () => {
    // One score per sequence, one row per sequence as long as its tokens: a group the server takes.
    const stored = {
      ...group,
      scores: [1, -1e-7],
      advantages: [
        [1, 0, -2.5],
        [0, 1.2345678901234567e19, 1e-4],
      ],
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
          [0, -1.5],
          [-0, -1],
          [-2, -3],
        ],
        [
          [0, -1.5],
          [-0, -1],
          [-2, -3],
        ],
      ],
      messages: [[{ role: 'user', content: 'hi', reward: 1 }], [{ role: 'user', content: 'ho' }]],
    };
    for (const body of [stored, [stored, stored]]) {
      const gzip = zlib.gzipSync(wireJson(body));
      const result = decoder.decode({
        kind: Array.isArray(body) ? 'list' : 'single',
        body: gzip,
        gzip: true,
        maxBytes: 1 << 20,
      });
      expect(result.ok).toBe(true);
      if (!result.ok || Array.isArray(body)) continue;
      expect(result.groups[0]?.encoding).toBe(1);
      expect(Buffer.from(result.groups[0]?.payload ?? []).equals(gzip)).toBe(true);
    }
  });
});
