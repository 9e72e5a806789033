// A config file's own folder (issue 33 §1, §5), end to end through `shears process`: the seed's
// `tasks.task_file` gives the rows of any env that takes rows (an env written with defineEnv, read
// against the config file's folder), and is refused, saying why, by an env that makes its own
// tasks; plugins the config names by package resolve from the config file's folder, as an import
// written there would, and a missing one names both places searched.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scoredGroupRecordSchema } from '@shears/core';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { writeProbePack } from '../test-support/probe-pack.js';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'shears-config-folder-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** node_modules/NAME in `at` → the repository's package (as an install would put it there). */
function link(at: string, name: string, target: string): void {
  mkdirSync(dirname(join(at, 'node_modules', name)), { recursive: true });
  symlinkSync(target, join(at, 'node_modules', name), 'dir');
}

// An env written with defineEnv: its own rows unless a file replaces them; the demo policy answers
// the number of words of the prompt's text, so every rollout of a row from the file scores 1.
const WORDS_ENV = `import { defineEnv } from '@shears/core';
export default defineEnv({
  name: 'words',
  tasks: [{ id: 'own-row', text: 'a row of the env itself' }],
  prompt: 'How many words: {text}',
  async reward(row, { rollout }) {
    return String(rollout.finalResponse ?? '').trim() === String(row.text.split(/\\s+/).length);
  },
  demoPolicy: () => (request) => {
    const prompt = String(request.messages.find((message) => message.role === 'user')?.content);
    return { content: String(prompt.replace('How many words: ', '').split(/\\s+/).length) };
  },
});
`;

/** root/project/{shears.yaml, data/rows.jsonl}, the env at root/packs/words.mjs; run from root. */
function project(name: string, lines: string[]): string {
  const root = join(dir, name);
  mkdirSync(join(root, 'project/data'), { recursive: true });
  mkdirSync(join(root, 'packs'), { recursive: true });
  link(root, '@shears/core', join(repo, 'packages/core'));
  link(root, 'zod', join(repo, 'packages/core/node_modules/zod'));
  writeFileSync(join(root, 'packs/words.mjs'), WORDS_ENV);
  writeFileSync(
    join(root, 'project/data/rows.jsonl'),
    `${[
      { id: 'file-1', text: 'three words here' },
      { id: 'file-2', text: 'five words are in here' },
    ]
      .map((row) => JSON.stringify(row))
      .join('\n')}\n`,
  );
  writeFileSync(
    join(root, 'project/shears.yaml'),
    [...lines, 'run: { groups: 2, concurrency: 2, report: false, out: out/run.jsonl }'].join('\n'),
  );
  return root;
}

function groupsOf(path: string) {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

describe("tasks.task_file (the seed's spelling) for every env that takes rows", () => {
  it('gives a defineEnv env its rows, read against the config file folder, whatever the working directory', async () => {
    const root = project('define-env', [
      'plugins: ["../packs/words.mjs"]',
      'env: { name: words, group_size: 2 }',
      'tasks: { task_file: data/rows.jsonl }',
    ]);
    const run = await runShears(['process', '--config', 'project/shears.yaml'], { cwd: root });
    expect(run.code, run.stderr).toBe(0);
    const groups = groupsOf(join(root, 'project/out/run.jsonl'));
    expect(groups.map((group) => group.taskId).sort()).toEqual(['file-1', 'file-2']);
    for (const group of groups) expect(group.scores).toEqual([1, 1]);
  });

  it("is refused beside the env's own tasks setting, naming both", async () => {
    const root = project('define-env-clash', [
      'plugins: ["../packs/words.mjs"]',
      'env: { name: words, group_size: 2, settings: { tasks: data/rows.jsonl } }',
      'tasks: { task_file: data/rows.jsonl }',
    ]);
    const run = await runShears(['process', '--config', 'project/shears.yaml'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /tasks\.task_file: it is the "words" env's env\.settings\.tasks, which is set too/,
    );
  });

  it('a missing file is named as written and as resolved against the config file folder', async () => {
    const root = project('define-env-missing', [
      'plugins: ["../packs/words.mjs"]',
      'env: { name: words, group_size: 2 }',
      'tasks: { task_file: data/nope.jsonl }',
    ]);
    const run = await runShears(['process', '--config', 'project/shears.yaml'], { cwd: root });
    expect(run.code).toBe(2);
    const base = join(root, 'project');
    expect(run.stderr).toContain(
      `tasks.task_file: "data/nope.jsonl" (resolved against the config file's folder ${base}: ${join(base, 'data/nope.jsonl')}) does not exist`,
    );
  });

  it.each([
    ['the built-in demo env', 'demo', []],
    ['a low-level env of a pack', 'probe', ['plugins: ["../packs/probe-pack.mjs"]']],
  ])('is refused by %s, which makes its own tasks, saying why', async (_label, env, lines) => {
    const root = project(`no-rows-${env}`, [
      ...lines,
      `env: { name: ${env}, group_size: 2 }`,
      'tasks: { task_file: data/rows.jsonl }',
    ]);
    writeProbePack(join(root, 'packs'));
    const run = await runShears(['process', '--config', 'project/shears.yaml'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `tasks.task_file: the env "${env}" takes no task rows from a file: its tasks come from its own code`,
    );
  });
});

describe('plugins named by package in a config file', () => {
  /**
   * A package `words-pack` installed in `at`: a low-level env `name` with no imports (a package
   * under node_modules is imported by Node itself, outside the test runner's transform).
   */
  function install(at: string, name: string): void {
    const folder = join(at, 'node_modules/words-pack');
    mkdirSync(folder, { recursive: true });
    writeFileSync(
      join(folder, 'package.json'),
      JSON.stringify({ name: 'words-pack', type: 'module', exports: './index.js' }),
    );
    writeFileSync(
      join(folder, 'index.js'),
      `export default {
  specificationVersion: 'v1',
  id: 'words-pack',
  envs: {
    '${name}': {
      create: () => ({
        specificationVersion: 'v1',
        id: '${name}',
        preferredSandbox: 'local',
        async demoPolicy() { return () => ({ content: 'done' }); },
        async nextItem() { return { id: 'say-done', prompt: 'Say done.' }; },
        buildMessages: (item) => [{ role: 'user', content: item.prompt }],
        tools: () => [],
        async computeReward() { return { score: 1 }; },
      }),
    },
  },
};
`,
    );
  }

  it("resolve from the config file's folder, not the working directory", async () => {
    const root = project('package-config-folder', [
      'plugins: ["words-pack"]',
      'env: { name: words, group_size: 2 }',
    ]);
    install(join(root, 'project'), 'words');
    // The working directory's copy has another env: loading it would fail the run.
    install(root, 'other-words');
    const run = await runShears(['process', '--config', 'project/shears.yaml'], { cwd: root });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/working directory's copy/);
    expect(groupsOf(join(root, 'project/out/run.jsonl'))).toHaveLength(2);
  });

  it('one only the working directory has is loaded from there, saying so', async () => {
    const root = project('package-cwd', ['plugins: ["words-pack"]', 'env: { name: words, group_size: 2 }']);
    const elsewhere = join(dir, 'package-cwd-elsewhere');
    install(elsewhere, 'words');
    const run = await runShears(['process', '--config', join(root, 'project/shears.yaml')], {
      cwd: elsewhere,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      `plugins[0]: "words-pack" is not installed for the config file's folder ${join(root, 'project')} (node_modules from there upwards); loaded the working directory's copy, ${join(elsewhere, 'node_modules/words-pack')}`,
    );
  });

  it('one installed nowhere is refused, naming both places searched', async () => {
    const root = project('package-missing', [
      'plugins: ["words-pack"]',
      'env: { name: words, group_size: 2 }',
    ]);
    const run = await runShears(['process', '--config', 'project/shears.yaml'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `plugins[0]: package "words-pack" is not installed: searched node_modules from the config file's folder ${join(root, 'project')} upwards, and from the working directory ${root} upwards`,
    );
  });
});
