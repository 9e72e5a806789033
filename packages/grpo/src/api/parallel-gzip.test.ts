import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parallelGzip } from './parallel-gzip.js';

describe('parallelGzip', () => {
  it('produces one gzip stream that any reader inflates to the concatenated parts', async () => {
    const parts = [
      '{"batch":[',
      JSON.stringify({ tokens: Array.from({ length: 5000 }, (_, index) => index) }),
      ',',
      '{"a":"ünï"}',
      ']}',
    ].map((text) => Buffer.from(text));
    const compressed = await parallelGzip(parts);
    expect(gunzipSync(compressed).toString()).toBe(Buffer.concat(parts).toString());
    expect(gunzipSync(await parallelGzip([Buffer.from('only')]))).toEqual(Buffer.from('only'));
  });
});
