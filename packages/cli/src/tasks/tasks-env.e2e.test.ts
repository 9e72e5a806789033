// The `tasks` env end to end: tasks from a JSONL file, a scripted policy behind a real
// OpenAI-compatible HTTP server issuing real terminal tool calls, set-up and verifier commands run
// in the rollout's own sandbox — a local one, and a container on the test run's private dockerd.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import { createScriptedServer, type ScriptedChatRequest, type ScriptedReply } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 180_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-tasks-e2e-'));
const dockerHost = process.env.SHEARS_TEST_DOCKER_HOST;
const dockerImage = process.env.SHEARS_TEST_DOCKER_IMAGE;

const TASKS = [
  {
    id: 'greet',
    prompt: 'Write "hello " followed by the name in name.txt into greeting.txt.',
    setup: ["printf 'world' > name.txt"],
    verify: 'test "$(cat greeting.txt)" = "hello world"',
    difficulty: 1,
  },
  {
    id: 'half',
    prompt: 'Create out.txt.',
    verify: { command: 'if [ -f out.txt ]; then echo 0.5; else echo 0; fi', reward: 'output' },
    difficulty: 2,
    tools: ['terminal'],
  },
];

// Per task, rollouts alternate between the right command and a wrong one (the group spreads).
const attempts = new Map<string, number>();
const COMMANDS: Record<string, [string, string]> = {
  greet: ['echo "hello $(cat name.txt)" > greeting.txt', 'echo hi > greeting.txt'],
  half: ['touch out.txt', 'touch other.txt'],
};
function policy(request: ScriptedChatRequest): ScriptedReply {
  const prompt = String(request.messages.find((message) => message.role === 'user')?.content ?? '');
  const task = prompt.includes('greeting.txt') ? 'greet' : 'half';
  if (request.messages.some((message) => message.role === 'tool')) return { content: 'done' };
  const attempt = attempts.get(task) ?? 0;
  attempts.set(task, attempt + 1);
  return {
    toolCalls: [{ name: 'terminal', arguments: { command: COMMANDS[task]![attempt % 2]! } }],
  };
}

let model: Awaited<ReturnType<typeof createScriptedServer>>;
beforeAll(async () => {
  model = await createScriptedServer({ policy });
  writeFileSync(join(dir, 'tasks.jsonl'), `${TASKS.map((task) => JSON.stringify(task)).join('\n')}\n`);
});
afterAll(async () => {
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(name: string, sandbox: string[]): string {
  writeFileSync(
    join(dir, name),
    [
      'env: { name: tasks, group_size: 2, settings: { file: tasks.jsonl } }',
      `server: { provider: openai, base_url: ${model.url}, model: scripted, api_key: none }`,
      ...sandbox,
      'run: { groups: 2, concurrency: 2, report: false }',
    ].join('\n'),
  );
  return name;
}

function readGroups(path: string): ScoredGroupRecord[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

function expectGraded(groups: ScoredGroupRecord[]) {
  const byTask = new Map(groups.map((group) => [group.taskId, group]));
  expect([...byTask.keys()].sort()).toEqual(['greet', 'half']);
  // The set-up ran (name.txt), the agent's command ran, the verifier judged it: one right, one wrong.
  expect([...byTask.get('greet')!.scores].sort()).toEqual([0, 1]);
  expect(byTask.get('greet')!.rollouts.find((rollout) => rollout.reward === 1)?.success).toBe(true);
  // The output verifier's last line is the reward.
  expect([...byTask.get('half')!.scores].sort()).toEqual([0, 0.5]);
  expect(byTask.get('half')!.item).toMatchObject({ difficulty: 2, tools: ['terminal'] });
  for (const group of groups)
    for (const rollout of group.rollouts) expect(rollout.outcome, rollout.outcomeReason ?? '').toBe('scored');
}

describe('the tasks env', () => {
  it('runs tasks from a JSONL file in local sandboxes: set-up, the agent, the verifier by exit code and by output', async () => {
    attempts.clear();
    const run = await runShears(['process', '--config', config('local.yaml', []), '--out', 'runs/local.jsonl'], {
      cwd: dir,
    });
    expect(run.code, run.stderr).toBe(0);
    expectGraded(readGroups(join(dir, 'runs/local.jsonl')));
  });

  it("reads the seed's spelling, tasks: { task_file }, as the same env", async () => {
    attempts.clear();
    const seedStyle = config('seed-style.yaml', []).replace('.yaml', '');
    const text = readFileSync(join(dir, 'seed-style.yaml'), 'utf8').replace(
      'env: { name: tasks, group_size: 2, settings: { file: tasks.jsonl } }',
      'env: { group_size: 2 }\ntasks: { task_file: tasks.jsonl }',
    );
    expect(text).toContain('task_file');
    writeFileSync(join(dir, `${seedStyle}.yaml`), text);
    const run = await runShears(['process', '--config', `${seedStyle}.yaml`, '--out', 'runs/seed-style.jsonl'], {
      cwd: dir,
    });
    expect(run.code, run.stderr).toBe(0);
    expectGraded(readGroups(join(dir, 'runs/seed-style.jsonl')));
  });

  it.skipIf(!dockerHost)('runs the same tasks in Docker containers', async () => {
    attempts.clear();
    const run = await runShears(
      [
        'process',
        '--config',
        config('docker.yaml', [
          `sandbox: { provider: docker, settings: { hosts: ["${dockerHost}"], image: "${dockerImage}" } }`,
        ]),
        '--out',
        'runs/docker.jsonl',
      ],
      { cwd: dir },
    );
    expect(run.code, run.stderr).toBe(0);
    expectGraded(readGroups(join(dir, 'runs/docker.jsonl')));
  });

  it('refuses a bad task file before any rollout, naming every line and field', async () => {
    writeFileSync(
      join(dir, 'bad.jsonl'),
      [
        JSON.stringify({ id: 'a', prompt: 'p', verify: 'true' }),
        '{"id": "b", "prompt": ',
        JSON.stringify({ id: 'c', verify: 'true' }),
        JSON.stringify({ id: 'a', prompt: 'again', verify: 'true' }),
        JSON.stringify({ id: 'e', promt: 'typo', prompt: 'p', verify: 'true' }),
        JSON.stringify({ id: 'f', prompt: 'p', verify: { command: 'true', reward: 'exitcode' } }),
        JSON.stringify({ id: 'g', prompt: 'p' }),
      ].join('\n'),
    );
    const before = model.requests.length;
    const run = await runShears(
      ['process', '--env', 'tasks', '--env.settings', '{file: bad.jsonl}', '--out', 'runs/bad.jsonl'],
      { cwd: dir },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('bad.jsonl line 2');
    expect(run.stderr).toMatch(/bad\.jsonl line 3: field "prompt"/);
    expect(run.stderr).toMatch(/bad\.jsonl line 4: field "id": "a" is already the id of the task at bad\.jsonl line 1/);
    expect(run.stderr).toMatch(/bad\.jsonl line 5: field "promt": not a task field/);
    expect(run.stderr).toMatch(/bad\.jsonl line 6: field "verify/);
    expect(run.stderr).toMatch(/bad\.jsonl line 7: field "verify"/);
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(model.requests.length).toBe(before);

    writeFileSync(join(dir, 'tool.jsonl'), JSON.stringify({ prompt: 'p', verify: 'true', tools: ['termnial'] }));
    const tool = await runShears(
      ['process', '--env', 'tasks', '--env.settings', '{file: tool.jsonl}', '--out', 'runs/tool.jsonl'],
      { cwd: dir },
    );
    expect(tool.code).toBe(2);
    expect(tool.stderr).toMatch(/tool\.jsonl line 1: field "tools": no tool "termnial" \(available: .*terminal/);

    const missing = await runShears(
      ['process', '--env', 'tasks', '--env.settings', '{file: nope.jsonl}', '--out', 'runs/nope.jsonl'],
      { cwd: dir },
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/env\.settings\.file: "nope\.jsonl" \(resolved against the working directory .*nope\.jsonl\) does not exist/);
  });

  it('refuses tasks with a judge rubric when no judge is configured, instead of dropping the rubric', async () => {
    writeFileSync(join(dir, 'rubric.jsonl'), JSON.stringify({ prompt: 'p', verify: 'true', rubric: 'Be brief.' }));
    const run = await runShears(
      ['process', '--env', 'tasks', '--env.settings', '{file: rubric.jsonl}', '--out', 'runs/rubric.jsonl'],
      { cwd: dir },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/judge: required, because the task file gives rubrics for the judge \(rubric\.jsonl line 1\)/);
  });
});
