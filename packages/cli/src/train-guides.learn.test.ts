// The training guides as tests: each guide's `file=` blocks are written into a fresh folder and
// its `sh run` blocks run there as written, in order. docs/train-a-model.md (sections 1 and 2):
// the starting model made from nothing (toy-model, the scripted demonstrator through `shears
// process`, `shears export --format sft`, the trainer's `sft`), then `shears train --output
// ./my-ft` from it. docs/training.md ("Try it"): `shears train` with a trainer of its own (twenty
// lines of Python) on the demo env. Each folder holds the repository's files (linked: the guides
// run at a clone's root, after `bash scripts/setup.sh`) and nothing the guide makes.
//
// One thing is prepared that a user's first run would install: `.shears/trainer-venv`. Instead of
// a second pip install of torch (minutes, and an index CI may not reach), it is a venv that shares
// the test environment's packages (`.venv`, scripts/setup-python.sh: the same pinned versions,
// shears_trainer installed from this repository), with the stamp `shears prepare --trainer` leaves
// for the current trainer source — so the guide's `prepare --trainer` finds it and keeps it (the
// test asserts it said "kept"). prepare's own install path is tested in trainer-env.test.ts.
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scoredGroupRecordSchema } from '@shears/core';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { extractGuide } from './test-support/guide-blocks.js';
import { TRAINER_STAMP, trainerSourceHash } from './train/trainer-env.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const venv = join(root, '.venv');
const kept: string[] = [];
const failed = new Set<string>();
afterAll(() => {
  for (const dir of kept)
    if (failed.has(dir)) console.log(`training guide: kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
});

function run(dir: string, command: string) {
  const started = Date.now();
  const result = spawnSync('bash', ['-c', command], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, CI: 'true', npm_config_update_notifier: 'false' },
    maxBuffer: 64 * 1024 * 1024,
  });
  return {
    code: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    seconds: (Date.now() - started) / 1000,
  };
}

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');

/** A clone's root, after `bash scripts/setup.sh`, with the guide's files and the trainer's venv. */
function clone(doc: string) {
  for (const built of ['packages/cli/dist/bin.js', 'examples/toy-pack/src/index.js'])
    if (!existsSync(join(root, built))) throw new Error(`${built} is missing: run \`pnpm build\` first`);
  if (!existsSync(join(venv, 'bin', 'python')))
    throw new Error(`${venv}/bin/python is missing: run bash scripts/setup-python.sh (CI runs it)`);
  const guide = extractGuide(readFileSync(join(root, 'docs', doc), 'utf8'));
  const dir = mkdtempSync(join(tmpdir(), 'shears-train-guide-'));
  kept.push(dir);
  failed.add(dir);
  // The repository's files, linked.
  for (const name of CLONE) if (existsSync(join(root, name))) symlinkSync(join(root, name), join(dir, name));
  // The trainer's venv, sharing .venv's packages (see the top of this file).
  const trainerVenv = join(dir, '.shears', 'trainer-venv');
  mkdirSync(join(trainerVenv, 'bin'), { recursive: true });
  copyFileSync(join(venv, 'pyvenv.cfg'), join(trainerVenv, 'pyvenv.cfg'));
  symlinkSync(join(venv, 'bin', 'python'), join(trainerVenv, 'bin', 'python'));
  symlinkSync(join(venv, 'lib'), join(trainerVenv, 'lib'));
  writeFileSync(join(trainerVenv, TRAINER_STAMP), `${trainerSourceHash(join(root, 'trainers'))}\n`);
  for (const [name, text] of guide.files) writeFileSync(join(dir, name), text);
  return { dir, guide, passed: () => failed.delete(dir) };
}

const CLONE = [
  'package.json',
  'pnpm-workspace.yaml',
  '.npmrc',
  'node_modules',
  'packages',
  'examples',
  'trainers',
];

/** Runs the guide's commands in order, each to exit 0; what a command printed, by its start. */
function runGuide(dir: string, commands: string[]) {
  const outputs: [string, ReturnType<typeof run>][] = [];
  for (const command of commands) {
    const result = run(dir, command);
    expect(result.code, `${command}\n${result.stdout.slice(-3000)}\n${result.stderr.slice(-6000)}`).toBe(0);
    outputs.push([command, result]);
    console.log(`training guide: ${result.seconds.toFixed(1)} s  ${command}`);
  }
  return (start: string) =>
    outputs.find(([command]) => command.startsWith(start))?.[1] ?? { stdout: '', stderr: '' };
}

describe('docs/train-a-model.md, run as written', () => {
  it('makes ./toy-sft from nothing, then shears train --output ./my-ft trains from it', {
    timeout: 1_200_000,
  }, () => {
    const { dir, guide, passed } = clone('train-a-model.md');
    expect([...guide.files.keys()].sort()).toEqual(['demos.yaml', 'tools.json', 'train.yaml']);
    expect(guide.commands.at(-1)).toBe('pnpm shears train --config train.yaml --output ./my-ft');
    const output = runGuide(dir, guide.commands);

    // prepare --trainer found the venv it would have made, and kept it.
    expect(output('pnpm shears prepare --trainer').stdout).toMatch(/trainer environment .* kept in/);

    // The demonstrations: as many as demos.yaml asks, every one solved; exported one row each.
    const demos = parseYaml(guide.files.get('demos.yaml')!) as { run: { groups: number } };
    const groups = lines(join(dir, 'runs/demos.jsonl')).map((line) =>
      scoredGroupRecordSchema.parse(JSON.parse(line)),
    );
    expect(groups).toHaveLength(demos.run.groups);
    for (const group of groups) expect(group.scores).toEqual([1]);
    expect(lines(join(dir, 'runs/demos.sft.jsonl'))).toHaveLength(demos.run.groups);

    // The starting model and the trained one: model folders.
    for (const folder of ['toy-sft', 'my-ft'])
      for (const file of ['config.json', 'model.safetensors', 'tokenizer.json'])
        expect(existsSync(join(dir, folder, file)), `${folder}/${file}`).toBe(true);

    // What the user reads at the end of `shears train`.
    const train = parseYaml(guide.files.get('train.yaml')!) as {
      train: { reference: { steps: number; checkpoint_every: number } };
    };
    const { steps, checkpoint_every: every } = train.train.reference;
    const trained = output('pnpm shears train');
    expect(trained.stdout).toMatch(
      new RegExp(
        `train: ${steps} steps; reward \\d\\.\\d{3} at the start → \\d\\.\\d{3} at the end: the mean score`,
      ),
    );
    expect(trained.stdout).toContain('train: model in my-ft (AutoModelForCausalLM.from_pretrained loads it)');
    // A checkpoint every `checkpoint_every` steps before the last (the last step is the model itself).
    const checkpoints = Array.from(
      { length: Math.ceil(steps / every) - 1 },
      (_, index) => `step-${(index + 1) * every}`,
    );
    expect(readdirSync(join(dir, 'my-ft', 'checkpoints')).sort()).toEqual(checkpoints.sort());
    expect(trained.stdout).toContain(
      `checkpoints ${checkpoints.map((name) => `my-ft/checkpoints/${name}`).join(', ')}`,
    );

    // One metrics line a step, each trained on a batch of sequences.
    const metrics = lines(join(dir, 'my-ft/metrics.jsonl')).map(
      (line) => JSON.parse(line) as { step: number; sequences: number },
    );
    expect(metrics.map((entry) => entry.step)).toEqual(
      Array.from({ length: steps }, (_, index) => index + 1),
    );
    for (const entry of metrics) expect(entry.sequences).toBeGreaterThan(0);

    // The model loads with transformers, and renders a chat with its own template.
    const loaded = run(
      dir,
      `.shears/trainer-venv/bin/python -c 'from transformers import AutoModelForCausalLM, AutoTokenizer; m = AutoModelForCausalLM.from_pretrained("my-ft"); t = AutoTokenizer.from_pretrained("my-ft"); print(sum(p.numel() for p in m.parameters())); print(t.apply_chat_template([{"role": "user", "content": "Save the word kemo."}], tokenize=False, add_generation_prompt=True))'`,
    );
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(Number(loaded.stdout.trim().split('\n')[0])).toBeGreaterThan(100_000);
    expect(loaded.stdout).toContain('Save the word kemo.');
    passed();
  });
});

describe('docs/training.md, "Try it", run as written', () => {
  it('shears train runs the twenty-line trainer: it registers, takes its batches, and the run exits 0', {
    timeout: 600_000,
  }, () => {
    const { dir, guide, passed } = clone('training.md');
    expect([...guide.files.keys()].sort()).toEqual(['my-train.yaml', 'my_trainer.py']);
    const output = runGuide(dir, guide.commands);
    const trained = output('pnpm shears train');
    // Three batches of 16 sequences, each line as the trainer printed it, prefixed.
    const steps = [
      ...trained.stderr.matchAll(
        /\[trainer\] step (\d): 16 sequences, (\d+) tokens, mean score (\d\.\d{3})/g,
      ),
    ];
    expect(
      steps.map((match) => match[1]),
      trained.stderr.slice(-3000),
    ).toEqual(['1', '2', '3']);
    for (const match of steps) expect(Number(match[2])).toBeGreaterThan(16);
    // The rollouts the workers played are in the run's JSONL.
    expect(lines(join(dir, 'runs/my-train.jsonl')).length).toBeGreaterThanOrEqual(4);
    passed();
  });
});
