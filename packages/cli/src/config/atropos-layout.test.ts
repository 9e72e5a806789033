// The Atropos chapter's atropos_config.yaml, as its reader types it, read as shears settings.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from './load-config.js';

const dir = mkdtempSync(join(tmpdir(), 'shears-atropos-layout-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The chapter's file (§10.5.3), with `changes` applied to its text. */
function chapterConfig(name: string, changes: Array<[string, string]> = []): string {
  let text = `model:
  base_model: "NousResearch/Hermes-4-405B"
  quantization: "q4_k_m"
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
  for (const [from, to] of changes) text = text.replace(from, to);
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const KEY = { OPENAI_API_KEY: 'sk-atropos-layout-test-key' };

describe("the Atropos chapter's config layout", () => {
  it('maps every key onto shears settings and says how', () => {
    mkdirSync(join(dir, 'models/hermes'), { recursive: true });
    const loaded = loadConfig({
      path: chapterConfig('ok.yaml', [
        ['"NousResearch/Hermes-4-405B"', './models/hermes'],
        ['  quantization: "q4_k_m"\n', ''],
      ]),
      environment: KEY,
    });
    const { config } = loaded;
    expect(config.train.reference).toMatchObject({
      model: join(dir, 'models/hermes'),
      steps: 1000,
      batch_size: 8,
      lr: 1e-5,
    });
    expect(config.train.workers).toBe(4);
    expect(config.env.max_turns).toBe(30);
    expect(config.env.toolsets?.enabled).toEqual(['terminal', 'web', 'file']);
    expect(config.judge).toMatchObject({
      id: 'panel',
      server: { provider: 'openai', model: 'gpt-4o', api_key: KEY.OPENAI_API_KEY },
      settings: { aggregation: 'trimmed_mean' },
    });
    expect((config.judge!.settings as { judges: unknown[] }).judges).toHaveLength(3);
    expect(config.env).toMatchObject({ name: 'tasks', settings: { file: join(dir, 'my_tasks.json') } });
    const text = loaded.atropos!.lines.join('\n');
    for (const line of [
      'model.base_model → train.reference.model',
      'training.max_steps → train.reference.steps',
      'training.batch_size → train.reference.batch_size',
      'training.learning_rate → train.reference.lr',
      'trajectory_collection.n_workers → train.workers',
      'trajectory_collection.max_steps_per_trajectory → env.max_turns',
      'trajectory_collection.tools → env.toolsets.enabled [terminal, web, file]',
      'judge.model, judge.n_judges → judge: a panel of 3 rubric judges',
      'tasks.task_file → env: { name: tasks',
    ])
      expect(text).toContain(line);
  });

  it('refuses a GGUF quantization for training, saying why', () => {
    expect(() => loadConfig({ path: chapterConfig('gguf.yaml'), environment: KEY })).toThrow(
      /model\.quantization: "q4_k_m" is a GGUF \(llama\.cpp\) quantization: a storage format for running a model, not for training it/,
    );
  });

  it('refuses an unknown key of its sections and a tool it has no toolset for, naming them', () => {
    expect(() =>
      loadConfig({
        path: chapterConfig('typo.yaml', [
          ['  quantization: "q4_k_m"\n', ''],
          ['max_steps:', 'max_step:'],
        ]),
        environment: KEY,
      }),
    ).toThrow(/training\.max_step: unknown field .*\(did you mean "max_steps"\?\)/);
    expect(() =>
      loadConfig({
        path: chapterConfig('tool.yaml', [
          ['  quantization: "q4_k_m"\n', ''],
          ['"file_ops"', '"file_opz"'],
        ]),
        environment: KEY,
      }),
    ).toThrow(/trajectory_collection\.tools\[2\]: no tool "file_opz" here \(did you mean "file_ops"\?\)/);
  });

  it("names the judge's endpoint and key when the key is not set", () => {
    expect(() =>
      loadConfig({
        path: chapterConfig('nokey.yaml', [['  quantization: "q4_k_m"\n', '']]),
        environment: {},
      }),
    ).toThrow(
      /judge\.model \(gpt-4o\): the judges are called at https:\/\/api\.openai\.com\/v1 with the key in the environment variable OPENAI_API_KEY, which is not set/,
    );
  });
});
