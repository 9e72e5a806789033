import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scoredGroupRecordSchema } from '@shears/core';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { extractGuide, linkPackage, runGuideCommand } from './test-support/guide-blocks.js';
import { readViewerPage } from './viewer/build-viewer.js';

vi.setConfig({ testTimeout: 300_000 });

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const gateway = dirname(require.resolve('@shears/gateway/package.json'));
const qwenVersion = (
  JSON.parse(readFileSync(join(gateway, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  }
).devDependencies['@qwen-code/qwen-code'];
const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A fresh folder with the guide's files and its install block's packages, linked. */
function project(doc: string) {
  const guide = extractGuide(readFileSync(join(root, 'docs', doc), 'utf8'));
  const dir = mkdtempSync(join(tmpdir(), 'shears-harness-guide-'));
  folders.push(dir);
  expect(guide.install).toEqual([
    'npm init -y',
    'npm install @shears/cli @shears/gateway',
    `npm install --prefix ./harnesses @qwen-code/qwen-code@${qwenVersion}`,
  ]);
  execute(dir, 'npm init -y');
  linkPackage(dir, '@shears/cli', join(root, 'packages/cli'));
  linkPackage(dir, '@shears/gateway', gateway);
  // `npm install --prefix ./harnesses`: the CLI under harnesses/node_modules, its bin in .bin.
  const qwen = join(gateway, 'node_modules', '@qwen-code', 'qwen-code'); // a devDependency of @shears/gateway
  const qwenPackage = JSON.parse(readFileSync(join(qwen, 'package.json'), 'utf8')) as {
    bin: Record<string, string>;
  };
  mkdirSync(join(dir, 'harnesses', 'node_modules', '@qwen-code'), { recursive: true });
  symlinkSync(realpathSync(qwen), join(dir, 'harnesses', 'node_modules', '@qwen-code', 'qwen-code'), 'dir');
  const bins: [string, string][] = [
    ['node_modules/.bin/shears', join(dir, 'node_modules/@shears/cli/dist/bin.js')],
    ...Object.entries(qwenPackage.bin).map(([bin, script]): [string, string] => [
      `harnesses/node_modules/.bin/${bin}`,
      join(dir, 'harnesses/node_modules/@qwen-code/qwen-code', script),
    ]),
  ];
  for (const [bin, script] of bins) {
    mkdirSync(dirname(join(dir, bin)), { recursive: true });
    writeFileSync(join(dir, bin), `#!/bin/sh\nexec node "${script}" "$@"\n`, { mode: 0o755 });
  }
  for (const [name, text] of guide.files) writeFileSync(join(dir, name), text);
  return { dir, guide };
}

const execute = (dir: string, command: string) => runGuideCommand(dir, command);

function runAll(dir: string, commands: string[]) {
  const outputs: { command: string; stdout: string; stderr: string }[] = [];
  for (const command of commands) {
    const result = execute(dir, command);
    expect(result.code, `${command}\n${result.stdout.slice(-3000)}\n${result.stderr.slice(-6000)}`).toBe(0);
    outputs.push({ command, ...result });
  }
  return outputs;
}

function groups(path: string) {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

/** Each rollout: Qwen Code called its shell tool with the task's solution; reward 1. */
function expectSolved(path: string, solution: string) {
  const [group, ...more] = groups(path);
  expect(more).toHaveLength(0);
  expect(group!.rollouts).toHaveLength(2);
  for (const rollout of group!.rollouts) {
    expect(rollout.reward, JSON.stringify(rollout.rewardDetails).slice(0, 3000)).toBe(1);
    const calls = rollout.messages.flatMap((message) => message.tool_calls ?? []);
    expect(calls.map((call) => call.function.name)).toEqual(['run_shell_command']);
    expect(JSON.parse(calls[0]!.function.arguments).command).toBe(solution);
    const details = rollout.rewardDetails as { harness: { exitCode: number; preset: string } };
    expect(details.harness.preset).toBe('qwen-code');
    expect(details.harness.exitCode).toBe(0);
  }
}

const SOLUTION = "sed -i 's/wrold/world/' greet.sh";

describe('the harness guides, run as written', () => {
  it('docs/train-your-agent.md: Qwen Code plays the bundled task against the stand-in; reward 1, and the viewer', () => {
    const { dir, guide } = project('train-your-agent.md');
    expect(guide.commands).toEqual([
      'npx shears process --config try.yaml',
      'npx shears view runs/try.jsonl',
    ]);
    runAll(dir, guide.commands);
    expectSolved(join(dir, 'runs/try.jsonl'), SOLUTION);
    // The viewer page holds the conversation Qwen Code had with the gateway.
    const page = JSON.stringify(readViewerPage(readFileSync(join(dir, 'runs/try.html'), 'utf8')).groups);
    expect(page).toContain('run_shell_command');
    expect(page).toContain('Done: ran the fix for fix-greeting.');
  });

  it('docs/harnesses/qwen-code.md: doctor passes, then Qwen Code plays the task file; reward 1', () => {
    const { dir, guide } = project('harnesses/qwen-code.md');
    expect(guide.commands).toEqual([
      'npx shears doctor --config qwen.yaml',
      'npx shears process --config qwen.yaml',
    ]);
    const [doctor] = runAll(dir, guide.commands);
    expect(doctor!.stdout).toMatch(/qwen/i);
    expectSolved(join(dir, 'runs/qwen.jsonl'), SOLUTION);
    expect(existsSync(join(dir, 'harnesses/node_modules/.bin/qwen'))).toBe(true);
  });

  it('the stand-in refuses a task without a solution, naming it, and the run fails', () => {
    const { dir } = project('harnesses/qwen-code.md');
    const task = JSON.parse(readFileSync(join(dir, 'tasks.jsonl'), 'utf8')) as Record<string, unknown>;
    delete task.solution;
    writeFileSync(join(dir, 'tasks.jsonl'), `${JSON.stringify({ ...task, id: 'no-solution' })}\n`);
    const result = execute(dir, 'npx shears process --config qwen.yaml');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('task(s) "no-solution" have none');
  });
});
