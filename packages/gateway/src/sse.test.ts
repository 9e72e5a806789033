import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitForStream, sseEvent } from './sse.js';

describe('splitForStream', () => {
  it('gives the text back exactly, in pieces no longer than the window allows, never splitting a surrogate pair', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 400 }),
        fc.integer({ min: 1, max: 40 }),
        (text, size) => {
          const pieces = splitForStream(text, size);
          expect(pieces.join('')).toBe(text);
          for (const piece of pieces) {
            expect(piece.length).toBeGreaterThan(0);
            expect(piece.length).toBeLessThanOrEqual(size + 1);
            const last = piece.charCodeAt(piece.length - 1);
            expect(
              last >= 0xd800 && last <= 0xdbff,
              `piece ends in a high surrogate: ${JSON.stringify(piece)}`,
            ).toBe(false);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('cuts after whitespace when it can, like tokens that end at word boundaries', () => {
    expect(splitForStream('the quick brown fox jumps', 8)).toEqual([
      'the ',
      'quick ',
      'brown ',
      'fox ',
      'jumps',
    ]);
    expect(splitForStream('', 8)).toEqual([]);
    expect(splitForStream('🎉🎉🎉', 3)).toEqual(['🎉', '🎉', '🎉']);
  });
});

describe('sseEvent', () => {
  it('writes named and unnamed events, JSON-encoding data that is not already text', () => {
    expect(sseEvent(undefined, '[DONE]')).toBe('data: [DONE]\n\n');
    expect(sseEvent('ping', { type: 'ping' })).toBe('event: ping\ndata: {"type":"ping"}\n\n');
    // Newlines inside values stay escaped, so one event is one data line.
    expect(sseEvent(undefined, { text: 'a\nb' }).split('\n').filter(Boolean)).toHaveLength(1);
  });
});
