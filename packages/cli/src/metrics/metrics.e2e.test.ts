// The run metrics stream written by real runs: `shears process` and `shears evaluate` on the demo
// env (scripted policy over HTTP, local sandboxes, real terminal tool calls), read back through
// the published schema and checked against the scored groups written beside it.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';
import { type MetricsRow, metricsRowSchema } from './metrics-schema.js';

vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-metrics-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function readLines<T>(path: string, parse: (value: unknown) => T): T[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => parse(JSON.parse(line)));
}
const readGroups = (path: string): ScoredGroupRecord[] =>
  readLines(path, (value) => scoredGroupRecordSchema.parse(value));
const readMetrics = (path: string): MetricsRow[] => readLines(path, (value) => metricsRowSchema.parse(value));

describe('run metrics from shears process', () => {
  it('writes a group row per group that agrees with the JSONL, and a final window summing the run', async () => {
    const run = await runShears(
      ['process', '--env', 'demo', '--groups', '6', '--out', 'runs/m.jsonl', '--no-report', '--seed', '3'],
      { cwd: dir },
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('metrics in runs/m.metrics.jsonl');
    const groups = readGroups(join(dir, 'runs/m.jsonl'));
    const rows = readMetrics(join(dir, 'runs/m.metrics.jsonl'));
    const groupRows = rows.filter((row) => row.kind === 'shears.metrics.group');
    expect(groupRows).toHaveLength(6);
    expect(groupRows.every((row) => row.command === 'process')).toBe(true);
    for (const group of groups) {
      const row = groupRows.find((entry) => entry.groupId === group.groupId)!;
      expect(row.taskId).toBe(group.taskId);
      // Same numbers as the group's own statistics, computed independently.
      expect(row.reward.count).toBe(group.stats.counted);
      expect(row.reward.mean).toBeCloseTo(group.stats.mean!);
      expect(row.reward.min).toBe(group.stats.min);
      expect(row.reward.max).toBe(group.stats.max);
      const calls = group.rollouts.flatMap((rollout) => rollout.steps.flatMap((step) => step.toolCalls));
      expect(row.toolCalls).toBe(calls.length);
      expect(row.tools.terminal?.calls ?? 0).toBe(calls.filter((call) => call.name === 'terminal').length);
      expect(row.zeroSignal).toBe(new Set(group.scores.filter((score) => score !== null)).size <= 1);
      expect(row.dropped).toBe(group.dropped?.kind ?? null);
      // The loop measured where the time went: every rollout has timings, model time is real.
      expect(row.latencyMs.missingTimings).toBe(0);
      expect(row.latencyMs.model).toBeGreaterThan(0);
      expect(row.latencyMs.sandboxAcquire).toBeGreaterThan(0);
      expect(row.latencyMs.reward).toBeGreaterThan(0);
      for (const rollout of group.rollouts) expect(rollout.timings?.sandboxAcquireMs).toBeGreaterThan(0);
    }
    // The demo's scripted policy solves some attempts and fails others.
    const rewards = groups.flatMap((group) =>
      group.scores.filter((score): score is number => score !== null),
    );
    const windows = rows.filter((row) => row.kind === 'shears.metrics.window');
    expect(windows.at(-1)!.final).toBe(true);
    expect(windows.reduce((sum, window) => sum + window.groups, 0)).toBe(6);
    const last = windows.at(-1)!;
    if (windows.length === 1) {
      expect(last.reward.count).toBe(rewards.length);
      expect(last.reward.mean).toBeCloseTo(rewards.reduce((sum, reward) => sum + reward, 0) / rewards.length);
      expect(Object.keys(last.perTask).sort()).toEqual(
        [...new Set(groups.map((group) => group.taskId))].sort(),
      );
    }
    expect(rows.some((row) => row.kind === 'shears.metrics.step')).toBe(false);
  });

  it('--no-metrics writes none; an existing metrics file is never overwritten; --resume appends', async () => {
    const off = await runShears(
      ['process', '--env', 'demo', '--groups', '2', '--out', 'runs/off.jsonl', '--no-report', '--no-metrics'],
      { cwd: dir },
    );
    expect(off.code).toBe(0);
    expect(existsSync(join(dir, 'runs/off.jsonl'))).toBe(true);
    expect(existsSync(join(dir, 'runs/off.metrics.jsonl'))).toBe(false);

    writeFileSync(join(dir, 'runs/keep.metrics.jsonl'), 'precious\n');
    const refused = await runShears(
      ['process', '--env', 'demo', '--groups', '2', '--out', 'runs/keep.jsonl', '--no-report'],
      { cwd: dir },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('runs/keep.metrics.jsonl');
    expect(readFileSync(join(dir, 'runs/keep.metrics.jsonl'), 'utf8')).toBe('precious\n');

    const first = await runShears(
      ['process', '--env', 'demo', '--groups', '2', '--out', 'runs/res.jsonl', '--no-report'],
      { cwd: dir },
    );
    expect(first.code).toBe(0);
    const before = readMetrics(join(dir, 'runs/res.metrics.jsonl'));
    const resumed = await runShears(
      ['process', '--env', 'demo', '--groups', '3', '--out', 'runs/res.jsonl', '--no-report', '--resume'],
      { cwd: dir },
    );
    expect(resumed.code).toBe(0);
    const after = readMetrics(join(dir, 'runs/res.metrics.jsonl'));
    expect(after.slice(0, before.length)).toEqual(before);
    // The resumed run ran the one missing group.
    expect(after.slice(before.length).filter((row) => row.kind === 'shears.metrics.group')).toHaveLength(1);
  });
});

describe('run.prometheus outside serve and train', () => {
  it('is refused by process, naming the setting, instead of being ignored', async () => {
    const run = await runShears(
      [
        'process',
        '--env',
        'demo',
        '--groups',
        '1',
        '--out',
        'runs/prom.jsonl',
        '--run.prometheus',
        '{port: 0}',
      ],
      { cwd: dir },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/run\.prometheus: only `shears serve` and `shears train` expose \/metrics/);
    expect(existsSync(join(dir, 'runs/prom.jsonl'))).toBe(false);
  });
});

describe('run metrics from shears evaluate', () => {
  it('writes one group row per task and a final window, beside the summary', async () => {
    const run = await runShears(
      [
        'evaluate',
        '--env',
        'demo',
        '--k',
        '2',
        '--max-items',
        '3',
        '--evaluate.out',
        'runs/e.jsonl',
        '--no-report',
      ],
      { cwd: dir },
    );
    expect(run.code).toBe(0);
    const rows = readMetrics(join(dir, 'runs/e.metrics.jsonl'));
    const groupRows = rows.filter((row) => row.kind === 'shears.metrics.group');
    expect(groupRows).toHaveLength(3);
    expect(groupRows.every((row) => row.command === 'evaluate' && row.rollouts === 2)).toBe(true);
    expect(rows.at(-1)).toMatchObject({ kind: 'shears.metrics.window', final: true });
  });
});
