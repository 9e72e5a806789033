import * as zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { type DecodeResult, wireDecoderSource } from './wire-decode.js';

const decoder = wireDecoderSource(zlib);

function decodeBoth(text: string, gzip: boolean): [DecodeResult, DecodeResult] {
  const body = gzip ? zlib.gzipSync(text) : Buffer.from(text);
  const request = { kind: 'single' as const, body, gzip, maxBytes: 1 << 26 };
  return [decoder.decode(request), decoder.decode({ ...request, generalOnly: true })];
}

function storedText(result: DecodeResult): unknown {
  if (!result.ok) return result;
  return result.groups.map((group) => ({
    ...group,
    payload: (group.encoding === 1 ? zlib.gunzipSync(group.payload) : Buffer.from(group.payload)).toString(),
  }));
}

const bodies: Record<string, string> = {
  plain: '{"tokens":[[1,2,3],[4,5]],"masks":[[-100,2,3],[4,5]],"scores":[1.0,-0.5],"env_id":null}',
  spaced: ' {\n "tokens" : [ [ 1 , 2 ] ] ,\t"masks":[[1,2]],\r\n"scores":[ 1e-3 ] } ',
  allNumeric:
    '{"tokens":[[1]],"masks":[[1]],"scores":[0],"advantages":[[0.5]],"ref_logprobs":null,"inference_logprobs":[[-1.25E+2]],"distill_token_ids":[[[1,2]]],"distill_logprobs":[[[-0.1,-0.2]]]}',
  withMessages:
    '{"tokens":[[1]],"masks":[[1]],"scores":[1],"messages":[[{"role":"user","content":"h\\"i ] }"}]],"generation_params":{"t":1},"overrides":[{}],"group_overrides":null,"images":null,"env_id":3}',
  unicode: '{"tokens":[[1]],"masks":[[1]],"scores":[1],"messages":[[{"role":"user","content":"héllo ✓"}]]}',
  emptyLists: '{"tokens":[],"masks":[],"scores":[]}',
  floatToken: '{"tokens":[[1.0]],"masks":[[1]],"scores":[1]}',
  fractionToken: '{"tokens":[[1.5]],"masks":[[1]],"scores":[1]}',
  stringToken: '{"tokens":[["7"]],"masks":[[1]],"scores":[1]}',
  hugeInt: '{"tokens":[[12345678901234567890]],"masks":[[1]],"scores":[1]}',
  unknownKey: '{"tokens":[[1]],"masks":[[1]],"scores":[1],"extra":{"a":[1]}}',
  duplicateKey: '{"tokens":[[1]],"tokens":[[2,3]],"masks":[[1]],"scores":[1]}',
  stringEnvId: '{"tokens":[[1]],"masks":[[1]],"scores":[1],"env_id":"2"}',
  badEnvId: '{"tokens":[[1]],"masks":[[1]],"scores":[1],"env_id":1.5}',
  missingScores: '{"tokens":[[1]],"masks":[[1]]}',
  nullTokens: '{"tokens":null,"masks":[[1]],"scores":[1]}',
  badRole: '{"tokens":[[1]],"masks":[[1]],"scores":[1],"messages":[[{"role":1,"content":"x"}]]}',
  leadingZero: '{"tokens":[[01]],"masks":[[1]],"scores":[1]}',
  trailingComma: '{"tokens":[[1,]],"masks":[[1]],"scores":[1]}',
  truncated: '{"tokens":[[1,2',
  trailingGarbage: '{"tokens":[[1]],"masks":[[1]],"scores":[1]} x',
  notAnObject: '[1,2]',
  fifteenDigits: '{"tokens":[[123456789012345,-123456789012345]],"masks":[[0]],"scores":[-0]}',
  sixteenDigits: '{"tokens":[[1234567890123456]],"masks":[[0]],"scores":[1]}',
  exponents: '{"tokens":[[ ]],"masks":[[]],"scores":[1e5,1E+5,-2.5e-3,0.0,-0,12345678901234567890.5]}',
  danglingDot: '{"tokens":[[1]],"masks":[[1]],"scores":[1.]}',
  danglingExponent: '{"tokens":[[1]],"masks":[[1]],"scores":[1e]}',
  loneMinus: '{"tokens":[[-]],"masks":[[1]],"scores":[1]}',
  leadingComma: '{"tokens":[[,1]],"masks":[[1]],"scores":[1]}',
  doubleComma: '{"tokens":[[1,,2]],"masks":[[1]],"scores":[1]}',
  spacedNumbers: '{"tokens":[[ 1 , 2 ]],"masks":[[1 ,2]],"scores":[ 1 ]}',
  tokensNotNested: '{"tokens":[1,2],"masks":[[1]],"scores":[1]}',
  empty: '   ',
};

describe('wire decoder fast path', () => {
  for (const [name, text] of Object.entries(bodies)) {
    for (const gzip of [false, true]) {
      it(`stores and rejects exactly like the general path: ${name}${gzip ? ' (gzip)' : ''}`, () => {
        const [fast, general] = decodeBoth(text, gzip);
        expect(storedText(fast)).toEqual(storedText(general));
      });
    }
  }

  it('keeps the client gzip bytes of a well-formed group and reports its size and env', () => {
    const body = zlib.gzipSync(bodies.withMessages as string);
    const result = decoder.decode({ kind: 'single', body, gzip: true, maxBytes: 1 << 20 });
    expect(result.ok && result.groups[0]).toMatchObject({ envId: 3, size: 1, encoding: 1 });
    expect(result.ok && Buffer.from(result.groups[0]?.payload ?? []).equals(body)).toBe(true);
    expect(result.ok && result.groups[0]?.suffix).toBe(
      ',"advantages":null,"ref_logprobs":null,"inference_logprobs":null,"distill_token_ids":null,"distill_logprobs":null',
    );
  });

  it('answers 422 with the offending location for a fractional token', () => {
    const [fast] = decodeBoth(bodies.fractionToken as string, true);
    expect(fast.ok).toBe(false);
    expect(!fast.ok && JSON.parse(fast.body).detail[0]).toMatchObject({
      type: 'int_from_float',
      loc: ['body', 'tokens', 0, 0],
    });
  });
});
