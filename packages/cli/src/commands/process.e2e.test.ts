// `shears process` end to end, on what a run produces: output never overwritten, --resume of the
// same run only, failures shown while running and in the exit code, the circuit breaker, an env's
// own bug as env_error, success defined by the env or a threshold, and redaction that leaves
// ordinary text and JSON alone. Real parts: the scripted OpenAI-compatible HTTP server, local
// sandboxes, a third-party pack loaded by path, real files.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import { createScriptedServer } from '@shears/core/test';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { writeProbePack } from '../test-support/probe-pack.js';
import { runShears, withFlags } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const root = mkdtempSync(join(tmpdir(), 'shears-process-e2e-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const pack = writeProbePack(root);
let dirs = 0;
/** A fresh working directory per test, so no test sees another's files. */
function workdir(): string {
  const dir = join(root, `case-${++dirs}`);
  mkdirSync(dir);
  return dir;
}

function readGroups(path: string): ScoredGroupRecord[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as { port: number }).port;
  await new Promise((done) => server.close(done));
  return port;
}

const probe = (...args: string[]) => [
  'process',
  '--plugins',
  JSON.stringify([pack]),
  '--env',
  'probe',
  ...args,
];

describe('shears process: every group dropped as all-equal', () => {
  it('says how many groups in a row were dropped because every rollout got the same score', async () => {
    const dir = workdir();
    // The scripted policy answers every task right: every group's scores are equal.
    const run = await runShears(
      probe('--groups', '4', '--group-size', '2', '--out', 'runs/eq.jsonl', '--no-report'),
      {
        cwd: dir,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /^3 groups in a row dropped: all scores equal \(every rollout of a group got the same score/m,
    );
    expect(run.stderr.match(/groups in a row dropped/g)).toHaveLength(1);
    expect(run.stderr).toContain('4 dropped (4 all scores equal)');
  });
});

describe('shears process never overwrites output', () => {
  it('refuses an existing --out, report or run record, leaves them untouched, and replaces them with --force', async () => {
    const dir = workdir();
    writeFileSync(join(dir, 'important.txt'), 'my notes\n');
    const refused = await runShears(probe('--groups', '1', '--out', 'important.txt'), { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /important\.txt \(9 B, modified .*\) already exists; shears never overwrites output/,
    );
    expect(refused.stderr).toContain(
      '--resume to continue that run, or --force to replace it, or --out OTHER.jsonl',
    );
    expect(readFileSync(join(dir, 'important.txt'), 'utf8')).toBe('my notes\n');

    // Siblings: the report and the run record are outputs too.
    writeFileSync(join(dir, 'runs.html'), '<p>an older report</p>');
    const report = await runShears(probe('--groups', '1', '--out', 'runs.jsonl'), { cwd: dir });
    expect(report.code).toBe(2);
    expect(report.stderr).toMatch(/runs\.html \(\d+ B, .*already exists/);
    expect(existsSync(join(dir, 'runs.jsonl'))).toBe(false);
    writeFileSync(join(dir, 'other.run.json'), '{}');
    const record = await runShears(probe('--groups', '1', '--out', 'other.jsonl', '--no-report'), {
      cwd: dir,
    });
    expect(record.code).toBe(2);
    expect(record.stderr).toContain('other.run.json');

    const forced = await runShears(probe('--groups', '1', '--out', 'important.txt', '--force'), { cwd: dir });
    expect(forced.code, forced.stderr).toBe(0);
    expect(readGroups(join(dir, 'important.txt'))).toHaveLength(1);

    // A second run to the default path is refused rather than replacing the first.
    expect((await runShears(probe('--groups', '1'), { cwd: dir })).code).toBe(0);
    const again = await runShears(probe('--groups', '1'), { cwd: dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('runs/shears.jsonl');
  });

  it('leaves no empty output behind when the run fails before its first group, so the same command can run again', async () => {
    const dir = workdir();
    // The demo env without its only toolset: a config error found when the first group starts.
    const args = ['process', '--env', 'demo', '--groups', '1', '--out', 'runs/x.jsonl', '--no-report'];
    const failed = await runShears([...args, '--env.toolsets.disabled', '[terminal]'], { cwd: dir });
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain('env.toolsets: disabled [terminal] leaves env demo no tool');
    expect(existsSync(join(dir, 'runs/x.jsonl'))).toBe(false);
    expect(existsSync(join(dir, 'runs/x.run.json'))).toBe(false);
    const again = await runShears(args, { cwd: dir });
    expect(again.code, again.stderr).toBe(0);
    expect(readGroups(join(dir, 'runs/x.jsonl'))).toHaveLength(1);
  });

  it('names an output it cannot write, without a stack trace', async () => {
    const dir = workdir();
    writeFileSync(join(dir, 'a-file'), 'x');
    const run = await runShears(probe('--groups', '1', '--out', 'a-file/out.jsonl'), { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^error: cannot write a-file\/out\.(jsonl|run\.json): a parent of it is a file, not a directory$/m,
    );
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});

describe('shears process --resume', () => {
  it('keeps the complete groups of the same run, redoes partial and missing ones in the same task order', async () => {
    const dir = workdir();
    const args = probe(
      '--env.settings',
      '{"tasks":3}',
      '--groups',
      '6',
      '--group-size',
      '2',
      '--out',
      'runs/p.jsonl',
      '--no-report',
    );
    const first = await runShears(args, { cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    const path = join(dir, 'runs/p.jsonl');
    const full = readGroups(path);
    expect(full.map((group) => group.taskId).sort()).toEqual(['q0', 'q0', 'q1', 'q1', 'q2', 'q2']);

    // An interrupted run: three groups written, the last of them partial.
    const lines = readFileSync(path, 'utf8').trim().split('\n').slice(0, 3);
    const partial = JSON.parse(lines[2]!) as ScoredGroupRecord;
    partial.rollouts[1]!.outcome = 'aborted';
    partial.partial = { reason: '1 of 2 rollouts were stopped', stopped: 1 };
    lines[2] = JSON.stringify(partial);
    writeFileSync(path, `${lines.join('\n')}\n`);
    const keptIds = lines.slice(0, 2).map((line) => (JSON.parse(line) as ScoredGroupRecord).groupId);

    const resumed = await runShears([...args, '--resume'], { cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(
      'resuming runs/p.jsonl: 2 complete group(s) kept, 1 partial group(s) to redo',
    );
    const after = readGroups(path);
    expect(after).toHaveLength(6);
    expect(after.slice(0, 2).map((group) => group.groupId)).toEqual(keptIds);
    expect(after.every((group) => !group.partial)).toBe(true);
    expect(after.map((group) => group.taskId).sort()).toEqual(['q0', 'q0', 'q1', 'q1', 'q2', 'q2']);
    expect(resumed.stdout).toContain('(2 kept from the earlier run)');
  });

  it('refuses to resume a file of another configuration or without a run record, naming what differs', async () => {
    const dir = workdir();
    const args = probe('--groups', '2', '--group-size', '2', '--out', 'runs/p.jsonl', '--no-report');
    expect((await runShears(args, { cwd: dir })).code).toBe(0);
    const before = readFileSync(join(dir, 'runs/p.jsonl'), 'utf8');
    const other = await runShears(
      [...withFlags(args, ['--group-size', '3', '--model', 'other-model']), '--resume'],
      {
        cwd: dir,
      },
    );
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('cannot resume runs/p.jsonl: it was made by a different run');
    expect(other.stderr).toContain('server.model was null, now "other-model"');
    expect(other.stderr).toContain('env.group_size was 2, now 3');
    const settings = await runShears([...args, '--resume', '--env.settings.answer', 'wrong'], { cwd: dir });
    expect(settings.code).toBe(2);
    expect(settings.stderr).toMatch(/env\.settings was \{.*\}, now \{"answer":"wrong"/);
    // What the sandbox gives a rollout and the tools it may call are part of the run too.
    const sandbox = await runShears(
      [...args, '--resume', '--sandbox.settings.env', '{"GREETING": "hi"}', '--env.tools', '["read_file"]'],
      { cwd: dir },
    );
    expect(sandbox.code, sandbox.stderr).toBe(2);
    expect(sandbox.stderr).toContain('sandbox.settings was {}, now {"env":{"GREETING":"hi"}}');
    expect(sandbox.stderr).toContain('env.tools was null, now ["read_file"]');
    expect(readFileSync(join(dir, 'runs/p.jsonl'), 'utf8')).toBe(before);

    rmSync(join(dir, 'runs/p.run.json'));
    const unknown = await runShears([...args, '--resume'], { cwd: dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('runs/p.run.json, which says which run wrote it, is missing');
  });

  it('refuses to resume after the plugin package that made the run changed version', async () => {
    // An upgraded reward function is another run: its groups must not be mixed with the old ones.
    const dir = workdir();
    const packDir = join(dir, 'probe-pkg');
    mkdirSync(packDir);
    writeProbePack(packDir);
    const manifest = (version: string) =>
      JSON.stringify({ name: 'probe-pkg', version, type: 'module', exports: './probe-pack.mjs' });
    writeFileSync(join(packDir, 'package.json'), manifest('1.0.0'));
    const args = [
      'process',
      '--plugins',
      JSON.stringify([packDir]),
      '--env',
      'probe',
      '--groups',
      '2',
      '--group-size',
      '2',
      '--out',
      'runs/v.jsonl',
      '--no-report',
    ];
    expect((await runShears(args, { cwd: dir })).code).toBe(0);
    const record = JSON.parse(readFileSync(join(dir, 'runs/v.run.json'), 'utf8'));
    expect(record.identity.versions[packDir]).toBe('probe-pkg@1.0.0');
    expect(record.identity.versions.shears).toMatch(/^\d+\.\d+\.\d+/);
    // The same code resumes.
    expect((await runShears([...args, '--resume'], { cwd: dir })).code).toBe(0);
    writeFileSync(join(packDir, 'package.json'), manifest('1.1.0'));
    const upgraded = await runShears([...args, '--resume'], { cwd: dir });
    expect(upgraded.code, upgraded.stderr).toBe(2);
    expect(upgraded.stderr).toContain('cannot resume runs/v.jsonl: it was made by a different run');
    expect(upgraded.stderr).toContain('probe-pkg@1.0.0');
    expect(upgraded.stderr).toContain('probe-pkg@1.1.0');
  });

  it('refuses when a task changed under the same id', async () => {
    const dir = workdir();
    const tasks = join(dir, 'tasks.json');
    writeFileSync(tasks, JSON.stringify([{ id: 't1', prompt: 'Say right.' }]));
    const args = probe(
      '--env.settings.tasksFile',
      tasks,
      '--groups',
      '2',
      '--out',
      'runs/t.jsonl',
      '--no-report',
    );
    expect((await runShears(args, { cwd: dir })).code).toBe(0);
    const lines = readFileSync(join(dir, 'runs/t.jsonl'), 'utf8').trim().split('\n');
    writeFileSync(join(dir, 'runs/t.jsonl'), `${lines[0]}\n`);
    writeFileSync(tasks, JSON.stringify([{ id: 't1', prompt: 'Say wrong.' }]));
    const run = await runShears([...args, '--resume'], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('task "t1" is not the task it was run on (prompt changed)');
  });
});

describe('shears process: failures are shown, counted and end the run', () => {
  it('prints each failure reason once, counts it in the summary, stops when it repeats, and exits non-zero', async () => {
    const dir = workdir();
    const port = await closedPort();
    const run = await runShears(
      probe(
        '--provider',
        'openai',
        '--base-url',
        `http://127.0.0.1:${port}/v1`,
        '--model',
        'm',
        '--groups',
        '20',
        '--group-size',
        '2',
        '--concurrency',
        '2',
        '--run.max_retries',
        '1',
        '--run.max_repeated_failures',
        '6',
        '--server.settings',
        '{"retry":{"maxRetries":0}}',
        '--out',
        'runs/down.jsonl',
        '--no-report',
      ),
      { cwd: dir },
    );
    expect(run.code).toBe(4);
    // The reason, with the server's address (not a secret), printed once while running.
    const firstSeen =
      run.stderr.match(/^failed: infra_failure \(retrying\): server: .*connection failed/gm) ?? [];
    expect(firstSeen).toHaveLength(1);
    expect(run.stderr).toContain(`127.0.0.1:${port}`);
    expect(run.stderr).toMatch(
      /stopping early: the same failure repeated 6 times with no rollout scored in between \(run\.max_repeated_failures 6\)/,
    );
    expect(run.stderr).toMatch(
      /failures \(attempts, retries included\):\n\s+\d+ × infra_failure \(\d+ retried\): server: .*connection failed/,
    );
    expect(run.stderr).toMatch(/stopped early \(exit 4\)/);
    // Stopped long before 20 groups, and the summary names the real reason groups were dropped.
    const groups = readGroups(join(dir, 'runs/down.jsonl'));
    expect(groups.length).toBeLessThan(20);
    expect(run.stderr).toMatch(/\d+ dropped \((\d+ no valid score(, )?)?(\d+ partial: stopped mid-group)?\)/);
    expect(run.stderr).not.toContain('all scores equal');

    const off = await runShears(
      probe(
        '--provider',
        'openai',
        '--base-url',
        `http://127.0.0.1:${port}/v1`,
        '--model',
        'm',
        '--groups',
        '2',
        '--group-size',
        '2',
        '--run.max_retries',
        '0',
        '--run.max_repeated_failures',
        '0',
        '--server.settings',
        '{"retry":{"maxRetries":0}}',
        '--out',
        'runs/down2.jsonl',
        '--no-report',
      ),
      { cwd: dir },
    );
    // Every rollout failed: never exit 0.
    expect(off.code).toBe(3);
    expect(off.stderr).toContain('no rollout got a reward (exit 3)');
    expect(off.stderr).toContain('2 dropped (2 no valid score)');
  });

  it("classifies an exception from the env's reward as env_error: stack printed once, never retried", async () => {
    const dir = workdir();
    const run = await runShears(
      probe(
        '--env.settings.reward',
        'throw',
        '--groups',
        '2',
        '--group-size',
        '2',
        '--out',
        'runs/bug.jsonl',
        '--no-report',
      ),
      { cwd: dir },
    );
    expect(run.code).toBe(3);
    expect(run.stderr.match(/^failed: env_error: env "probe" reward threw TypeError/gm)).toHaveLength(1);
    expect(run.stderr).toContain('(a bug in the env: not retried)');
    // The stack, pointing into the env's code, once.
    expect(run.stderr.match(/at rewardFailsHere \(.*probe-pack\.mjs:\d+:\d+\)/g)).toHaveLength(1);
    const groups = readGroups(join(dir, 'runs/bug.jsonl'));
    for (const rollout of groups.flatMap((group) => group.rollouts))
      expect(rollout).toMatchObject({ outcome: 'env_error', attempts: 1, reward: null });
    expect(run.stderr).toMatch(/4 × env_error: env "probe" reward threw TypeError/);
  });
});

describe('shears process: success and redaction', () => {
  it("counts solved by the env's verdict, or by run.success_threshold", async () => {
    const dir = workdir();
    const args = probe(
      '--env.settings',
      '{"score":0.5,"success":true}',
      '--groups',
      '1',
      '--group-size',
      '2',
      '--no-report',
    );
    const byEnv = await runShears([...args, '--out', 'a.jsonl'], { cwd: dir });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    expect(byEnv.stderr).toMatch(/^q0\s+1\s+2\s+0\.50\s+100%\s+0$/m);
    expect(byEnv.stderr).toContain("solved: the env's verdict");
    const byThreshold = await runShears([...args, '--out', 'b.jsonl', '--run.success_threshold', '0.6'], {
      cwd: dir,
    });
    expect(byThreshold.stderr).toMatch(/^q0\s+1\s+2\s+0\.50\s+0%\s+0$/m);
    expect(byThreshold.stderr).toContain('solved: reward >= 0.6 (run.success_threshold)');
  });

  it('leaves prompts, transcripts and JSON alone with a dummy key, keeps base_url visible, and strips URL userinfo', async () => {
    const dir = workdir();
    const model = await createScriptedServer({
      policy: () => ({ content: 'the right answer, true and tested' }),
    });
    try {
      writeFileSync(
        join(dir, 'dummy.yaml'),
        [
          `plugins: [${JSON.stringify(pack)}]`,
          'env: { name: probe, group_size: 2 }',
          'server: { provider: openai, base_url: "${BASE_URL}", model: m, api_key: "${OPENAI_API_KEY}" }',
          'run: { groups: 2 }',
        ].join('\n'),
      );
      for (const key of ['shell', 'true', 'test']) {
        const run = await runShears(
          ['process', '--config', 'dummy.yaml', '--out', `runs/dummy-${key}.jsonl`],
          {
            cwd: dir,
            env: { OPENAI_API_KEY: key, BASE_URL: model.url },
          },
        );
        expect(run.code, run.stderr).toBe(0);
        const text = readFileSync(join(dir, `runs/dummy-${key}.jsonl`), 'utf8');
        expect(text).not.toContain('[redacted]');
        const groups = readGroups(join(dir, `runs/dummy-${key}.jsonl`));
        expect(groups).toHaveLength(2);
        const rollout = groups[0]!.rollouts[0]!;
        expect(rollout.messages[0]).toMatchObject({ content: 'You are a careful shell assistant.' });
        expect(rollout.finalResponse).toBe('the right answer, true and tested');
        expect(rollout.finishedNaturally).toBe(true);
        expect(readFileSync(join(dir, `runs/dummy-${key}.html`), 'utf8')).not.toContain('[redacted]');
        // Not redacted, and the user is told why.
        expect(run.stderr).toMatch(/server\.api_key \(\d characters\): too short to tell from ordinary text/);
      }

      // A URL with userinfo: the host stays visible, the password never appears.
      const port = await closedPort();
      const run = await runShears(
        [
          ...probe(
            '--groups',
            '1',
            '--group-size',
            '1',
            '--run.max_retries',
            '0',
            '--out',
            'runs/userinfo.jsonl',
            '--no-report',
          ),
          '--provider',
          'openai',
          '--model',
          'm',
          '--base-url',
          `http://alice:pw-9f8e7d6c5b4a@127.0.0.1:${port}/v1`,
        ],
        { cwd: dir },
      );
      expect(run.code).toBe(3);
      expect(run.stderr + run.stdout + readFileSync(join(dir, 'runs/userinfo.jsonl'), 'utf8')).not.toContain(
        'pw-9f8e7d6c5b4a',
      );
      expect(run.stderr).toContain(`127.0.0.1:${port}`);
    } finally {
      await model.close();
    }
  });

  it('redacts a key from the environment that the config never names (read by shears or a plugin itself)', async () => {
    const dir = workdir();
    const key = 'BSA-e2e-4f3e2d1c0b9a8877';
    const model = await createScriptedServer({ policy: () => ({ content: `the search key is ${key}` }) });
    try {
      const run = await runShears(
        [
          ...probe('--groups', '1', '--group-size', '1', '--out', 'runs/env-key.jsonl'),
          '--provider',
          'openai',
          '--model',
          'm',
          '--base-url',
          model.url,
        ],
        { cwd: dir, env: { BRAVE_API_KEY: key } },
      );
      expect(run.code, run.stderr).toBe(0);
      const text = readFileSync(join(dir, 'runs/env-key.jsonl'), 'utf8');
      expect(text).not.toContain(key);
      expect(readGroups(join(dir, 'runs/env-key.jsonl'))[0]!.rollouts[0]!.finalResponse).toBe(
        'the search key is [redacted]',
      );
      expect(readFileSync(join(dir, 'runs/env-key.html'), 'utf8')).not.toContain(key);
    } finally {
      await model.close();
    }
  });
});
