import { execFileSync } from 'node:child_process';
import * as zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { type DecodeResult, decode } from './wire-decode.js';
import { pythonFloat } from './wire-numbers.js';

const decoder = { decode, pythonFloat };

function decodeBoth(text: string, gzip: boolean): [DecodeResult, DecodeResult] {
  const body = gzip ? zlib.gzipSync(text) : Buffer.from(text);
  const request = { kind: 'single' as const, body, gzip, maxBytes: 1 << 26 };
  return [decoder.decode(request), decoder.decode({ ...request, generalOnly: true })];
}

// The stored text without whitespace outside strings: the fast path keeps the client's bytes
// where it can, the general path rebuilds the object; both must hold the same tokens.
function compact(text: string): string {
  let out = '';
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index] as string;
    if (inString) {
      out += char;
      if (char === '\\') out += text[++index];
      else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
      out += char;
    } else if (!' \n\r\t'.includes(char)) out += char;
  }
  return out;
}

function storedText(result: DecodeResult): unknown {
  if (!result.ok) return result;
  return result.groups.map((group) => ({
    ...group,
    encoding: undefined,
    payload: compact(
      (group.encoding === 1 ? zlib.gunzipSync(group.payload) : Buffer.from(group.payload)).toString(),
    ),
  }));
}

const bodies: Record<string, string> = {
  plain: '{"tokens":[[1,2,3],[4,5]],"masks":[[-100,2,3],[4,5]],"scores":[1.0,-0.5],"env_id":null}',
  spaced: ' {\n "tokens" : [ [ 1 , 2 ] ] ,\t"masks":[[1,2]],\r\n"scores":[ 1e-3 ] } ',
  allNumeric:
    '{"tokens":[[1]],"masks":[[1]],"scores":[0],"advantages":[[0.5]],"ref_logprobs":null,"inference_logprobs":[[-1.25E+2]],"distill_token_ids":[[[1,2]]],"distill_logprobs":[[[-0.1,-0.2]]]}',
  withMessages:
    '{"tokens":[[1]],"masks":[[1]],"scores":[1.0],"messages":[[{"role":"user","content":"h\\"i ] }"}]],"generation_params":{"t":1},"overrides":[{}],"group_overrides":null,"images":null,"env_id":3}',
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
  jsFloats: '{"tokens":[[1,2]],"masks":[[-100,2]],"scores":[1,0,-0,0.5],"inference_logprobs":[[1,-0.25]]}',
  oddSpellings:
    '{"tokens":[[1e3,3.0,-0.0,-0]],"masks":[[1E2,2]],"scores":[1e3,1E-7,-0.0,0.10,0.00001,100000000000000000000.0,1234567890123456789]}',
  bigTokens:
    '{"tokens":[[123456789012345678901234567890]],"masks":[[1]],"scores":[123456789012345678901234567890]}',
  intOverflow: '{"tokens":[[1e20]],"masks":[[1]],"scores":[1]}',
  floatOverflow: '{"tokens":[[1]],"masks":[[1]],"scores":[1e400]}',
  nanLiteral: '{"tokens":[[1]],"masks":[[1]],"scores":[NaN]}',
  nanString: '{"tokens":[[1]],"masks":[[1]],"scores":["nan"]}',
  envFloat: '{"tokens":[[1]],"masks":[[1]],"scores":[1],"env_id":0.0}',
  anyKeptAsWritten:
    '{"tokens":[[1]],"masks":[[1]],"scores":[1.0],"messages":[[{"role":"u","content":"x","reward":1.0,"n":1}]],"generation_params":{"t":0.70}}',
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

// The decoder inflates into one buffer it keeps across bodies; these are the ways that could
// go wrong: a stored payload that still points into it, a trailer that lies about the size,
// a body past the limit, a broken stream, and two gzip members.
describe('wire decoder inflate buffer', () => {
  const list = `[${bodies.plain},${bodies.withMessages}]`;
  const gzipList = (text: string) => ({
    kind: 'list' as const,
    body: zlib.gzipSync(text),
    gzip: true,
    maxBytes: 1 << 20,
  });

  it('gives each stored group bytes of its own: a later body does not change an earlier one', () => {
    const first = decoder.decode(gzipList(list));
    const before = first.ok ? first.groups.map((group) => Buffer.from(group.payload).toString()) : [];
    expect(before).toHaveLength(2);
    // Same length, other digits: would overwrite the first body's bytes in a shared buffer.
    decoder.decode(gzipList(list.replaceAll('1', '7').replaceAll('2', '8')));
    expect(first.ok && first.groups.map((group) => Buffer.from(group.payload).toString())).toEqual(before);
  });

  it('decodes a body whose gzip trailer understates its size, and refuses one past the limit', () => {
    const text = bodies.withMessages as string;
    const lying = zlib.gzipSync(text);
    lying.writeUInt32LE(8, lying.length - 4); // ISIZE: 8 bytes
    // gunzip checks ISIZE: the lie is a corrupt stream, refused as such, whoever inflates it.
    const result = decoder.decode({ kind: 'single', body: lying, gzip: true, maxBytes: 1 << 20 });
    expect(result).toMatchObject({ ok: false, status: 400, body: 'Invalid gzip payload' });
    const big = zlib.gzipSync(`{"tokens":[[${'1,'.repeat(5000)}1]],"masks":[[1]],"scores":[1]}`);
    expect(decoder.decode({ kind: 'single', body: big, gzip: true, maxBytes: 4096 })).toMatchObject({
      ok: false,
      status: 413,
    });
    // The buffer still works after both refusals.
    expect(
      decoder.decode({ kind: 'single', body: zlib.gzipSync(text), gzip: true, maxBytes: 1 << 20 }).ok,
    ).toBe(true);
  });

  it('refuses a cut or corrupted stream with 400 and then decodes the next body', () => {
    const body = zlib.gzipSync(bodies.plain as string);
    const cut = body.subarray(0, body.length - 12);
    const corrupt = Buffer.from(body);
    corrupt[12] = (corrupt[12] as number) ^ 0xff;
    for (const broken of [cut, corrupt])
      expect(decoder.decode({ kind: 'single', body: broken, gzip: true, maxBytes: 1 << 20 })).toMatchObject({
        ok: false,
        status: 400,
      });
    expect(decoder.decode({ kind: 'single', body, gzip: true, maxBytes: 1 << 20 }).ok).toBe(true);
  });

  it('reads a body of two gzip members as gunzip does', () => {
    const text = bodies.plain as string;
    const body = Buffer.concat([zlib.gzipSync(text.slice(0, 20)), zlib.gzipSync(text.slice(20))]);
    const result = decoder.decode({ kind: 'single', body, gzip: true, maxBytes: 1 << 20 });
    expect(result.ok && result.groups[0]?.size).toBe(2);
  });
});

function served(text: string): Record<string, string> | { status: number; detail: unknown } {
  const result = decoder.decode({ kind: 'single', body: Buffer.from(text), gzip: false, maxBytes: 1 << 20 });
  if (!result.ok) return { status: result.status, detail: JSON.parse(result.body).detail };
  const stored = Buffer.from(result.groups[0]?.payload ?? []).toString();
  // Each typed field's text as it is stored and served.
  const fields: Record<string, string> = {};
  for (const key of ['tokens', 'masks', 'scores', 'advantages', 'inference_logprobs', 'env_id']) {
    const match = new RegExp(`"${key}":(\\[[^"]*?\\](?=,"|}$)|[^,}]+)`).exec(stored);
    if (match) fields[key] = match[1] as string;
  }
  return fields;
}

// What Atropos run-api (pydantic v2 lax mode, FastAPI's json.dumps) serves for each posted
// spelling, measured against the real server: ints as JSON integers, floats as Python floats.
describe('wire types: every number is served with the type Atropos serves', () => {
  it.each([
    [
      'integral scores become floats',
      '{"tokens":[[1],[2]],"masks":[[1],[2]],"scores":[1,0]}',
      { scores: '[1.0,0.0]' },
    ],
    [
      'integral floats in int fields become ints',
      '{"tokens":[[3.0],[2]],"masks":[[3.0],[2]],"scores":[1.5,0.25]}',
      { tokens: '[[3],[2]]', masks: '[[3],[2]]', scores: '[1.5,0.25]' },
    ],
    [
      'exponents',
      '{"tokens":[[1e3],[2]],"masks":[[1E3],[2]],"scores":[1e3,1E-7]}',
      { tokens: '[[1000],[2]]', masks: '[[1000],[2]]', scores: '[1000.0,1e-07]' },
    ],
    [
      'negative zero',
      '{"tokens":[[-0.0],[-0]],"masks":[[-0],[-0.0]],"scores":[-0.0,-0]}',
      { tokens: '[[0],[0]]', scores: '[-0.0,0.0]' },
    ],
    [
      'huge integers in float fields become floats',
      '{"tokens":[[1],[2]],"masks":[[1],[2]],"scores":[123456789012345678901234567890,1]}',
      { scores: '[1.2345678901234568e+29,1.0]' },
    ],
    [
      "Python's repr for tiny, huge and over-long floats",
      '{"tokens":[[1,2,3,4,5,6]],"masks":[[1,2,3,4,5,6]],"scores":[1],"inference_logprobs":[[12345678901234567890,0.1000000000000000055511151231257827,100000000000000000000.0,0.0001,0.00001,0.10]]}',
      { inference_logprobs: '[[1.2345678901234567e+19,0.1,1e+20,0.0001,1e-05,0.1]]' },
    ],
    [
      'numeric strings and booleans (lax mode)',
      '{"tokens":[["3"],[" 1_000 "],[true],[false]],"masks":[["3.0"],["1_000"],[true],[false]],"scores":["1.50"," 2 ",true,false]}',
      { tokens: '[[3],[1000],[1],[0]]', masks: '[[3],[1000],[1],[0]]', scores: '[1.5,2.0,1.0,0.0]' },
    ],
    [
      'every float and int field, and env_id',
      '{"tokens":[[1,2],[3]],"masks":[[1,2],[3]],"scores":[0.1,0.2],"advantages":[[1,2.0],[0.00001]],"inference_logprobs":[[1,-0.5],[1]],"env_id":0.0}',
      {
        scores: '[0.1,0.2]',
        advantages: '[[1.0,2.0],[1e-05]]',
        inference_logprobs: '[[1.0,-0.5],[1.0]]',
        env_id: '0',
      },
    ],
  ])('%s', (_, text, expected) => {
    expect(served(text)).toMatchObject(expected);
    const general = decoder.decode({
      kind: 'single',
      body: Buffer.from(text),
      gzip: false,
      maxBytes: 1 << 20,
      generalOnly: true,
    });
    const fast = decoder.decode({ kind: 'single', body: Buffer.from(text), gzip: false, maxBytes: 1 << 20 });
    expect(storedText(fast)).toEqual(storedText(general));
  });

  it.each([
    [
      'a fractional token',
      '{"tokens":[[3.5]],"masks":[[1]],"scores":[1]}',
      'int_from_float',
      ['body', 'tokens', 0, 0],
    ],
    [
      'a token past int64',
      '{"tokens":[[1e20]],"masks":[[1]],"scores":[1]}',
      'int_parsing_size',
      ['body', 'tokens', 0, 0],
    ],
    [
      'a hex string token',
      '{"tokens":[["0x10"]],"masks":[[1]],"scores":[1]}',
      'int_parsing',
      ['body', 'tokens', 0, 0],
    ],
    [
      'an infinite score',
      '{"tokens":[[1]],"masks":[[1]],"scores":[1,1e400]}',
      'finite_number',
      ['body', 'scores', 1],
    ],
    [
      'a NaN string score',
      '{"tokens":[[1]],"masks":[[1]],"scores":[" NaN "]}',
      'finite_number',
      ['body', 'scores', 0],
    ],
    [
      'an Infinity string logprob',
      '{"tokens":[[1]],"masks":[[1]],"scores":[1],"inference_logprobs":[["-inf"]]}',
      'finite_number',
      ['body', 'inference_logprobs', 0, 0],
    ],
    [
      'an integer too large for a float',
      `{"tokens":[[1]],"masks":[[1]],"scores":[1${'0'.repeat(400)}]}`,
      'float_type',
      ['body', 'scores', 0],
    ],
    ['a null score', '{"tokens":[[1]],"masks":[[1]],"scores":[null]}', 'float_type', ['body', 'scores', 0]],
  ])('refuses %s with 422, naming the element', (_, text, type, loc) => {
    const result = served(text);
    expect(result).toMatchObject({ status: 422 });
    expect((result as { detail: { type: string; loc: unknown }[] }).detail[0]).toMatchObject({ type, loc });
  });

  it('refuses a NaN literal (not JSON) with 422 instead of storing a group that breaks every /batch', () => {
    expect(served('{"tokens":[[1]],"masks":[[1]],"scores":[NaN]}')).toMatchObject({ status: 422 });
  });

  it('keeps fields typed Any as written: Python reads the same ints and floats from them', () => {
    const text = bodies.anyKeptAsWritten as string;
    const result = decoder.decode({
      kind: 'single',
      body: Buffer.from(text),
      gzip: false,
      maxBytes: 1 << 20,
    });
    const stored = result.ok ? Buffer.from(result.groups[0]?.payload ?? []).toString() : '';
    expect(stored).toContain('"reward":1.0,"n":1');
    expect(stored).toContain('"generation_params":{"t":0.70}');
  });

  it('writes floats exactly as Python repr does (checked against python3 on 20,000 doubles)', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const values: number[] = [
      0, -0, 1, -1, 0.1, 1e16, 1e15, 9999999999999998, 1e-4, 1e-5, 5e-324, 1.7976931348623157e308,
    ];
    for (let index = 0; index < 20_000; index++) {
      const magnitude = 10 ** Math.floor(random() * 60 - 30);
      values.push((random() - 0.5) * magnitude);
      if (index % 4 === 0) values.push(Math.round(random() * 1e6) * 10 ** Math.floor(random() * 30 - 15));
    }
    const hex = values.map((value) => {
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, value);
      return view.getBigUint64(0).toString(16).padStart(16, '0');
    });
    const python = execFileSync(
      'python3',
      [
        '-c',
        'import sys,struct\nfor h in sys.stdin.read().split(): print(repr(struct.unpack(">d", bytes.fromhex(h))[0]))',
      ],
      { input: hex.join('\n'), maxBuffer: 1 << 26 },
    )
      .toString()
      .trim()
      .split('\n');
    const mismatches = values
      .map((value, index) => [value, decoder.pythonFloat(value), python[index]])
      .filter(([, ours, theirs]) => ours !== theirs);
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(python).toHaveLength(values.length);
  });
});

describe('every cut of a body is refused, never hangs or passes', () => {
  it('refuses each proper prefix of a well-formed group and list', () => {
    const group =
      '{"tokens":[[5,6,7],[8,9,10]],"masks":[[-100,6,7],[-100,9,10]],"scores":[1.0,-0.5],"inference_logprobs":[[1.0,-0.25,-1e-05],[1.0,-2.5,-0.125]],"distill_token_ids":[[[1],[2],[3]],[[1],[2],[3]]],"distill_logprobs":[[[-1.0],[-1.0],[-1.0]],[[-1.0],[-1.0],[-1.0]]],"messages":[[{"role":"u","content":"é"}],[{"role":"u","content":"x"}]],"env_id":0}';
    for (const [kind, text] of [
      ['single', group],
      ['list', `[${group},${group}]`],
    ] as const) {
      const body = Buffer.from(text);
      expect(decoder.decode({ kind, body, gzip: false, maxBytes: 1 << 20 }).ok).toBe(true);
      for (let cut = 0; cut < body.length; cut++) {
        // A prefix that ends in whitespace-free JSON is never a complete body here.
        const result = decoder.decode({ kind, body: body.subarray(0, cut), gzip: false, maxBytes: 1 << 20 });
        expect(result.ok, `${kind} cut at ${cut}`).toBe(false);
      }
    }
  });
});
