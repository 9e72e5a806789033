// A policy that learns, through the whole chain: the toy env (shears-pack-toy) → agent loop →
// the `save` tool in a local sandbox → the managed vLLM-protocol server → the reference trainer's
// colocated policy server (trainers/, real torch on CPU) → the trajectory API → the trainer's
// GRPO step → weights updated in place → the next rollouts. The model is made here: a byte-level
// BPE vocabulary of ~440 tokens, our chat template, ~0.6 M parameters, a short SFT warm-up on
// shears' own SFT export of scripted rollouts. The test asserts that reward rises over the run
// and greedy accuracy goes up, and that the same run with the advantages' signs shuffled (the
// control, run twice with different shuffles) does not rise: the signal comes from the reward,
// not from the code merely running. It is a step of `pnpm test` (`pnpm test:learn`).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import { toSftRecords } from '@shears/grpo';
import { afterAll, describe, expect, it } from 'vitest';
import { runShears } from './test-support/run-cli.js';

const repoRoot = join(import.meta.dirname, '..', '..', '..');
const python = join(repoRoot, '.venv', 'bin', 'python');
const pack = join(repoRoot, 'examples', 'toy-pack');
const dir = mkdtempSync(join(tmpdir(), 'shears-learns-'));
// A failed run keeps its folder (models, checkpoints, every rollout, the trainers' metrics) for a
// look afterwards, and says where.
let passed = false;
afterAll(() => {
  if (passed) rmSync(dir, { recursive: true, force: true });
  else console.log(`learning test: kept ${dir}`);
});

// The settings are those of the one-process learning test (trainers/tests/test_learns.py,
// shears_trainer.toy_loop.LEARNING): a two-stage warm-up (clean demonstrations, then
// demonstrations of which half save a decoy word), then 20 GRPO steps of 8 groups of 8 at lr 5e-4,
// and the control with shuffled signs. The margins below come from the runs in
// docs/train-a-model.md, "The learning test".
const STEPS = 20;
const GROUP = 8;
const BATCH = 8 * GROUP;
// Two measures of the policy (docs/train-a-model.md, "The learning test", has the runs behind the
// margins). In the chain (printed, not asserted: too noisy): reward by the policy version that sampled each rollout (version v: the
// weights after v optimiser steps); the start is version 0, the warm-up itself, pooled over the
// arms (the same model); the end is the mean over the last five versions that sampled rollouts of
// each one's mean (the control's last versions may be missing: a step whose advantages are all
// zero is skipped and the version stays). Outside it, on the final models: greedy accuracy on 64
// fresh words, and the mean reward of 8 sampled answers (temperature 1) to each of them, 512 in
// all, about ten times the rollouts of one version.
const LATE_VERSIONS = 5;
/**
 * GRPO's final model: sampled reward above the warm-up's (seen: +0.11 … +0.27 on seed 0, runs 9–29
 * but 22; 0.1 until run 27's +0.11, whose greedy accuracy rose +0.31: this measure's low tail).
 */
const MIN_RISE = 0.05;
/** GRPO's greedy accuracy above the warm-up's (seen: +0.25 … +0.39, except run 6's collapse). */
const MIN_GREEDY_RISE = 0.15;
/**
 * The controls' final models (the mean of two): sampled reward above the warm-up's, at most (one
 * control, seed 0, runs 9–19: −0.33 … +0.09).
 */
const CONTROL_MAX_RISE = 0.1;
/** GRPO's final model's sampled reward above the controls' mean (one control, runs 9–19: 0.16 … 0.56). */
const MIN_LEAD_OVER_CONTROL = 0.1;
// Rollouts may run this many batches ahead of the trainer (api.off_policy_limit).
const OFF_POLICY_LIMIT = 1;
// The toy model's weights seed (0 in CI); SHEARS_LEARNING_SEED reruns the test from another start,
// as the margins were checked.
const MODEL_SEED = process.env.SHEARS_LEARNING_SEED ?? '0';

async function py(args: string[], timeout = 900_000): Promise<string> {
  const { stdout } = await promisify(execFile)(python, ['-m', 'shears_trainer', ...args], {
    cwd: dir,
    timeout,
    env: { ...process.env, OMP_NUM_THREADS: '2' },
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`shears_trainer ${args[0]} failed: ${error.stderr || error.stdout || error.message}`);
  });
  return stdout;
}

function lastJson(text: string): Record<string, number> {
  return JSON.parse(text.trim().split('\n').at(-1) ?? '{}');
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  await new Promise((done) => server.close(done));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

function readGroups(path: string): ScoredGroupRecord[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

const countBy = (values: (number | null)[]) =>
  values.reduce<Record<string, number>>((counts, value) => {
    counts[String(value)] = (counts[String(value)] ?? 0) + 1;
    return counts;
  }, {});
const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

interface ArmResult {
  /** Every finished rollout's reward and the policy version that sampled it (its oldest turn's). */
  samples: { version: number; reward: number }[];
  /** Every trained record's off-policy lag (the trainer's policy version at consumption minus the record's). */
  lags: (number | null)[];
  stderr: string;
}

async function grpoRun(name: string, control: boolean, seed = 0): Promise<ArmResult> {
  // The control sends the trainer its groups of equal scores too (zero advantages): a control
  // whose policy drifts to reward 0 (every group equal) would otherwise form no batch and starve
  // its trainer, which stops after --batch-timeout (it did, in a loaded CI run). The trainer skips a
  // step whose advantages are all zero, so such a control stays where it is. While its groups
  // vary, as at the start, it trains on the same groups GRPO would. The GRPO arm drops them, as
  // Atropos does.
  const port = await freePort();
  const output = join(dir, name);
  const trainer = [
    python,
    '-m',
    'shears_trainer',
    'grpo',
    '--model',
    join(dir, 'sft'),
    '--output',
    output,
    '--steps',
    String(STEPS),
    '--batch-size',
    String(BATCH),
    '--micro-batch',
    '32',
    '--lr',
    '5e-4',
    '--serve-port',
    String(port),
    '--threads',
    '1',
    '--checkpoint-every',
    '10',
    '--seed',
    String(seed),
    ...(control ? ['--control', 'shuffle-signs'] : []),
  ];
  writeFileSync(
    join(dir, `${name}.yaml`),
    [
      `plugins: [${JSON.stringify(pack)}]`,
      `env: { name: toy-save, group_size: ${GROUP}, seed: 1, max_token_length: 256 }`,
      `server: { provider: vllm, base_url: "http://127.0.0.1:${port}", model: toy, tokenizer: ${JSON.stringify(join(dir, 'sft'))}, tool_parser: hermes, temperature: 1.0, max_tokens: 32 }`,
      'sandbox: { provider: local }',
      `run: { concurrency: ${BATCH}, out: runs/${name}.jsonl, report: false, all_equal_scores: ${control ? 'keep' : 'drop'} }`,
      `api: { port: 0, database: ":memory:", batch_size: ${BATCH}, off_policy_limit: ${OFF_POLICY_LIMIT}, poll_ms: 50 }`,
      `train: { trainer: { command: ${JSON.stringify(trainer)}, env: { OMP_NUM_THREADS: "1" } }, workers: 1 }`,
    ].join('\n'),
  );
  const run = await runShears(['train', '--config', `${name}.yaml`], { cwd: dir });
  if (run.code !== 0)
    throw new Error(`shears train (${name}) exited ${run.code}:\n${run.stderr.slice(-4000)}`);
  const metrics = readFileSync(join(output, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { policy_lags: (number | null)[]; sequences: number });
  expect(metrics).toHaveLength(STEPS);
  for (const step of metrics) expect(step.policy_lags).toHaveLength(step.sequences);
  // The reward of every rollout with the policy version that sampled it: the run's JSONL holds all
  // of them, also the groups of equal scores that were not sent to the trainer (a batch's own mean
  // would leave out exactly the all-solved groups). By version, not in the order rollouts
  // finished: the more the policy solves, the more groups of equal scores are dropped and the
  // more rollouts a batch takes, so a window of N rollouts covers fewer and fewer steps.
  const samples = readGroups(join(dir, 'runs', `${name}.jsonl`)).flatMap((group) =>
    group.rollouts.flatMap((rollout, index) => {
      const reward = group.scores[index];
      const versions = (rollout.tokens?.sequences ?? []).flatMap((sequence) => sequence.policyVersions ?? []);
      if (typeof reward !== 'number') return [];
      // Every turn the colocated server sampled carries its version.
      expect(versions.length).toBeGreaterThan(0);
      return [{ version: Math.min(...versions), reward }];
    }),
  );
  return { samples, lags: metrics.flatMap((step) => step.policy_lags), stderr: run.stderr };
}

describe('a policy that learns through the whole chain', () => {
  it('reward rises under GRPO and does not under the shuffled-sign control', {
    timeout: 3_600_000,
  }, async () => {
    // Seconds from the test's start to the end of each phase, printed with the result (not asserted).
    const started = Date.now();
    const seconds: Record<string, number> = {};
    const mark = (phase: string) => {
      seconds[phase] = Math.round((Date.now() - started) / 1000);
    };
    if (!existsSync(python))
      throw new Error(
        `${python} is missing: run bash scripts/setup-python.sh (CI runs it in provision-test.sh)`,
      );
    // SFT data: rollouts of the scripted policy through shears itself, then shears' SFT export:
    // once always right, once saving the decoy word in half of the calls (`demo_decoy_rate`).
    async function sftData(name: string, decoyRate: number, seed: number): Promise<void> {
      writeFileSync(
        join(dir, `${name}.yaml`),
        [
          `plugins: [${JSON.stringify(pack)}]`,
          `env: { name: toy-save, group_size: 1, seed: ${seed}, settings: { demo_decoy_rate: ${decoyRate} } }`,
          'server: { provider: scripted }',
          'sandbox: { provider: local }',
          // One at a time: the demonstrator draws its decoys from one seeded stream in call order
          // and the JSONL is written in finish order, so only then is the warm-up's data (and so
          // its model) the same from run to run.
          `run: { groups: 192, concurrency: 1, out: runs/${name}.jsonl, report: false, all_equal_scores: keep, progress: none }`,
        ].join('\n'),
      );
      const run = await runShears(['process', '--config', `${name}.yaml`], { cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      // minScore 0.1: the decoy's calls score 0.1 (a call, the wrong word) and are kept.
      const records = toSftRecords(readGroups(join(dir, `runs/${name}.jsonl`)), {
        minScore: 0.1,
        select: 'all',
      });
      expect(records.length).toBe(192);
      writeFileSync(join(dir, `${name}.jsonl`), records.map((record) => JSON.stringify(record)).join('\n'));
    }
    // The model (vocabulary, chat template, random weights) and both data sets are independent:
    // made at once.
    const [made] = await Promise.all([
      py(['toy-model', '--output', join(dir, 'base'), '--seed', MODEL_SEED]).then(lastJson),
      sftData('clean', 0, 99),
      sftData('decoy', 0.5, 98),
    ]);
    expect(made.parameters).toBeGreaterThan(300_000);
    expect(made.parameters).toBeLessThan(2_000_000);
    mark('model and data');
    writeFileSync(
      join(dir, 'tools.json'),
      JSON.stringify([
        {
          type: 'function',
          function: { name: 'save', parameters: { type: 'object', properties: { word: {} } } },
        },
      ]),
    );
    // The warm-up of the one-process test: 200 steps on the clean data (the model learns to
    // copy), then 100 at a lower lr on the decoy data (it now often prefers the decoy).
    const sft = (data: string, from: string, to: string, steps: string, lr: string, seed: string) =>
      py([
        'sft',
        '--model',
        from,
        '--data',
        data,
        '--tools',
        'tools.json',
        '--output',
        to,
        '--steps',
        steps,
        '--batch-size',
        '32',
        '--lr',
        lr,
        '--seed',
        seed,
        '--threads',
        '1',
      ]);
    await sft('clean.jsonl', join(dir, 'base'), join(dir, 'sft-clean'), '200', '3e-3', '0');
    await sft('decoy.jsonl', join(dir, 'sft-clean'), join(dir, 'sft-decoy'), '100', '1e-3', '1');
    mark('sft');
    const model = join(dir, 'sft-decoy');
    rmSync(join(dir, 'sft'), { recursive: true, force: true });
    await promisify(execFile)('cp', ['-r', model, join(dir, 'sft')]);

    // The arms run at once, from the same warm-up: three `shears train` runs, each with its own
    // API, env worker, trainer and policy server (one torch thread each): GRPO and two controls
    // (shuffled signs, trainer seeds 0 and 1), whose measures are averaged. One control is a
    // random walk that now and then wanders up by ~0.1 (run 19: +0.09 against a margin of 0.1);
    // two independent ones halve the variance of their mean. The warm-up's accuracy is measured
    // beside them, and each trained model's as soon as its arm ends.
    const arm = (name: string, control: boolean, seed = 0) =>
      grpoRun(name, control, seed).then(
        async (result) =>
          [
            result,
            lastJson(await py(['toy-accuracy', '--model', join(dir, name), '--samples', '8'])),
          ] as const,
      );
    const [before, [learnt, after], ...controls] = await Promise.all([
      py(['toy-accuracy', '--model', model, '--samples', '8']).then(lastJson),
      arm('grpo', false),
      arm('control', true, 0),
      arm('control-2', true, 1),
    ]);
    mark('arms');
    const controlAfter = {
      reward: mean(controls.map(([, measured]) => measured.reward ?? Number.NaN)),
      accuracy: mean(controls.map(([, measured]) => measured.accuracy ?? Number.NaN)),
    };
    // The warm-up leaves room to learn: it prefers the decoy often enough (0.25–0.69 greedy in the
    // runs the margins come from; the order of the SFT data varies from run to run).
    expect(before.accuracy).toBeLessThanOrEqual(0.8);

    const rewardsOf = (arm: ArmResult, keep: (version: number) => boolean) =>
      arm.samples.filter((sample) => keep(sample.version)).map((sample) => sample.reward);
    const start = mean(
      [learnt, ...controls.map(([result]) => result)].flatMap((result) =>
        rewardsOf(result, (version) => version === 0),
      ),
    );
    // Each late version's mean, then their mean: a version's rollout count grows with its groups
    // of equal scores (dropped, so more are rolled out), which must not weigh its policy more.
    const end = (arm: ArmResult) => {
      const versions = [...new Set(arm.samples.map((sample) => sample.version))]
        .sort((a, b) => a - b)
        .slice(-LATE_VERSIONS);
      return mean(versions.map((version) => mean(rewardsOf(arm, (seen) => seen === version))));
    };
    const byVersion = (arm: ArmResult) => {
      const rows: Record<number, { n: number; mean: number }> = {};
      for (const { version, reward } of arm.samples) {
        const row = (rows[version] ??= { n: 0, mean: 0 });
        row.n += 1;
        row.mean += (reward - row.mean) / row.n;
      }
      return Object.fromEntries(
        Object.entries(rows).map(([version, row]) => [version, [row.n, Number(row.mean.toFixed(3))]]),
      );
    };
    const summary = {
      start,
      end: end(learnt),
      controlEnd: controls.map(([result]) => end(result)),
      rise: end(learnt) - start,
      controlRise: controls.map(([result]) => end(result) - start),
      lead: (after.reward ?? 0) - (controlAfter.reward ?? 0),
      modelSeed: MODEL_SEED,
      seconds,
      accuracy: {
        before: before.accuracy,
        after: after.accuracy,
        control: controlAfter.accuracy,
        controls: controls.map(([, measured]) => measured.accuracy),
      },
      sampledReward: {
        before: before.reward,
        after: after.reward,
        control: controlAfter.reward,
        controls: controls.map(([, measured]) => measured.reward),
      },
      lags: countBy(learnt.lags),
      controlLags: controls.map(([result]) => countBy(result.lags)),
      // Per policy version: [rollouts, mean reward].
      rewardsByVersion: byVersion(learnt),
      controlRewardsByVersion: controls.map(([result]) => byVersion(result)),
    };
    console.log(`learning test: ${JSON.stringify(summary)}`);
    // GRPO learns: its final model earns more than the warm-up, sampled and greedy. (The chain's
    // own measure, by version, is printed but not asserted: with 8–90 rollouts per version it is
    // too noisy — run 9 read −0.01 there while its final model had risen by +0.20.)
    expect(after.reward! - before.reward!).toBeGreaterThan(MIN_RISE);
    expect(after.accuracy! - before.accuracy!).toBeGreaterThan(MIN_GREEDY_RISE);
    // From the reward, not from the code merely running: the control's final model does not earn
    // more than the warm-up, and earns less than GRPO's.
    expect(controlAfter.reward! - before.reward!).toBeLessThan(CONTROL_MAX_RISE);
    expect(after.accuracy).toBeGreaterThan(controlAfter.accuracy!);
    expect(summary.lead).toBeGreaterThan(MIN_LEAD_OVER_CONTROL);
    // Off-policy lag, per trained record: every record carries the version that sampled it (the
    // colocated policy server sends it), and rollouts ran ahead of the trainer (some records were
    // sampled by weights one or more optimiser steps older than those that trained on them). The
    // pacing aims at off_policy_limit + 1 (a group starts only while fewer than off_policy_limit
    // batches are queued, formed or in flight, and the trainer may be mid-step); the rest of a
    // group split at a batch boundary goes into the next batch, one step later. So no record is
    // more than off_policy_limit + 2 steps old. (Before the API took rests first, a rest of 8
    // among groups of 16 waited, and records reached lag 4 in most runs.)
    expect(Math.max(...(learnt.lags as number[]))).toBeGreaterThanOrEqual(1);
    for (const result of [learnt, ...controls.map(([result]) => result)]) {
      expect(result.lags.every((lag) => typeof lag === 'number' && lag >= 0)).toBe(true);
      expect(Math.max(...(result.lags as number[]))).toBeLessThanOrEqual(OFF_POLICY_LIMIT + 2);
    }
    // The final folder is a model: the trainer wrote it, with its summary.
    expect(existsSync(join(dir, 'grpo', 'model.safetensors'))).toBe(true);
    expect(existsSync(join(dir, 'grpo', 'checkpoints', 'step-10', 'model.safetensors'))).toBe(true);
    passed = true;
  });
});
