import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonParseError } from './errors.js';
import { createJsonlSink, readScoredGroups } from './jsonl-sink.js';
import type { ScoredGroupRecord } from './schemas/group-record.js';
import { describeSinkConformance, sampleScoredGroup } from './test/sink-conformance.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'shears-jsonl-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

describeSinkConformance({
  name: 'jsonl',
  create: async () => {
    const path = join(root, `conformance-${Math.random().toString(36).slice(2)}`, 'out.jsonl');
    return { sink: createJsonlSink({ path }), read: () => readScoredGroups(path) };
  },
});

describe('createJsonlSink', () => {
  it('creates parent directories and writes one group per line', async () => {
    const path = join(root, 'a', 'b', 'groups.jsonl');
    const sink = createJsonlSink({ path });
    await Promise.all([sink.write(sampleScoredGroup('g1')), sink.write(sampleScoredGroup('g2'))]);
    await sink.close();
    await sink.close();
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect((await readScoredGroups(path)).map((group) => group.groupId)).toEqual(['g1', 'g2']);
    await expect(sink.write(sampleScoredGroup('g3'))).rejects.toThrow('closed');
  });

  it('rejects a record that is not a scored group, naming the field', async () => {
    const sink = createJsonlSink({ path: join(root, 'bad.jsonl') });
    const bad = { ...sampleScoredGroup('x'), scores: 'nope' } as unknown as ScoredGroupRecord;
    await expect(sink.write(bad)).rejects.toThrow(/scores/);
    await sink.close();
  });
});

describe('readScoredGroups', () => {
  it('names the bad line', async () => {
    const path = join(root, 'broken.jsonl');
    await writeFile(path, `${JSON.stringify(sampleScoredGroup('ok'))}\n\n{"kind": "shears.group"\n`);
    const error = await readScoredGroups(path).catch((caught: unknown) => caught);
    expect(JsonParseError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(`${path} line 3`);
  });
});
