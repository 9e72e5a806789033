import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError, JsonParseError } from './errors.js';
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
    return {
      sink: createJsonlSink({ path }),
      read: () => readScoredGroups(path),
      resumes: true,
      reopen: async () => createJsonlSink({ path }),
    };
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

describe('createJsonlSink modes', () => {
  const ids = async (path: string) => (await readScoredGroups(path)).map((group) => group.groupId);

  it('mode new refuses a file that is there, naming it, and leaves it as it was', async () => {
    const path = join(root, 'new', 'taken.jsonl');
    await mkdir(join(root, 'new'), { recursive: true });
    await writeFile(path, `${JSON.stringify(sampleScoredGroup('before'))}\n`);
    const sink = createJsonlSink({ path, mode: 'new' });
    const error = await sink.open!().catch((caught: unknown) => caught);
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(`${path} already exists`);
    expect(((error as Error).cause as { code?: string }).code).toBe('EEXIST');
    await sink.close();
    expect(await ids(path)).toEqual(['before']);
  });

  it('mode new removes the file on close when no group was written, and keeps it when one was', async () => {
    const empty = join(root, 'new', 'empty.jsonl');
    const sink = createJsonlSink({ path: empty, mode: 'new' });
    await sink.open!();
    expect(existsSync(empty)).toBe(true);
    await sink.close({ incomplete: true });
    expect(existsSync(empty)).toBe(false);
    const kept = join(root, 'new', 'kept.jsonl');
    const other = createJsonlSink({ path: kept, mode: 'new' });
    await other.open!();
    await other.write(sampleScoredGroup('one'));
    await other.close();
    expect(await ids(kept)).toEqual(['one']);
  });

  it('mode replace starts the file over; append (the default) adds to it', async () => {
    const path = join(root, 'replace.jsonl');
    await writeFile(path, `${JSON.stringify(sampleScoredGroup('old'))}\n`);
    const appending = createJsonlSink({ path });
    await appending.write(sampleScoredGroup('added'));
    await appending.close();
    expect(await ids(path)).toEqual(['old', 'added']);
    const replacing = createJsonlSink({ path, mode: 'replace' });
    await replacing.open!();
    await replacing.write(sampleScoredGroup('fresh'));
    await replacing.close();
    expect(await ids(path)).toEqual(['fresh']);
  });

  it('resumed, writes the kept groups through a temporary file renamed into place, and counts them', async () => {
    const path = join(root, 'resume.jsonl');
    await writeFile(path, ['a', 'b', 'c'].map((id) => JSON.stringify(sampleScoredGroup(id))).join('\n'));
    const sink = createJsonlSink({ path, validate: false });
    await sink.open!({ resume: { kept: [sampleScoredGroup('a'), sampleScoredGroup('c')] } });
    expect(await ids(path)).toEqual(['a', 'c']);
    expect(sink.written).toBe(2);
    await sink.write(sampleScoredGroup('d'));
    await sink.flush!();
    expect(await ids(path)).toEqual(['a', 'c', 'd']);
    await sink.close();
    expect((await readdir(root)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses a second open', async () => {
    const sink = createJsonlSink({ path: join(root, 'twice.jsonl') });
    await sink.open!();
    await expect(sink.open!()).rejects.toThrow('already open');
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
