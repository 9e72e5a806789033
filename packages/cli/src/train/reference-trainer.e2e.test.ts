// `shears train --config train.yaml --output ./my-ft` with the reference trainer (train.reference):
// one command starts the trajectory API, the env worker and `python -m shears_trainer grpo` with its
// colocated policy server (real torch on CPU, the toy model made here), and ends with a model folder
// that transformers loads and a summary. Also: the output folder is refused when it is missing, not
// empty or a file, and records carry the policy version they were sampled from.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { scoredGroupRecordSchema } from '@shears/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsRowSchema } from '../metrics/metrics-schema.js';
import { runShears } from '../test-support/run-cli.js';

const repoRoot = join(import.meta.dirname, '..', '..', '..', '..');
const python = join(repoRoot, '.venv', 'bin', 'python');
const pack = join(repoRoot, 'examples', 'toy-pack');
const dir = mkdtempSync(join(tmpdir(), 'shears-train-output-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function py(args: string[], timeout = 300_000): Promise<string> {
  const { stdout } = await promisify(execFile)(python, args, {
    cwd: dir,
    timeout,
    env: { ...process.env, OMP_NUM_THREADS: '1' },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`python ${args.join(' ')} failed: ${error.stderr || error.stdout || error.message}`);
  });
  return stdout;
}

function config(name: string, train: string): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    [
      `plugins: [${JSON.stringify(pack)}]`,
      'env: { name: toy-save, group_size: 4, seed: 1, max_token_length: 256 }',
      'server: { tool_parser: hermes, temperature: 1.0, max_tokens: 12 }',
      'sandbox: { provider: local }',
      // A random model rarely earns a reward: keep equal-score groups so the trainer gets batches.
      `run: { concurrency: 8, out: runs/${name}.jsonl, report: false, all_equal_scores: keep, progress: none }`,
      'api: { port: 0, database: ":memory:", batch_size: 8, off_policy_limit: 1, poll_ms: 50 }',
      train,
    ].join('\n'),
  );
  return path;
}

const reference = `train: { reference: { model: base, python: ${JSON.stringify(python)}, steps: 2, micro_batch: 8, threads: 1, device: cpu, checkpoint_every: 1 }, workers: 1 }`;

describe('shears train --output with the reference trainer', () => {
  beforeAll(async () => {
    if (!existsSync(python))
      throw new Error(
        `${python} is missing: run bash scripts/setup-python.sh (CI runs it in provision-test.sh)`,
      );
    await py(['-m', 'shears_trainer', 'toy-model', '--output', join(dir, 'base')]);
  }, 300_000);

  it('trains, ends with a model folder transformers loads and a summary; records carry their policy version', {
    timeout: 600_000,
  }, async () => {
    config('run', reference);
    mkdirSync(join(dir, 'my-ft')); // an empty folder is accepted
    const run = await runShears(['train', '--config', 'run.yaml', '--output', 'my-ft'], { cwd: dir });
    expect(run.code, run.stderr.slice(-4000)).toBe(0);
    // The summary shears ends with: steps, reward at start and end, where everything is.
    expect(run.stdout).toMatch(/train: 2 steps; reward \d\.\d{3} at the start → \d\.\d{3} at the end/);
    expect(run.stdout).toContain('train: model in my-ft');
    expect(run.stdout).toMatch(/metrics in my-ft\/metrics\.jsonl; checkpoints my-ft\/checkpoints\/step-1/);
    // The trainer's policy server was started and served the rollouts.
    expect(run.stderr).toMatch(/\[trainer\] policy server listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(run.stderr).toContain('[trainer] training on cpu');

    const output = join(dir, 'my-ft');
    for (const file of [
      'model.safetensors',
      'config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'train-summary.json',
    ])
      expect(existsSync(join(output, file)), file).toBe(true);
    const loaded = JSON.parse(
      (
        await py([
          '-c',
          [
            'import json, sys',
            'from transformers import AutoModelForCausalLM, AutoTokenizer',
            `model = AutoModelForCausalLM.from_pretrained(${JSON.stringify(output)})`,
            `tokenizer = AutoTokenizer.from_pretrained(${JSON.stringify(output)})`,
            'text = tokenizer.apply_chat_template([{"role": "user", "content": "Save the word kemo."}], tokenize=False, add_generation_prompt=True)',
            'print(json.dumps({"parameters": sum(p.numel() for p in model.parameters()), "template": text}))',
          ].join('\n'),
        ])
      )
        .trim()
        .split('\n')
        .at(-1)!,
    ) as { parameters: number; template: string };
    expect(loaded.parameters).toBeGreaterThan(100_000);
    expect(loaded.template).toContain('Save the word kemo.');

    // Every rollout's tokens carry the version of the weights that sampled them, and the trainer
    // logged each consumed record's lag (its version at consumption minus the record's).
    const records = readFileSync(join(dir, 'runs', 'run.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
    const sequences = records.flatMap((record) =>
      record.rollouts.flatMap((rollout) => rollout.tokens?.sequences ?? []),
    );
    expect(sequences.length).toBeGreaterThan(0);
    for (const sequence of sequences) {
      expect(sequence.policyVersions?.length).toBeGreaterThan(0);
      for (const version of sequence.policyVersions ?? []) expect(version).toBeGreaterThanOrEqual(0);
    }
    const metrics = readFileSync(join(output, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: number; policy_lags: (number | null)[]; sequences: number });
    expect(metrics.map((entry) => entry.step)).toEqual([1, 2]);
    for (const entry of metrics) {
      expect(entry.policy_lags).toHaveLength(entry.sequences);
      for (const lag of entry.policy_lags) expect(lag).toBeGreaterThanOrEqual(0);
    }
    // The trainer's steps reached the run's metrics stream (what the dashboard plots by step).
    const trainerRows = readFileSync(join(dir, 'runs', 'run.metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => metricsRowSchema.parse(JSON.parse(line)))
      .filter((row) => row.kind === 'shears.metrics.trainer');
    expect(trainerRows.map((row) => row.step)).toEqual([1, 2]);
    const written = metrics as unknown as Array<{
      loss: number;
      kl: number;
      entropy: number;
      reward_mean: number;
    }>;
    expect(trainerRows.map((row) => [row.loss, row.kl, row.entropy, row.rewardMean])).toEqual(
      written.map((entry) => [entry.loss, entry.kl, entry.entropy, entry.reward_mean]),
    );

    // The same folder again: refused before anything starts, the first run's model untouched.
    const modelTime = statSync(join(output, 'model.safetensors')).mtimeMs;
    const again = await runShears(['train', '--config', 'run.yaml', '--output', 'my-ft', '--force'], {
      cwd: dir,
    });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(
      /--output my-ft: .*my-ft is not empty \(.*\); shears train does not write a model over another run/,
    );
    expect(statSync(join(output, 'model.safetensors')).mtimeMs).toBe(modelTime);
  });

  it('refuses a missing output, a file as output, --output with a trainer command, and an unprepared venv', async () => {
    config('refuse', reference);
    const missing = await runShears(['train', '--config', 'refuse.yaml'], { cwd: dir });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('needs an output folder for the model: pass --output ./my-ft');

    writeFileSync(join(dir, 'a-file'), 'keep me');
    const file = await runShears(['train', '--config', 'refuse.yaml', '--output', 'a-file'], { cwd: dir });
    expect(file.code).not.toBe(0);
    expect(file.stderr).toMatch(/--output a-file: .*a-file is a file, not a folder/);
    expect(readFileSync(join(dir, 'a-file'), 'utf8')).toBe('keep me');

    config('own', 'train: { trainer: { command: ["python3", "-c", "pass"] } }');
    const own = await runShears(['train', '--config', 'own.yaml', '--output', 'x'], { cwd: dir });
    expect(own.code).not.toBe(0);
    expect(own.stderr).toContain(
      'is for the reference trainer (train.reference); train.trainer.command decides itself',
    );

    config('novenv', 'train: { reference: { model: base, venv: no-such-venv, steps: 1 } }');
    const novenv = await runShears(['train', '--config', 'novenv.yaml', '--output', 'fresh'], { cwd: dir });
    expect(novenv.code).not.toBe(0);
    expect(novenv.stderr).toMatch(/no-such-venv\/bin\/python does not exist; run `shears prepare --trainer`/);
    // Nothing was created for a refused run.
    expect(existsSync(join(dir, 'fresh'))).toBe(false);

    config('gpu', 'train: { reference: { model: base, steps: 1, device: gpu } }');
    const gpu = await runShears(['train', '--config', 'gpu.yaml', '--output', 'fresh'], { cwd: dir });
    expect(gpu.code).not.toBe(0);
    expect(gpu.stderr).toContain('train.reference.device');
    expect(gpu.stderr).toContain('auto, cpu, cuda or cuda:N');
    expect(existsSync(join(dir, 'fresh'))).toBe(false);
  });
});
