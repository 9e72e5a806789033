// The surface a new user meets first (issue 33 §5): no silent paths. A config that chooses no env,
// a misspelt key anywhere, a relative path written in a config file: each is refused or resolved
// as the user means it, with the cause on the terminal and a non-zero exit.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createScriptedServer } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { writeProbePack } from './test-support/probe-pack.js';
import { runShears } from './test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-surface-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function folder(name: string): string {
  const path = join(dir, name);
  mkdirSync(path, { recursive: true });
  return path;
}

describe('no env chosen', () => {
  it.each([
    ['process', ['process', '--groups', '1', '--out', 'runs/x.jsonl']],
    ['evaluate', ['evaluate', '--k', '1', '--evaluate.max_items', '1']],
  ])('`shears %s` without env.name or --env is refused, listing the envs', async (_name, argv) => {
    const cwd = folder(`no-env-${_name}`);
    const run = await runShears(argv, { cwd });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/env\.name: no environment chosen/);
    expect(run.stderr).toMatch(/available: [^)]*\bdemo\b[^)]*\btasks\b/);
    expect(existsSync(join(cwd, 'runs/x.jsonl'))).toBe(false);
  });

  it('a config file that sets env but not env.name is refused too; --env then runs it', async () => {
    const cwd = folder('no-env-config');
    writeFileSync(
      join(cwd, 'shears.yaml'),
      'env:\n  group_size: 2\nrun:\n  groups: 1\n  out: runs/x.jsonl\n',
    );
    const refused = await runShears(['process', '--config', 'shears.yaml'], { cwd });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/env\.name: no environment chosen.*--env/);
    const ran = await runShears(['process', '--config', 'shears.yaml', '--env', 'demo'], { cwd });
    expect(ran.stderr).not.toMatch(/no environment chosen/);
    expect(ran.code).toBe(0);
  });

  it('`shears doctor` fails its env check, naming the envs', async () => {
    const run = await runShears(['doctor'], { cwd: folder('no-env-doctor') });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/✗ env\s+env\.name: no environment chosen/);
  });
});

describe('misspelt keys', () => {
  it.each([
    ['top level', 'judeg:\n  id: rubric\n', /unknown field "judeg" \(did you mean "judge"\?\)/],
    [
      'env',
      'env:\n  name: demo\n  group_sise: 2\n',
      /env: unknown field "group_sise" \(did you mean "group_size"\?\)/,
    ],
    [
      'run',
      'env:\n  name: demo\nrun:\n  grups: 2\n',
      /run: unknown field "grups" \(did you mean "groups"\?\)/,
    ],
    [
      'server',
      'env:\n  name: demo\nserver:\n  modle: x\n',
      /server: unknown field "modle" \(did you mean "model"\?\)/,
    ],
    [
      'train.reference',
      'env:\n  name: demo\ntrain:\n  reference:\n    model: m\n    stpes: 3\n',
      /train\.reference: unknown field "stpes" \(did you mean "steps"\?\)/,
    ],
    [
      'tasks',
      'tasks:\n  taskfile: t.json\n',
      /tasks: unknown field "taskfile" \(did you mean "task_file"\?\)/,
    ],
  ])('a misspelt key in %s is refused, naming it and the key meant', async (section, yaml, expected) => {
    const cwd = folder(`misspelt-${section}`);
    writeFileSync(join(cwd, 'shears.yaml'), yaml);
    const run = await runShears(['process', '--config', 'shears.yaml', '--out', 'runs/x.jsonl'], { cwd });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(expected);
    expect(existsSync(join(cwd, 'runs/x.jsonl'))).toBe(false);
  });
});

describe('relative paths in a config file', () => {
  let model: Awaited<ReturnType<typeof createScriptedServer>>;
  beforeAll(async () => {
    model = await createScriptedServer({ policy: () => ({ content: 'done' }) });
  });
  afterAll(async () => {
    await model?.close();
  });

  function project(name: string, lines: string[]): string {
    const root = folder(name);
    mkdirSync(join(root, 'project/data'), { recursive: true });
    writeProbePack(join(root, 'project'));
    writeFileSync(
      join(root, 'project/data/tasks.jsonl'),
      `${JSON.stringify({ id: 'one', prompt: 'Say done.', verify: 'true' })}\n`,
    );
    writeFileSync(
      join(root, 'project/shears.yaml'),
      [
        ...lines,
        `server: { provider: openai, base_url: ${model.url}, model: scripted, api_key: none }`,
        'env: { group_size: 2 }',
        'run: { groups: 1, concurrency: 2, report: false, out: out/run.jsonl }',
      ].join('\n'),
    );
    return root;
  }

  it("plugins, the task file and the output resolve against the config file's folder, not the working directory", async () => {
    const root = project('paths-ok', [
      'plugins: ["./probe-pack.mjs"]',
      'tasks: { task_file: ./data/tasks.jsonl }',
    ]);
    const run = await runShears(['process', '--config', 'project/shears.yaml'], { cwd: root });
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(join(root, 'project/out/run.jsonl'))).toBe(true);
    expect(existsSync(join(root, 'out/run.jsonl'))).toBe(false);
  });

  it('a path that does not exist is named as written and as resolved, before anything runs', async () => {
    const root = project('paths-missing', [
      'plugins: ["./pack-missing.mjs"]',
      'tasks: { task_file: ./data/nope.jsonl }',
    ]);
    const run = await runShears(['process', '--config', 'project/shears.yaml'], { cwd: root });
    expect(run.code).toBe(2);
    const base = join(root, 'project');
    expect(run.stderr).toContain(
      `plugins[0]: "./pack-missing.mjs" (resolved against the config file's folder ${base}: ${join(base, 'pack-missing.mjs')}) does not exist`,
    );
    expect(run.stderr).toContain(
      `tasks.task_file: "./data/nope.jsonl" (resolved against the config file's folder ${base}: ${join(base, 'data/nope.jsonl')}) does not exist`,
    );
    expect(existsSync(join(base, 'out/run.jsonl'))).toBe(false);
  });

  it('a path given on the command line stays relative to the working directory', async () => {
    const root = project('paths-cli', []);
    const run = await runShears(
      [
        'process',
        '--config',
        'project/shears.yaml',
        '--env',
        'tasks',
        '--env.settings.file',
        'data/tasks.jsonl',
      ],
      { cwd: root },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `env.settings.file: "data/tasks.jsonl" (resolved against the working directory ${root}: ${join(root, 'data/tasks.jsonl')}) does not exist`,
    );
  });
});

describe('a tool whose schema and code disagree', () => {
  it('is refused when the group starts, naming both sides, instead of a run of invalid-argument errors', async () => {
    const cwd = folder('schema-code');
    const zod = pathToFileURL(createRequire(import.meta.url).resolve('zod')).href;
    writeFileSync(
      join(cwd, 'pack.mjs'),
      `import { z } from ${JSON.stringify(zod)};
const countWords = {
  name: 'count_words',
  description: 'Count the words of a file.',
  // The model is shown "path"; the code validates and reads "file".
  jsonSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  inputSchema: z.object({ file: z.string() }),
  async execute(args, context) { return String((await context.sandbox.readFile(args.file)).split(/\\s+/).length); },
};
export default {
  specificationVersion: 'v1',
  id: 'words-pack',
  envs: {
    words: {
      create: () => ({
        specificationVersion: 'v1',
        id: 'words',
        preferredSandbox: 'local',
        async demoPolicy() { return () => ({ content: 'done' }); },
        async nextItem() { return { id: 'w1', prompt: 'Count the words of a.txt.' }; },
        buildMessages: (item) => [{ role: 'user', content: item.prompt }],
        tools: () => [countWords],
        async computeReward() { return { score: 1 }; },
      }),
    },
  },
};
`,
    );
    const run = await runShears(
      ['process', '--plugins', '["./pack.mjs"]', '--env', 'words', '--groups', '1', '--out', 'runs/w.jsonl'],
      { cwd },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /tool "count_words" of env words: its JSON Schema \(jsonSchema, what the model is shown: path\) and the schema its arguments are validated with \(inputSchema: file\) disagree: the model is shown "path", which the code does not take; the code requires "file", which the model is never shown/,
    );
  });
});

describe("the Atropos chapter's `shears train --config atropos_config.yaml --output ./my_hermes_ft`", () => {
  const chapter = (baseModel: string) => `model:
  base_model: "${baseModel}"
training:
  max_steps: 1000
  batch_size: 8
  learning_rate: 1e-5
trajectory_collection:
  n_workers: 4
  max_steps_per_trajectory: 30
  tools: ["python_exec", "web_search", "file_ops"]
judge:
  model: "gpt-4o"
  n_judges: 3
tasks:
  task_file: "./my_tasks.json"
`;

  it('prints the mapping once and refuses a hub model id, naming the folder to use instead', async () => {
    const cwd = folder('atropos-train');
    writeFileSync(join(cwd, 'atropos_config.yaml'), chapter('NousResearch/Hermes-4-405B'));
    writeFileSync(join(cwd, 'my_tasks.json'), JSON.stringify([{ id: 'a', prompt: 'p', verify: 'true' }]));
    const run = await runShears(['train', '--config', 'atropos_config.yaml', '--output', './my_hermes_ft'], {
      cwd,
      env: { OPENAI_API_KEY: 'sk-atropos-e2e-key-123' },
    });
    expect(run.code).toBe(2);
    expect(run.stderr.match(/uses the Atropos chapter's layout; read as shears settings:/g)).toHaveLength(1);
    expect(run.stderr).toContain('model.base_model → train.reference.model');
    expect(run.stderr).toContain('trajectory_collection.n_workers → train.workers');
    expect(run.stderr).toMatch(
      /model\.base_model \(train\.reference\.model\): "NousResearch\/Hermes-4-405B" is not a folder here, and shears downloads no models: .*--local-dir \.\/models\/Hermes-4-405B`\) and name that folder/,
    );
    expect(existsSync(join(cwd, 'my_hermes_ft'))).toBe(false);
  });

  it('with a local model folder it gets past the mapping to what train needs next', async () => {
    const cwd = folder('atropos-train-local');
    mkdirSync(join(cwd, 'models/hermes'), { recursive: true });
    writeFileSync(join(cwd, 'models/hermes/config.json'), '{}');
    writeFileSync(
      join(cwd, 'atropos_config.yaml'),
      `${chapter('./models/hermes')}train: { reference: { venv: no-venv } }\n`,
    );
    writeFileSync(join(cwd, 'my_tasks.json'), JSON.stringify([{ id: 'a', prompt: 'p', verify: 'true' }]));
    const run = await runShears(['train', '--config', 'atropos_config.yaml', '--output', './my_hermes_ft'], {
      cwd,
      env: { OPENAI_API_KEY: 'sk-atropos-e2e-key-123' },
    });
    // Every chapter key was accepted; what stops it is the trainer's Python, not the layout.
    expect(run.stderr).toMatch(
      /train\.reference: the trainer's Python \S+no-venv\/bin\/python does not exist; run `shears prepare --trainer`/,
    );
    expect(run.code).toBe(2);
  });
});

describe('`shears doctor` checks what the run needs', () => {
  it("runs the harness's own version command with bin first on PATH, and fails one that is not there", async () => {
    const cwd = folder('doctor-harness');
    mkdirSync(join(cwd, 'tools/bin'), { recursive: true });
    mkdirSync(join(cwd, 'empty-bin'), { recursive: true });
    // A stand-in for the installed CLI: answers --version as `qwen` does.
    writeFileSync(join(cwd, 'tools/bin/qwen'), '#!/bin/sh\necho "0.15.10"\n', { mode: 0o755 });
    const yaml = (bin: string) => `env: { name: harness, settings: { preset: qwen-code, bin: ${bin} } }\n`;
    writeFileSync(join(cwd, 'tools/ok.yaml'), yaml('./bin'));
    writeFileSync(join(cwd, 'missing.yaml'), yaml('./empty-bin'));
    const ok = await runShears(['doctor', '--config', 'tools/ok.yaml'], {
      cwd,
      env: { PATH: '/usr/bin:/bin' },
    });
    expect(ok.stdout).toMatch(
      new RegExp(`✓ harness qwen-code\\s+qwen --version: 0\\.15\\.10 \\(bin ${join(cwd, 'tools/bin')}\\)`),
    );
    const missing = await runShears(['doctor', '--config', 'missing.yaml'], { cwd });
    expect(missing.stdout).toMatch(
      /✗ harness qwen-code\s+qwen not found in bin \S+empty-bin or on PATH: every rollout would fail to start/,
    );
    expect(missing.stdout).toMatch(/fix: install it \(npm install @qwen-code\/qwen-code\)/);
    expect(missing.code).toBe(1);
  });

  it("fails train's starting model when it is not a folder here, naming the download command for a hub id", async () => {
    const cwd = folder('doctor-model');
    writeFileSync(
      join(cwd, 'train.yaml'),
      'env: { name: demo }\ntrain: { reference: { model: Qwen/Qwen3-0.6B } }\n',
    );
    const run = await runShears(['doctor', '--config', 'train.yaml'], { cwd });
    expect(run.stdout).toMatch(/✗ model\s+train\.reference\.model "Qwen\/Qwen3-0\.6B" does not exist/);
    expect(run.stdout).toMatch(
      /fix: shears downloads no models: `hf download Qwen\/Qwen3-0\.6B --local-dir \.\/models\/Qwen3-0\.6B`/,
    );
    expect(run.code).toBe(1);
  });
});

describe('the harness bin', () => {
  it('given relatively in a config file, is read against that file; a missing one is named as written and as resolved', async () => {
    const cwd = folder('harness-bin');
    mkdirSync(join(cwd, 'project'), { recursive: true });
    writeFileSync(
      join(cwd, 'project/shears.yaml'),
      'env: { name: harness, settings: { preset: qwen-code, bin: ./node_modules/.bin, tasks: bundled } }\n',
    );
    const run = await runShears(['process', '--config', 'project/shears.yaml', '--groups', '1'], { cwd });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `env.settings.bin: "./node_modules/.bin" (resolved against the config file's folder ${join(cwd, 'project')}: ${join(cwd, 'project/node_modules/.bin')}) does not exist`,
    );
  });
});

describe('`shears prepare` without an env', () => {
  it('refuses, listing the envs, unless it only builds the docker sandbox image', async () => {
    const run = await runShears(['prepare'], { cwd: folder('prepare-no-env') });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/env\.name: no environment chosen.*available: /);
  });
});

describe('the closing summary', () => {
  it('tallies tool errors by tool and error in process and evaluate, saying when every call failed', async () => {
    const cwd = folder('tool-errors');
    const zod = pathToFileURL(createRequire(import.meta.url).resolve('zod')).href;
    writeFileSync(
      join(cwd, 'pack.mjs'),
      `import { z } from ${JSON.stringify(zod)};
const broken = {
  name: 'broken',
  description: 'Always fails.',
  inputSchema: z.object({ path: z.string() }),
  async execute() { throw new Error('boom: no such file'); },
};
export default {
  specificationVersion: 'v1',
  id: 'broken-pack',
  envs: {
    broken: {
      create: () => ({
        specificationVersion: 'v1',
        id: 'broken',
        preferredSandbox: 'local',
        async demoPolicy() {
          return (request) => request.messages.some((message) => message.role === 'tool')
            ? { content: 'done' }
            : { toolCalls: [{ name: 'broken', arguments: { path: 'a.txt' } }] };
        },
        async nextItem() { return { id: 'b1', prompt: 'Use the tool.' }; },
        async evalItems() { return [{ id: 'b1', prompt: 'Use the tool.' }]; },
        buildMessages: (item) => [{ role: 'user', content: item.prompt }],
        tools: () => [broken],
        async computeReward() { return { score: 0 }; },
      }),
    },
  },
};
`,
    );
    const common = ['--plugins', '["./pack.mjs"]', '--env', 'broken', '--group-size', '2'];
    const run = await runShears(['process', ...common, '--groups', '1', '--out', 'runs/b.jsonl'], { cwd });
    expect(run.stderr).toMatch(
      /tool errors: 2 of 2 tool calls \(every call failed\); 2 × broken: .*boom: no such file/,
    );
    const evaluated = await runShears(['evaluate', ...common, '--k', '2', '--evaluate.out', 'runs/e.jsonl'], {
      cwd,
    });
    expect(evaluated.stderr).toMatch(
      /tool errors: 2 of 2 tool calls \(every call failed\); 2 × broken: .*boom: no such file/,
    );
  });
});
