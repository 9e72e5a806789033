// `shears export` end to end: a real run of the toy pack (scripted policy with decoys, so groups
// have different scores), exported as sft, dpo and grpo, then each file loaded with
// `datasets.load_dataset("json", …)` and trained one step by TRL's SFTTrainer, DPOTrainer and
// GRPOTrainer on CPU from a toy model made by `python -m shears_trainer toy-model`
// (trainers/tests/trl_from_export.py). Bad input: lines that are not groups, options of another
// format, nothing to export.
import { execFile } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

const repoRoot = join(import.meta.dirname, '..', '..', '..', '..');
const python = join(repoRoot, '.venv', 'bin', 'python');
const pack = join(repoRoot, 'examples', 'toy-pack');
const dir = mkdtempSync(join(tmpdir(), 'shears-export-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rows = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'save',
      description: 'Save a word.',
      parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    },
  },
];

describe('shears export', () => {
  beforeAll(async () => {
    writeFileSync(
      join(dir, 'run.yaml'),
      [
        `plugins: [${JSON.stringify(pack)}]`,
        'env: { name: toy-save, group_size: 4, seed: 3, settings: { demo_decoy_rate: 0.5 } }',
        'server: { provider: scripted }',
        'sandbox: { provider: local }',
        'run: { groups: 6, out: runs/toy.jsonl, report: false, all_equal_scores: keep, progress: none, metrics: false }',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'tools.json'), JSON.stringify(TOOLS));
    const run = await runShears(['process', '--config', 'run.yaml'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
  }, 120_000);

  it('writes sft, dpo and grpo rows that follow the groups', async () => {
    const groups = rows(join(dir, 'runs/toy.jsonl')) as unknown as {
      taskId: string;
      scores: (number | null)[];
    }[];
    const sft = await runShears(['export', 'runs/toy.jsonl', '--format', 'sft', '--tools', 'tools.json'], {
      cwd: dir,
    });
    expect(sft.code, sft.stderr).toBe(0);
    const sftRows = rows(join(dir, 'runs/toy.sft.jsonl'));
    // The best rollout of each group, with the score it had and the tools given.
    expect(sftRows).toHaveLength(groups.length);
    sftRows.forEach((row, index) => {
      expect(row.score).toBe(Math.max(...(groups[index]!.scores as number[])));
      expect(row.tools).toEqual(TOOLS);
      expect((row.messages as { role: string }[]).map((message) => message.role)).toContain('assistant');
    });

    const dpo = await runShears(['export', 'runs/toy.jsonl', '--format', 'dpo', '--out', 'dpo.jsonl'], {
      cwd: dir,
    });
    expect(dpo.code, dpo.stderr).toBe(0);
    // Tool calls without --tools: said, not silent.
    expect(dpo.stderr).toContain('--tools');
    const pairs = rows(join(dir, 'dpo.jsonl'));
    const mixed = groups.filter((group) => new Set(group.scores).size > 1);
    expect(mixed.length).toBeGreaterThan(0);
    expect(pairs).toHaveLength(mixed.length);
    for (const pair of pairs) {
      expect(pair.score_chosen as number).toBeGreaterThan(pair.score_rejected as number);
      expect((pair.prompt as { role: string }[]).some((message) => message.role === 'assistant')).toBe(false);
      expect((pair.chosen as { role: string }[])[0]!.role).toBe('assistant');
    }

    const grpo = await runShears(['export', 'runs/toy.jsonl', '--format', 'grpo'], { cwd: dir });
    expect(grpo.code, grpo.stderr).toBe(0);
    const prompts = rows(join(dir, 'runs/toy.grpo.jsonl'));
    expect(prompts.map((row) => row.task_id)).toEqual([...new Set(groups.map((group) => group.taskId))]);
    for (const row of prompts) expect(JSON.parse(row.task as string).id).toBe(row.task_id);

    // An existing file is the user's: refused without --force.
    const again = await runShears(['export', 'runs/toy.jsonl', '--format', 'grpo'], { cwd: dir });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('--force');
  }, 60_000);

  it('TRL trains one step from each exported file', async () => {
    if (!existsSync(python))
      throw new Error(
        `${python} is missing: run bash scripts/setup-python.sh (CI runs it in provision-test.sh)`,
      );
    const run = promisify(execFile);
    const env = {
      ...process.env,
      HF_HUB_OFFLINE: '1',
      TRANSFORMERS_OFFLINE: '1',
      TOKENIZERS_PARALLELISM: 'false',
    };
    await run(python, ['-m', 'shears_trainer', 'toy-model', '--output', join(dir, 'toy')], {
      cwd: join(repoRoot, 'trainers'),
      env,
    });
    const { stdout } = await run(
      python,
      [
        join(repoRoot, 'trainers', 'tests', 'trl_from_export.py'),
        '--model',
        join(dir, 'toy'),
        '--sft',
        join(dir, 'runs/toy.sft.jsonl'),
        '--dpo',
        join(dir, 'dpo.jsonl'),
        '--grpo',
        join(dir, 'runs/toy.grpo.jsonl'),
      ],
      { env, maxBuffer: 16 * 1024 * 1024 },
    );
    const results = stdout
      .split('\n')
      .filter((line) => line.startsWith('result {'))
      .map(
        (line) =>
          JSON.parse(line.slice('result '.length)) as {
            trainer: string;
            rows: number;
            loss: number;
            changed: boolean;
            task_words?: string[];
          },
      );
    expect(results.map((result) => result.trainer)).toEqual(['SFTTrainer', 'DPOTrainer', 'GRPOTrainer']);
    for (const result of results) {
      expect(result.rows).toBeGreaterThan(0);
      expect(Number.isFinite(result.loss)).toBe(true);
      expect(result.changed, `${result.trainer} changed no weight`).toBe(true);
    }
    // GRPOTrainer's reward function read the exported task rows' fields.
    const words = rows(join(dir, 'runs/toy.grpo.jsonl')).map((row) => JSON.parse(row.task as string).word);
    expect(results[2]!.task_words!.length).toBeGreaterThan(0);
    for (const word of results[2]!.task_words!) expect(words).toContain(word);
  }, 600_000);

  it('refuses what it cannot export, naming why, and writes nothing', async () => {
    writeFileSync(join(dir, 'broken.jsonl'), readFileSync(join(dir, 'runs/toy.jsonl'), 'utf8'));
    appendFileSync(
      join(dir, 'broken.jsonl'),
      '{"kind":"shears.run","config":{}}\n{"kind":"shears.group","version":1\n',
    );
    const broken = await runShears(['export', 'broken.jsonl', '--format', 'sft'], { cwd: dir });
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toContain('line 7: a record of kind "shears.run", not a scored group');
    expect(broken.stderr).toContain('line 8: not valid JSON');
    expect(existsSync(join(dir, 'broken.sft.jsonl'))).toBe(false);

    const wrongFlag = await runShears(['export', 'runs/toy.jsonl', '--format', 'sft', '--min-margin', '1'], {
      cwd: dir,
    });
    expect(wrongFlag.code).not.toBe(0);
    expect(wrongFlag.stderr).toContain('--min-margin does nothing with --format sft');

    const noFormat = await runShears(['export', 'runs/toy.jsonl'], { cwd: dir });
    expect(noFormat.code).not.toBe(0);
    expect(noFormat.stderr).toContain('--format is required');

    const badFormat = await runShears(['export', 'runs/toy.jsonl', '--format', 'ppo'], { cwd: dir });
    expect(badFormat.code).not.toBe(0);
    expect(badFormat.stderr).toContain('--format is one of sft, dpo, grpo');

    // Nothing qualifies: a non-zero exit and no file, not an empty dataset.
    const none = await runShears(
      ['export', 'runs/toy.jsonl', '--format', 'dpo', '--min-margin', '5', '--out', 'none.jsonl'],
      { cwd: dir },
    );
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('nothing to export');
    expect(existsSync(join(dir, 'none.jsonl'))).toBe(false);

    writeFileSync(join(dir, 'bad-tools.json'), '{"save": {}}');
    const badTools = await runShears(
      ['export', 'runs/toy.jsonl', '--format', 'sft', '--tools', 'bad-tools.json', '--out', 'x.jsonl'],
      { cwd: dir },
    );
    expect(badTools.code).not.toBe(0);
    expect(badTools.stderr).toContain('expected a JSON array of tool definitions');
  }, 60_000);
});
