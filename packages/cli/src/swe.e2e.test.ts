// `shears process --env swe --tasks bundled` end to end in Docker: the SWE env's images are built
// locally, every rollout runs in its own container with the demo policy behind the scripted
// server, and the written groups carry varied rewards and the agents' diffs. Runs against the
// test run's private Docker daemon; under CI=true a missing daemon is a failure, not a skip.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scoredGroupRecordSchema } from '@shears/core';
import { afterAll, describe, expect, it } from 'vitest';
import { runShears } from './test-support/run-cli.js';

const host = process.env.SHEARS_TEST_DOCKER_HOST;
if (!host && (process.env.CI === 'true' || process.env.CI === '1')) {
  throw new Error('CI=true but SHEARS_TEST_DOCKER_HOST is not set: the test Docker daemon did not start');
}
if (!host)
  console.warn(
    '\n⚠️  SKIPPING shears process --env swe: no test Docker daemon (SHEARS_TEST_DOCKER_HOST unset)\n',
  );

const dir = mkdtempSync(join(tmpdir(), 'shears-cli-swe-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

(host ? describe : describe.skip)('shears prepare and process --env swe', () => {
  it('builds the image of every bundled task with progress, and reuses them the second time', async () => {
    writeFileSync(
      join(dir, 'shears.json'),
      JSON.stringify({ env: { settings: { docker: host } }, sandbox: { settings: { hosts: [host] } } }),
    );
    const args = ['prepare', '--config', 'shears.json', '--env', 'swe', '--tasks', 'bundled'];
    const first = await runShears(args, { cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/\[1\/12\] preparing /);
    expect(first.stderr).toMatch(/\[12\/12\] preparing /);
    const lines = first.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^prepared 12 task\(s\) of env swe in [\d.]+ s$/);
    // One line per task: its id and the image tag built for it.
    const images = lines.slice(0, -1).map((line) => line.trim().split(/\s+/));
    expect(images).toHaveLength(12);
    for (const [id, image] of images) expect(image, id).toMatch(/^shears-swe-/);
    const second = await runShears(args, { cwd: dir });
    expect(second.code).toBe(0);
    expect(second.stdout.trim().split('\n').slice(0, -1)).toEqual(lines.slice(0, -1));
    expect(second.stderr).toMatch(/up to date/);
  }, 900_000);

  it('runs the bundled SWE tasks in Docker and writes scored groups', async () => {
    writeFileSync(
      join(dir, 'shears.json'),
      JSON.stringify({ env: { settings: { docker: host } }, sandbox: { settings: { hosts: [host] } } }),
    );
    const run = await runShears(
      [
        'process',
        '--config',
        'shears.json',
        '--env',
        'swe',
        '--tasks',
        'bundled',
        '--groups',
        '2',
        '--group-size',
        '4',
        '--out',
        'swe.jsonl',
      ],
      { cwd: dir },
    );
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    const groups = readFileSync(join(dir, 'swe.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
    expect(groups).toHaveLength(2);
    for (const group of groups) {
      expect(group.rollouts.map((rollout) => rollout.outcome)).toEqual([
        'scored',
        'scored',
        'scored',
        'scored',
      ]);
      // The demo policy fixes the bug in half the rollouts and fails (or games the tests) in the rest.
      expect([...group.scores].sort()).toEqual([0, 0, 1, 1]);
      for (const rollout of group.rollouts)
        expect(String(rollout.rewardDetails?.diff)).toContain('diff --git');
    }
    expect(run.stdout).toContain('wrote 2 groups to swe.jsonl');
  }, 900_000);
});
