// docs/write-an-env.md as a test: its `file=` blocks are written into an empty folder outside the
// repository and its `sh run` blocks are run there as written, with the built `shears` (the
// packages linked into node_modules as npm would install them; the `npm install` lines of its
// `sh install` blocks are what the registry check, scripts/registry-check.ts, runs for real).
// No model and no key: the env's demo policy plays behind the scripted server.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scoredGroupRecordSchema } from '@shears/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { extractGuide, linkPackage, runGuideCommand } from './test-support/guide-blocks.js';

vi.setConfig({ testTimeout: 240_000 });

const root = fileURLToPath(new URL('../../../', import.meta.url));
const guide = extractGuide(readFileSync(join(root, 'docs', 'write-an-env.md'), 'utf8'));
const dir = mkdtempSync(join(tmpdir(), 'shears-guide-'));

const link = (name: string, target: string): void => linkPackage(dir, name, target);
const run = (command: string, env: Record<string, string> = {}) => runGuideCommand(dir, command, env);

beforeAll(() => {
  for (const built of ['packages/cli/dist/bin.js', 'packages/core/dist/index.d.ts'])
    if (!existsSync(join(root, built))) throw new Error(`${built} is missing: run \`pnpm build\` first`);
  for (const [name, text] of guide.files) writeFileSync(join(dir, name), text);
  // The install block, minus the downloads (linked instead).
  for (const command of guide.install.filter((line) => !line.startsWith('npm install')))
    execFileSync('bash', ['-c', command], { cwd: dir, stdio: 'ignore' });
  link('@shears/cli', join(root, 'packages/cli'));
  link('@shears/core', join(root, 'packages/core'));
  link('zod', join(root, 'packages/core/node_modules/zod'));
  link('typescript', join(root, 'node_modules/typescript'));
  link('@types/node', join(root, 'node_modules/@types/node'));
  // The bins npm would link (a build leaves dist/bin.js without its executable bit).
  mkdirSync(join(dir, 'node_modules/.bin'));
  for (const [bin, script] of [
    ['shears', '@shears/cli/dist/bin.js'],
    ['tsc', 'typescript/bin/tsc'],
  ] as const)
    writeFileSync(
      join(dir, 'node_modules/.bin', bin),
      `#!/bin/sh\nexec node "${join(dir, 'node_modules', script)}" "$@"\n`,
      {
        mode: 0o755,
      },
    );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function groups(path: string) {
  return readFileSync(join(dir, path), 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

describe('docs/write-an-env.md, run as written', () => {
  it('writes the count-the-words env in at most 40 lines, in JavaScript and in TypeScript', () => {
    for (const name of ['count-words.js', 'count-words-ts.ts']) {
      const text = guide.files.get(name);
      expect(text, name).toBeDefined();
      expect(text!.trimEnd().split('\n').length, name).toBeLessThanOrEqual(40);
    }
    expect(guide.install).toContain('npm install @shears/cli @shears/core zod');
  });

  it('runs every command of the guide, in order, and they do what the guide says', () => {
    expect(guide.commands.length).toBeGreaterThanOrEqual(5);
    const outputs: string[] = [];
    for (const command of guide.commands) {
      const result = run(command);
      expect(result.code, `${command}\n${result.stdout}\n${result.stderr}`).toBe(0);
      outputs.push(result.stdout);
    }
    // process: two groups, each spread (the demo policy answers right, then one too many).
    const js = groups('runs/count-words.jsonl');
    expect(js).toHaveLength(2);
    for (const group of js) expect(new Set(group.scores)).toEqual(new Set([0, 1]));
    expect(js[0]!.item.prompt).toBe(
      'How many words are in data/input.txt? Write the number into answer.txt.',
    );
    const ts = groups('runs/count-words-ts.jsonl');
    expect(ts).toHaveLength(2);
    for (const group of ts) expect(new Set(group.scores)).toEqual(new Set([0, 1]));
    // evaluate --json: every task played twice, half right.
    const summaries = outputs
      .filter((stdout) => stdout.trim().startsWith('{'))
      .map((stdout) => JSON.parse(stdout) as Record<string, unknown>);
    expect(summaries).toHaveLength(2);
    for (const summary of summaries) expect(JSON.stringify(summary)).toMatch(/"mean[_a-zA-Z]*":0\.5\b/);
    expect(existsSync(join(dir, 'dist/count-words-ts.js'))).toBe(true);
  });

  it('fails loudly, with the cause and a non-zero exit, when the env is wrong', () => {
    const variant = (name: string, from: string, to: string) => {
      const text = guide.files.get('count-words.js')!;
      expect(text).toContain(from);
      writeFileSync(join(dir, name), text.replace(from, to));
    };
    const evaluate = (file: string) =>
      run(`npx shears evaluate --plugins ./${file} --env count-words --k 2 --json --out runs/${file}.jsonl`);

    variant(
      'throws.js',
      'const answer = await read',
      "throw new Error('reward is broken'); const answer = await read",
    );
    const thrown = evaluate('throws.js');
    expect(thrown.code).not.toBe(0);
    expect(thrown.stderr).toContain('reward is broken');

    variant('misspelt.js', '  files: (row)', '  file: (row)');
    const misspelt = evaluate('misspelt.js');
    expect(misspelt.code).not.toBe(0);
    expect(misspelt.stderr).toMatch(/env "count-words": unknown field "file" \(fields: .*files/);
    // A tool clash and an unknown tasks format: define-env.test.ts (no CLI start needed).
  });
});
