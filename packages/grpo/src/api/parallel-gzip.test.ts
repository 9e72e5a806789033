import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parallelGzip } from './parallel-gzip.js';

describe('parallelGzip', () => {
  const parts = [
    '{"batch":[',
    JSON.stringify({ tokens: Array.from({ length: 5000 }, (_, index) => index) }),
    ',',
    '{"a":"ünï"}',
    // Larger than one stored block (65,535 bytes).
    JSON.stringify({ logprobs: Array.from({ length: 20_000 }, (_, index) => -index / 7) }),
    ']}',
  ].map((text) => Buffer.from(text));

  it('produces one gzip stream that any reader inflates to the concatenated parts', async () => {
    const compressed = Buffer.concat(await parallelGzip(parts));
    expect(gunzipSync(compressed).toString()).toBe(Buffer.concat(parts).toString());
    expect(compressed.length).toBeLessThan(Buffer.concat(parts).length * 0.6);
    expect(gunzipSync(Buffer.concat(await parallelGzip([Buffer.from('only')])))).toEqual(Buffer.from('only'));
    expect(gunzipSync(Buffer.concat(await parallelGzip([])))).toEqual(Buffer.alloc(0));
  });

  it('stores the parts uncompressed in the same gzip framing when asked to', async () => {
    const chunks = await parallelGzip(parts, { mode: 'store' });
    const stored = Buffer.concat(chunks);
    expect(gunzipSync(stored).toString()).toBe(Buffer.concat(parts).toString());
    // Stored blocks point into the parts (no copy of the bodies).
    expect(chunks.some((chunk) => chunk.buffer === parts[1]?.buffer)).toBe(true);
  });
});
