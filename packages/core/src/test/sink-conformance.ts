// Conformance suite for the TrajectorySink contract: every sink (JSONL, trajectory API, replay
// buffer) runs it. Records written come back intact and in order, concurrent writes are not
// lost, close is idempotent, and a closed or cancelled sink refuses writes; a sink with `open`
// takes its writes after it, a write's receipt (when it gives one) says whether it took the group,
// and a sink that resumes keeps exactly the groups a resumed run keeps, before the new ones.
import { describe, expect, it } from 'vitest';
import type { TrajectorySinkV1 } from '../contracts/sink.js';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '../schemas/group-record.js';

export interface SinkConformanceFixture {
  sink: TrajectorySinkV1;
  /** Reads back what the sink stored (after close); omit for write-only sinks. */
  read?: () => Promise<ScoredGroupRecord[]>;
  /** The sink stores a run's groups and honours `open({ resume })` (a file does; an API forwards). */
  resumes?: boolean;
  /**
   * For `resumes`: a fresh sink over the same storage as `sink`, for the resumed run (read with
   * the same `read`).
   */
  reopen?: () => Promise<TrajectorySinkV1>;
  cleanup?: () => Promise<void>;
}

export interface SinkConformanceOptions {
  name: string;
  /** A fresh, empty sink per test. */
  create: () => Promise<SinkConformanceFixture>;
}

/** A small valid ScoredGroupRecord for sink tests. */
export function sampleScoredGroup(groupId: string, scores: number[] = [1, 0]): ScoredGroupRecord {
  const mean = scores.reduce((sum, score) => sum + score, 0) / Math.max(1, scores.length);
  return scoredGroupRecordSchema.parse({
    kind: 'shears.group',
    version: 1,
    groupId,
    envId: 'conformance',
    taskId: `task-${groupId}`,
    item: { id: `task-${groupId}`, prompt: 'Say yes', extra: { nested: [1, 2] } },
    createdAt: new Date(0).toISOString(),
    rollouts: scores.map((score, index) => ({
      rolloutId: `${groupId}-r${index}`,
      taskId: `task-${groupId}`,
      taskDescription: 'Say yes',
      modelId: 'scripted',
      outcome: 'scored',
      outcomeReason: null,
      attempts: 1,
      messages: [
        { role: 'user', content: 'Say yes' },
        { role: 'assistant', content: score > 0 ? 'yes' : 'no — ünïcödé' },
      ],
      steps: [
        { stepId: 1, thought: null, content: 'yes', toolCalls: [], timestamp: 0, chatMs: 1, toolMs: 0 },
      ],
      finalResponse: score > 0 ? 'yes' : 'no',
      finishedNaturally: true,
      turnsUsed: 1,
      reward: score,
      advantage: score - mean,
      toolErrors: [],
      policyRefusals: 0,
      usage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 },
      tokenCount: 4,
      wallTimeSeconds: 0.01,
    })),
    scores,
    advantages: scores.map((score) => score - mean),
    advantageMethod: 'grpo',
    stats: {
      counted: scores.length,
      excluded: 0,
      mean,
      std: 0.5,
      min: Math.min(...scores),
      max: Math.max(...scores),
    },
    dropped: null,
    wallTimeSeconds: 0.02,
  });
}

export function describeSinkConformance(options: SinkConformanceOptions): void {
  const withFixture = async (body: (fixture: SinkConformanceFixture) => Promise<void>) => {
    const fixture = await options.create();
    try {
      await body(fixture);
    } finally {
      await fixture.sink.close().catch(() => {});
      await fixture.cleanup?.();
    }
  };

  describe(`TrajectorySinkV1 conformance: ${options.name}`, () => {
    it('declares specificationVersion v1 and an id', () =>
      withFixture(async ({ sink }) => {
        expect(sink.specificationVersion).toBe('v1');
        expect(sink.id.length).toBeGreaterThan(0);
      }));

    it('stores written groups intact and in order', () =>
      withFixture(async ({ sink, read }) => {
        const groups = [sampleScoredGroup('a'), sampleScoredGroup('b', [0.25, 0.75, 1])];
        for (const group of groups) await sink.write(group);
        await sink.close();
        if (read) expect(await read()).toEqual(groups);
      }));

    it('loses nothing under concurrent writes', () =>
      withFixture(async ({ sink, read }) => {
        const groups = Array.from({ length: 20 }, (_, index) => sampleScoredGroup(`c${index}`));
        await Promise.all(groups.map((group) => sink.write(group)));
        await sink.close();
        if (read)
          expect((await read()).map((group) => group.groupId).sort()).toEqual(
            groups.map((group) => group.groupId).sort(),
          );
      }));

    it('closes twice harmlessly and refuses writes after close', () =>
      withFixture(async ({ sink }) => {
        await sink.write(sampleScoredGroup('d'));
        await sink.close();
        await sink.close();
        await expect(sink.write(sampleScoredGroup('e'))).rejects.toThrow();
      }));

    it('takes writes after open, and a receipt, when there is one, says whether it took the group', () =>
      withFixture(async ({ sink, read }) => {
        await sink.open?.({});
        const receipt = await sink.write(sampleScoredGroup('o1'));
        if (receipt !== undefined) {
          expect(typeof receipt.accepted).toBe('boolean');
          if (!receipt.accepted) expect(receipt.reason, 'a group left out says why').toBeTruthy();
        }
        await sink.flush?.();
        await sink.close({ incomplete: true });
        if (read && receipt?.accepted !== false)
          expect((await read()).map((group) => group.groupId)).toEqual(['o1']);
      }));

    it('resumed, keeps exactly the kept groups, then the new ones', () =>
      withFixture(async ({ sink, read, resumes, reopen }) => {
        if (!resumes || !read || !reopen || !sink.open) return;
        await sink.open({});
        for (const id of ['r1', 'r2', 'r3']) await sink.write(sampleScoredGroup(id));
        await sink.close({ incomplete: true });
        const [first, , third] = await read();
        const resumed = await reopen();
        try {
          await resumed.open!({ resume: { kept: [first!, third!] } });
          await resumed.write(sampleScoredGroup('r4'));
        } finally {
          await resumed.close();
        }
        expect((await read()).map((group) => group.groupId)).toEqual(['r1', 'r3', 'r4']);
      }));

    it('refuses a write whose signal is already aborted', () =>
      withFixture(async ({ sink }) => {
        const controller = new AbortController();
        controller.abort();
        await expect(sink.write(sampleScoredGroup('f'), { signal: controller.signal })).rejects.toThrow();
      }));
  });
}
