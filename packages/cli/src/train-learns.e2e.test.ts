// A policy that learns, through the whole chain: the toy env (shears-pack-toy) → agent loop →
// the `save` tool in a local sandbox → the managed vLLM-protocol server → the reference trainer's
// colocated policy server (trainers/, real torch on CPU) → the trajectory API → the trainer's
// GRPO step → weights updated in place → the next rollouts. The model is made here: a byte-level
// BPE vocabulary of ~440 tokens, our chat template, ~0.6 M parameters, a short SFT warm-up on
// shears' own SFT export of scripted rollouts. The test asserts that reward rises over the run
// and greedy accuracy goes up, and that the same run with the advantages' signs shuffled (the
// control) does not rise: the signal comes from the reward, not from the code merely running.
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
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The settings are those of the one-process learning test that runs in CI
// (trainers/tests/test_learns.py, shears_trainer.toy_loop.LEARNING): a two-stage warm-up (clean
// demonstrations, then demonstrations of which half save a decoy word), then 20 GRPO steps of 8
// groups of 8 at lr 5e-4. There, on three model seeds, the reward's rolling mean rose and the
// shuffled-sign control's did not (docs/train-a-model.md, "The learning test"). Through the whole
// chain it was run once (12 min here, so it stays out of CI behind SHEARS_LEARNING_TEST=1): GRPO
// rose +0.18 (greedy 0.59 -> 1.0), the control +0.02, lead 0.34. The margins are the one-process
// test's, not chosen from several whole-chain runs.
const STEPS = 20;
const GROUP = 8;
const BATCH = 8 * GROUP;
const WINDOW = 5 * BATCH; // rollouts: the first and the last 5 steps' worth
const MIN_RISE = 0.1;
const CONTROL_MAX_RISE = 0.05;
const MIN_LEAD_OVER_CONTROL = 0.2;

async function py(args: string[], timeout = 300_000): Promise<string> {
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

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

async function grpoRun(name: string, control: boolean): Promise<{ rewards: number[]; stderr: string }> {
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
    ...(control ? ['--control', 'shuffle-signs'] : []),
  ];
  writeFileSync(
    join(dir, `${name}.yaml`),
    [
      `plugins: [${JSON.stringify(pack)}]`,
      `env: { name: toy-save, group_size: ${GROUP}, seed: 1, max_token_length: 256 }`,
      `server: { provider: vllm, base_url: "http://127.0.0.1:${port}", model: toy, tokenizer: ${JSON.stringify(join(dir, 'sft'))}, tool_parser: hermes, temperature: 1.0, max_tokens: 32 }`,
      'sandbox: { provider: local }',
      `run: { concurrency: ${BATCH}, out: runs/${name}.jsonl, report: false }`,
      `api: { port: 0, database: ":memory:", batch_size: ${BATCH}, off_policy_limit: 1, poll_ms: 50 }`,
      `train: { trainer: { command: ${JSON.stringify(trainer)}, env: { OMP_NUM_THREADS: "1" } }, workers: 1 }`,
    ].join('\n'),
  );
  const run = await runShears(['train', '--config', `${name}.yaml`], { cwd: dir });
  if (run.code !== 0)
    throw new Error(`shears train (${name}) exited ${run.code}:\n${run.stderr.slice(-4000)}`);
  const metrics = readFileSync(join(output, 'metrics.jsonl'), 'utf8').trim().split('\n');
  expect(metrics).toHaveLength(STEPS);
  // The reward of every rollout, in the order groups finished: the run's JSONL holds all of them,
  // also the groups of equal scores that were not sent to the trainer (a batch's own mean would
  // leave out exactly the all-solved groups).
  const rewards = readGroups(join(dir, 'runs', `${name}.jsonl`)).flatMap((group) =>
    group.scores.filter((score): score is number => typeof score === 'number'),
  );
  return { rewards, stderr: run.stderr };
}

describe.runIf(process.env.SHEARS_LEARNING_TEST === '1')(
  'a policy that learns through the whole chain',
  () => {
    it('reward rises under GRPO and does not under the shuffled-sign control', {
      timeout: 3_600_000,
    }, async () => {
      if (!existsSync(python))
        throw new Error(
          `${python} is missing: run bash scripts/setup-python.sh (CI runs it in provision-test.sh)`,
        );
      // The model: vocabulary, chat template, random weights.
      const made = lastJson(await py(['toy-model', '--output', join(dir, 'base')]));
      expect(made.parameters).toBeGreaterThan(300_000);
      expect(made.parameters).toBeLessThan(2_000_000);

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
            `run: { groups: 192, concurrency: 32, out: runs/${name}.jsonl, report: false, all_equal_scores: keep, progress: none }`,
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
      await sftData('clean', 0, 99);
      await sftData('decoy', 0.5, 98);
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
      const model = join(dir, 'sft-decoy');
      const before = lastJson(await py(['toy-accuracy', '--model', model])).accuracy!;
      expect(before).toBeLessThanOrEqual(0.7);
      rmSync(join(dir, 'sft'), { recursive: true, force: true });
      await promisify(execFile)('cp', ['-r', model, join(dir, 'sft')]);

      const learnt = await grpoRun('grpo', false);
      const after = lastJson(await py(['toy-accuracy', '--model', join(dir, 'grpo')])).accuracy!;
      const control = await grpoRun('control', true);

      const rise = (rewards: number[]) => mean(rewards.slice(-WINDOW)) - mean(rewards.slice(0, WINDOW));
      const summary = {
        rewards: learnt.rewards.map((value) => Number(value.toFixed(3))),
        control: control.rewards.map((value) => Number(value.toFixed(3))),
        rise: rise(learnt.rewards),
        controlRise: rise(control.rewards),
        lead: mean(learnt.rewards.slice(-WINDOW)) - mean(control.rewards.slice(-WINDOW)),
        accuracy: { before, after },
      };
      console.log(`learning test: ${JSON.stringify(summary)}`);
      expect(summary.rise).toBeGreaterThan(MIN_RISE);
      expect(after).toBeGreaterThan(before);
      expect(summary.controlRise).toBeLessThan(CONTROL_MAX_RISE);
      expect(summary.lead).toBeGreaterThan(MIN_LEAD_OVER_CONTROL);
      // The final folder is a model: the trainer wrote it, with its summary.
      expect(existsSync(join(dir, 'grpo', 'model.safetensors'))).toBe(true);
      expect(existsSync(join(dir, 'grpo', 'checkpoints', 'step-10', 'model.safetensors'))).toBe(true);
    });
  },
);
