// Conformance suite for the Judge and GroupJudge contracts. Every judge implementation runs it:
// verdicts are well-formed, scores stay in [0, 1], failures carry a kind and a reason (a
// failure is never disguised as a score), and a cancelled judgement resolves as a failure.
import { describe, expect, it } from 'vitest';
import type { GroupJudgeV1, JudgeSubject, JudgeV1, Verdict } from '../contracts/judge.js';

export interface JudgeConformanceFixture {
  judge: JudgeV1;
  /** Subjects the judge should be able to score. */
  subjects: JudgeSubject[];
  /** A judge of the same kind set up to fail (e.g. pointed at a server that returns garbage). */
  failingJudge?: JudgeV1;
  cleanup?: () => Promise<void>;
}

export function expectWellFormedVerdict(verdict: Verdict): void {
  expect(['scored', 'failed']).toContain(verdict.status);
  if (verdict.status === 'scored') {
    expect(Number.isFinite(verdict.score)).toBe(true);
    expect(verdict.score).toBeGreaterThanOrEqual(0);
    expect(verdict.score).toBeLessThanOrEqual(1);
    for (const value of Object.values(verdict.dimensions ?? {})) expect(Number.isFinite(value)).toBe(true);
  } else {
    expect(typeof verdict.kind).toBe('string');
    expect(verdict.kind.length).toBeGreaterThan(0);
    expect(verdict.reason.length).toBeGreaterThan(0);
    expect((verdict as Record<string, unknown>).score).toBeUndefined();
  }
}

export function describeJudgeConformance(
  name: string,
  makeFixture: () => Promise<JudgeConformanceFixture>,
): void {
  describe(`JudgeV1 conformance: ${name}`, () => {
    it('declares specificationVersion v1 and an id', async () => {
      const fixture = await makeFixture();
      try {
        expect(fixture.judge.specificationVersion).toBe('v1');
        expect(fixture.judge.id.length).toBeGreaterThan(0);
      } finally {
        await fixture.cleanup?.();
      }
    });

    it('gives well-formed verdicts with scores in [0, 1]', async () => {
      const fixture = await makeFixture();
      try {
        for (const subject of fixture.subjects) {
          const verdict = await fixture.judge.judge(subject);
          expectWellFormedVerdict(verdict);
          expect(verdict.status).toBe('scored');
        }
      } finally {
        await fixture.cleanup?.();
      }
    });

    it('reports failure as a failed verdict, never as a score', async () => {
      const fixture = await makeFixture();
      try {
        if (!fixture.failingJudge) return;
        const verdict = await fixture.failingJudge.judge(fixture.subjects[0]!);
        expectWellFormedVerdict(verdict);
        expect(verdict.status).toBe('failed');
      } finally {
        await fixture.cleanup?.();
      }
    });

    it('resolves a cancelled judgement as a failed verdict', async () => {
      const fixture = await makeFixture();
      try {
        const controller = new AbortController();
        controller.abort();
        const verdict = await fixture.judge.judge(fixture.subjects[0]!, { signal: controller.signal });
        expectWellFormedVerdict(verdict);
        expect(verdict.status).toBe('failed');
      } finally {
        await fixture.cleanup?.();
      }
    });
  });
}

export function describeGroupJudgeConformance(
  name: string,
  makeFixture: () => Promise<{
    judge: GroupJudgeV1;
    subjects: JudgeSubject[];
    cleanup?: () => Promise<void>;
  }>,
): void {
  describe(`GroupJudgeV1 conformance: ${name}`, () => {
    it('returns one well-formed verdict per subject, in input order', async () => {
      const fixture = await makeFixture();
      try {
        expect(fixture.judge.specificationVersion).toBe('v1');
        const verdicts = await fixture.judge.judgeGroup(fixture.subjects);
        expect(verdicts).toHaveLength(fixture.subjects.length);
        for (const verdict of verdicts) expectWellFormedVerdict(verdict);
        expect(await fixture.judge.judgeGroup([])).toEqual([]);
      } finally {
        await fixture.cleanup?.();
      }
    });
  });
}
