// The `shears` executable itself (spawned from source through tsx): usage, per-command help,
// version, exit codes and stderr for arguments that must be refused rather than ignored, and
// Ctrl-C with real signals: the first drains (finished rollouts keep their rewards, the group is
// written as partial), the drain is bounded, and the second stops at once.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import { createScriptedServer, type ScriptedServer } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeProbePack } from './test-support/probe-pack.js';

const bin = join(import.meta.dirname, 'bin.ts');
// Resolved here: the command runs in a scratch directory that has no node_modules.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const nodeArgs = ['--conditions=@shears/source', '--import', tsx, bin];
const cwd = mkdtempSync(join(tmpdir(), 'shears-bin-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));
const shears = (...args: string[]) =>
  spawnSync(process.execPath, [...nodeArgs, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    cwd,
    env: { ...process.env, CI: 'true' },
  });

describe('shears bin', () => {
  it('prints usage with every command and exits 0 for --help', () => {
    const result = shears('--help');
    expect(result.status).toBe(0);
    for (const command of ['process', 'serve', 'evaluate', 'api', 'train', 'view', 'doctor', 'schema'])
      expect(result.stdout).toContain(`  ${command}`);
  });

  it('prints the version and exits 0', () => {
    const version = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')).version;
    const result = shears('--version');
    expect({ status: result.status, stdout: result.stdout }).toEqual({ status: 0, stdout: `${version}\n` });
  });

  it("prints a subcommand's own help: its flags, the config it reads and an example", () => {
    const result = shears('api', '--help');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Usage: shears api');
    expect(result.stdout).toMatch(/--port <N>\s+port of the trajectory API/);
    expect(result.stdout).toContain('Config read: api.');
    expect(result.stdout).toContain('shears api --port 8000');
    expect(result.stdout).not.toContain('--groups');
  });

  it('exits 2 with a message on stderr for a bad flag, and runs nothing', () => {
    const result = shears('process', '--gropus', '2');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("unknown option '--gropus' (Did you mean --groups?)");
    expect(result.stdout).toBe('');
  });

  it('refuses a positional config file, unknown short flags and flags a command does not have', () => {
    writeFileSync(join(cwd, 'shears.yaml'), 'run: { groups: 1 }\n');
    const cases: Array<[string[], string]> = [
      [
        ['process', 'shears.yaml'],
        'shears process takes no positional arguments, got "shears.yaml" (give a config file with --config FILE)',
      ],
      [['process', '-g', '2'], "unknown option '-g'"],
      [['process', '--open'], "unknown option '--open'; shears opens no browser"],
      [
        ['process', '--json'],
        "unknown option '--json'; shears process writes its data to the JSONL at --out",
      ],
      [
        ['view', 'runs/x.jsonl', '--out', 'x.html'],
        "unknown option '--out'; shears view writes the HTML to --html FILE",
      ],
      [
        ['api', '--env.group_size', '8'],
        '--env.group_size: shears api does not read env.group_size (it reads: api.host, api.port,',
      ],
    ];
    for (const [argv, message] of cases) {
      const result = shears(...argv);
      expect(result.stderr, argv.join(' ')).toContain(message);
      expect(result.status, argv.join(' ')).toBe(2);
    }
    // Nothing ran: no output file was written.
    expect(() => readFileSync(join(cwd, 'runs', 'shears.jsonl'))).toThrow();
  });

  it('stops `shears api` on the first Ctrl-C (only running commands drain)', async () => {
    const child = spawn(process.execPath, [...nodeArgs, 'api', '--port', '0', '--api.database', ':memory:'], {
      env: { ...process.env, CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await new Promise<void>((resolve) =>
        child.stdout!.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('listening on')) resolve();
        }),
      );
      child.kill('SIGINT');
      expect(await exit).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('names a missing file for view, without a stack trace', () => {
    const result = shears('view', join(tmpdir(), 'shears-no-such-file.jsonl'));
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /^error: cannot read .*shears-no-such-file\.jsonl: no such file or directory$/m,
    );
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
}, 180_000);

describe('shears bin: Ctrl-C', () => {
  let dir: string;
  let pack: string;
  const started: Running[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'shears-bin-signals-'));
    pack = writeProbePack(dir);
  });
  afterAll(async () => {
    for (const running of started) {
      running.child.kill('SIGKILL');
      await running.model.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  interface Running {
    model: ScriptedServer;
    child: ChildProcess;
    stderr: () => string;
    exit: Promise<number | null>;
  }

  async function start(
    name: string,
    settings: Record<string, unknown>,
    extra: string[] = [],
  ): Promise<Running> {
    // The first conversation answers at once; every other one hangs in the model call, as a
    // slow model does when the user presses Ctrl-C.
    const model = await createScriptedServer({
      policy: (_request, { callIndex }) =>
        callIndex === 0 ? { content: 'the right answer' } : { fault: 'hang' },
    });
    const child = spawn(
      process.execPath,
      [
        ...nodeArgs,
        'process',
        '--plugins',
        JSON.stringify([pack]),
        '--env',
        'probe',
        '--env.settings',
        JSON.stringify(settings),
        '--provider',
        'openai',
        '--base-url',
        model.url,
        '--model',
        'm',
        '--groups',
        '1',
        '--group-size',
        '3',
        '--concurrency',
        '3',
        '--out',
        `${name}.jsonl`,
        '--no-report',
        ...extra,
      ],
      { cwd: dir, env: { ...process.env, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const running = { model, child, stderr: () => stderr, exit };
    started.push(running);
    return running;
  }

  async function until(condition: () => boolean, running: Running): Promise<void> {
    let exited = false;
    void running.exit.then(() => {
      exited = true;
    });
    while (!condition()) {
      if (exited) throw new Error(`shears exited early:\n${running.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  function readGroup(name: string): ScoredGroupRecord {
    const lines = readFileSync(join(dir, `${name}.jsonl`), 'utf8')
      .trim()
      .split('\n');
    expect(lines).toHaveLength(1);
    return scoredGroupRecordSchema.parse(JSON.parse(lines[0]!));
  }

  it('the first Ctrl-C drains: a finished rollout keeps its reward, the others stop, and the group is written as partial', async () => {
    const marker = join(dir, 'drain.marker');
    const running = await start('drain', { marker, rewardMs: 1500 });
    await until(() => existsSync(marker), running);
    running.child.kill('SIGINT');
    expect(await running.exit).toBe(130);
    const stderr = running.stderr();
    expect(stderr).toContain('SIGINT: stopping: no new rollouts; finished ones still get their rewards');
    const group = readGroup('drain');
    const scored = group.rollouts.filter((rollout) => rollout.outcome === 'scored');
    expect(scored).toHaveLength(1);
    expect(scored[0]!.reward).toBe(1);
    expect(group.rollouts.filter((rollout) => rollout.outcome === 'aborted')).toHaveLength(2);
    expect(group.partial).toMatchObject({ stopped: 2 });
    expect(group.dropped).toMatchObject({ kind: 'partial' });
    expect(group.advantages).toEqual([null, null, null]);
    expect(stderr).toMatch(/interrupted \(exit 130\)/);
  }, 120_000);

  it('the drain is bounded by run.drain_timeout_ms: a reward that takes longer is stopped', async () => {
    const marker = join(dir, 'bound.marker');
    const running = await start('bound', { marker, rewardMs: 600_000 }, ['--run.drain_timeout_ms', '500']);
    await until(() => existsSync(marker), running);
    running.child.kill('SIGINT');
    expect(await running.exit).toBe(130);
    expect(running.stderr()).toContain('stopping: drain time is up; stopping the rewards still running');
    const group = readGroup('bound');
    expect(group.rollouts.every((rollout) => rollout.outcome === 'aborted')).toBe(true);
    expect(group.rollouts.some((rollout) => rollout.outcomeReason === 'aborted during reward')).toBe(true);
    expect(group.partial).toMatchObject({ stopped: 3 });
  }, 120_000);

  it('the second Ctrl-C stops at once and still writes the group, marked partial', async () => {
    const marker = join(dir, 'twice.marker');
    const running = await start('twice', { marker, rewardMs: 600_000 });
    await until(() => existsSync(marker), running);
    running.child.kill('SIGINT');
    await until(() => running.stderr().includes('stopping: no new rollouts'), running);
    running.child.kill('SIGINT');
    expect(await running.exit).toBe(130);
    expect(running.stderr()).toContain('SIGINT: stopping at once');
    const group = readGroup('twice');
    expect(group.rollouts.find((rollout) => rollout.outcomeReason === 'aborted during reward')).toBeDefined();
    expect(group.partial).toMatchObject({ stopped: 3 });
    expect(group.advantages).toEqual([null, null, null]);
  }, 120_000);
});
