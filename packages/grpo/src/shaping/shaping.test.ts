import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSeededRandom, sampleScoredGroup } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import { type CollapseEvent, createCollapseMonitor } from './collapse-monitor.js';
import { createCurriculum } from './curriculum.js';
import { createDataMix, mixOnlineOffline } from './data-mix.js';
import { toDpoPairs, toSftRecords, writeJsonl } from './export.js';
import { createReplayBuffer } from './replay-buffer.js';

describe('replay buffer and online/offline mixing', () => {
  it('keeps only items above the threshold and evicts the lowest priority when full', () => {
    const buffer = createReplayBuffer<string>({ capacity: 2, threshold: 0.7 });
    expect(buffer.add('low', 0.7)).toBe(false);
    expect(buffer.add('a', 0.8)).toBe(true);
    expect(buffer.add('b', 0.9)).toBe(true);
    expect(buffer.add('c', 0.75)).toBe(false);
    expect(buffer.add('d', 0.95)).toBe(true);
    expect(
      buffer
        .items()
        .map((entry) => entry.item)
        .sort(),
    ).toEqual(['b', 'd']);
  });

  it('samples high priorities more often', () => {
    const buffer = createReplayBuffer<string>({
      threshold: 0,
      priority: (score) => score,
      random: createSeededRandom(7),
    });
    buffer.add('rare', 0.1);
    buffer.add('common', 0.9);
    let common = 0;
    for (let index = 0; index < 1000; index++) if (buffer.sample(1)[0] === 'common') common++;
    expect(common).toBeGreaterThan(800);
    expect(buffer.sample(5).sort()).toEqual(['common', 'rare']);
  });

  it('mixes 70 % online and 30 % replay, filling from online when replay runs short', () => {
    const buffer = createReplayBuffer<number>({ threshold: 0.7, random: createSeededRandom(1) });
    for (let index = 0; index < 100; index++) buffer.add(1000 + index, 0.8);
    const online = Array.from({ length: 300 }, (_, index) => index);
    const batch = mixOnlineOffline({ online, replay: buffer, batchSize: 256 });
    expect(batch).toMatchObject({ online: 179, offline: 77 });
    expect(batch.items).toHaveLength(256);
    const small = createReplayBuffer<number>();
    small.add(-1, 0.9);
    expect(mixOnlineOffline({ online, replay: small, batchSize: 10 })).toMatchObject({
      online: 9,
      offline: 1,
    });
  });
});

describe('curriculum', () => {
  it('advances when the mean of the last 100 scores passes 0.75', () => {
    const advances: number[] = [];
    const curriculum = createCurriculum({
      levels: ['single tool call', 'multi-step', 'complex'],
      onAdvance: (event) => advances.push(event.to),
    });
    for (let index = 0; index < 99; index++) expect(curriculum.record(1)).toBe(false);
    expect(curriculum.windowMean()).toBeNull();
    expect(curriculum.record(1)).toBe(true);
    expect(curriculum.current).toBe('multi-step');
    for (let index = 0; index < 100; index++) curriculum.record(0.75);
    expect(curriculum.level).toBe(1);
    expect(advances).toEqual([1]);
  });

  it('falls back a level when the rolling mean drops below fallBackBelow, and never below level 0', () => {
    const moves: string[] = [];
    const curriculum = createCurriculum({
      levels: ['easy', 'hard'],
      window: 2,
      threshold: 0.75,
      fallBackBelow: 0.25,
      onAdvance: (event) => moves.push(`up ${event.from}->${event.to} at ${event.mean}`),
      onFallBack: (event) => moves.push(`down ${event.from}->${event.to} at ${event.mean}`),
    });
    curriculum.record(0);
    expect(curriculum.record(0)).toBe(false); // already at level 0
    curriculum.record(1);
    expect(curriculum.record(1)).toBe(true);
    expect(curriculum.current).toBe('hard');
    curriculum.record(0.2);
    expect(curriculum.record(0.2)).toBe(true);
    expect(curriculum.current).toBe('easy');
    expect(moves).toEqual(['up 0->1 at 1', 'down 1->0 at 0.2']);
    expect(() => createCurriculum({ levels: [1], threshold: 0.5, fallBackBelow: 0.5 })).toThrow(
      /fallBackBelow \(0.5\) must be below the advance threshold \(0.5\)/,
    );
  });

  it('takes a configurable window and threshold, and refuses a bad start level', () => {
    const curriculum = createCurriculum({ levels: [1, 2], window: 2, threshold: 0.5 });
    curriculum.record(0.6);
    expect(curriculum.record(0.6)).toBe(true);
    expect(curriculum.finished).toBe(true);
    expect(() => createCurriculum({ levels: ['a'], startLevel: 3 })).toThrow(/startLevel/);
  });
});

describe('collapse monitor', () => {
  it('shifts the mix toward capability data below 95 % of a baseline, emits events, and restores it', () => {
    const mix = createDataMix({ rl: 0.7, replay: 0.3, capability: 0 });
    const events: CollapseEvent[] = [];
    const monitor = createCollapseMonitor({
      baselines: { mmlu: 0.8, gsm8k: 0.6 },
      mix,
      onEvent: (event) => events.push(event),
    });
    expect(monitor.check({ mmlu: 0.77, gsm8k: 0.6 })).toEqual([]);
    const regressions = monitor.check({ mmlu: 0.75, gsm8k: 0.6 });
    expect(regressions).toEqual([{ benchmark: 'mmlu', baseline: 0.8, current: 0.75 }]);
    expect(mix.allocate(100)).toEqual({ rl: 35, replay: 15, capability: 50 });
    expect(events[0]?.type).toBe('collapse_detected');
    monitor.check({ mmlu: 0.8, gsm8k: 0.6 });
    expect(mix.weights()).toEqual({ rl: 0.7, replay: 0.3, capability: 0 });
    expect(events.map((event) => event.type)).toEqual(['collapse_detected', 'collapse_recovered']);
  });

  it('allocates whole items that sum to the total', () => {
    expect(createDataMix({ a: 1, b: 1, c: 1 }).allocate(10)).toEqual({ a: 4, b: 3, c: 3 });
    expect(() => createDataMix({ a: -1 })).toThrow(/"a"/);
  });
});

describe('SFT and DPO export', () => {
  it('exports the best rollout per group as chat JSONL and best/worst preference pairs', async () => {
    const groups = [sampleScoredGroup('g1', [1, 0]), sampleScoredGroup('g2', [0.5, 0.5])];
    const sft = toSftRecords(groups, { minScore: 0.5 });
    expect(sft.map((record) => [record.group_id, record.score])).toEqual([
      ['g1', 1],
      ['g2', 0.5],
    ]);
    const pairs = toDpoPairs(groups);
    expect(pairs).toHaveLength(1);
    expect(pairs[0]).toMatchObject({
      prompt: [{ role: 'user', content: 'Say yes' }],
      chosen: [{ role: 'assistant', content: 'yes' }],
      score_chosen: 1,
      score_rejected: 0,
    });
    const directory = mkdtempSync(join(tmpdir(), 'shears-export-'));
    try {
      const path = join(directory, 'sft.jsonl');
      expect(await writeJsonl(path, sft)).toBe(2);
      const lines = readFileSync(path, 'utf8').trim().split('\n');
      expect(JSON.parse(lines[0] as string).messages[1].content).toBe('yes');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
