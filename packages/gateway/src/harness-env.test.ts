// The harness env end to end with a light harness (a node program on the openai SDK, started
// as a command in a real local sandbox) and an in-process AI SDK program, behind the phase-2
// scripted /generate server (real Qwen3 tokenizer and template): the task is solved on disk, the
// verifier's reward lands in the scored-group record, the GRPO row holds exactly what the server
// sampled, and the faults (hang, non-zero exit, request limit, requests after the end) are
// recorded as such.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  ConfigError,
  createRegistry,
  type RewardContext,
  runGroup,
  type ScoredGroupRecord,
  scoredGroupRecordSchema,
} from '@shears/core';
import type { ScriptedGeneratePolicy } from '@shears/core/test';
import { scoredDataFromRecord } from '@shears/grpo';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { stepCountIs, streamText, tool } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ManagedBackend, managedBackend, toolCallText } from '../test/backends.js';
import { entriesOf } from '../test/exactness.js';
import type { GatewayRecord, GatewayThreadRecord } from './gateway-record.js';
import { createHarnessEnv, type HarnessEnv, type HarnessEnvSettings, pickMainThread } from './harness-env.js';
import plugin from './plugin.js';

const LIGHT_HARNESS = fileURLToPath(new URL('../test/light-harness.mjs', import.meta.url));
const FIX = "sed -i 's/wrold/world/' greet.sh";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Calls `shell` to fix the typo, then answers; any other request gets a short text. */
function fixPolicy(
  toolName = 'shell',
  args: (command: string) => Record<string, unknown> = (command) => ({ command }),
): ScriptedGeneratePolicy {
  return (request) => {
    if (!request.promptText.includes(`"name": "${toolName}"`)) return 'Fix greeting';
    if (!request.promptText.includes('<tool_response>'))
      return `<think>\nFix the typo with the shell.\n</think>\n\n${toolCallText(toolName, args(FIX))}`;
    return '<think>\nThe typo is fixed.\n</think>\n\ngreet.sh now prints hello, world.';
  };
}

interface Run {
  record: ScoredGroupRecord;
  backend: ManagedBackend;
  env: HarnessEnv;
  onDisk: string[];
}

async function runHarness(
  settings: HarnessEnvSettings,
  options: { policy?: ScriptedGeneratePolicy; groupSize?: number } = {},
): Promise<Run> {
  const backend = await managedBackend({ policy: options.policy ?? fixPolicy() });
  const env = createHarnessEnv(settings);
  const sandboxes = createLocalSandboxProvider();
  cleanups.push(
    () => backend.close(),
    async () => env.close?.(),
    () => sandboxes.close(),
  );
  const onDisk: string[] = [];
  // The reward reads the file where the harness left it: the rollout's own sandbox.
  const observed: HarnessEnv = {
    ...env,
    async computeReward(item, rollout, context: RewardContext) {
      onDisk.push(new TextDecoder().decode(await context.sandbox.readFile('greet.sh')));
      return env.computeReward(item, rollout, context);
    },
  };
  const item = (await env.nextItem())!;
  const record = await runGroup({
    env: observed,
    item,
    server: backend.server,
    sandboxes,
    groupSize: options.groupSize ?? 1,
    allEqualScores: 'keep',
    retryBudget: 0,
  });
  expect(scoredGroupRecordSchema.parse(record)).toBeTruthy();
  return { record, backend, env, onDisk };
}

/** The GRPO row of rollout 0 holds exactly the tokens and logprobs the server sampled for its main thread. */
function expectExactRow(run: Run, turns: number) {
  const data = scoredDataFromRecord(run.record);
  expect(data).not.toBeNull();
  const tokens = data?.tokens[0] ?? [];
  const masks = data?.masks[0] ?? [];
  const logprobs = data?.inference_logprobs?.[0] ?? [];
  expect(run.record.rollouts[0]?.tokens?.splits).toBe(0);
  const sampled = entriesOf(tokens, run.backend.generate.generated);
  expect(sampled).toHaveLength(turns);
  const trained = tokens.filter((_, index) => masks[index] !== -100);
  expect(trained.length).toBeGreaterThan(0);
  expect(trained).toEqual(sampled.flatMap((entry) => entry.tokenIds));
  expect(logprobs.filter((_, index) => masks[index] !== -100)).toEqual(
    sampled.flatMap((entry) => entry.logprobs),
  );
}

describe('the harness env with a light harness command', () => {
  it('runs the harness in the sandbox; the verifier rewards the fix; the GRPO row is exactly what was sampled', async () => {
    const run = await runHarness({ command: `node ${LIGHT_HARNESS}`, mainTool: 'shell', timeoutMs: 60_000 });
    const rollout = run.record.rollouts[0]!;
    expect(rollout.outcome, rollout.outcomeReason ?? '').toBe('scored');
    expect(rollout.reward).toBe(1);
    expect(rollout.success).toBe(true);
    expect(run.onDisk).toEqual(['#!/bin/sh\necho "hello, world"\n']);
    expect(rollout.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(rollout.finalResponse).toBe('greet.sh now prints hello, world.');
    expect(rollout.steps[0]?.toolCalls[0]).toMatchObject({ name: 'shell', result: 'exit 0' });
    const details = rollout.rewardDetails as {
      harness: { exitCode: number; requests: unknown[]; mainThread: string };
      verifier: { exitCode: number };
    };
    expect(details.harness.exitCode).toBe(0);
    expect(details.harness.requests).toHaveLength(2);
    expect(details.verifier.exitCode).toBe(0);
    expect(rollout.usage.completionTokens).toBe(
      run.backend.generate.generated.reduce((sum, entry) => sum + entry.tokenIds.length, 0),
    );
    expectExactRow(run, 2);
  });

  it('a harness that exits non-zero is still scored, with its exit code in the record', async () => {
    const run = await runHarness({ command: `node ${LIGHT_HARNESS}`, env: { LIGHT_MODE: 'exit3' } });
    const rollout = run.record.rollouts[0]!;
    expect(rollout.outcome).toBe('scored');
    expect(rollout.reward).toBe(1);
    expect((rollout.rewardDetails as { harness: { exitCode: number } }).harness.exitCode).toBe(3);
  });

  it('a harness that cannot start is a failure with its cause and output, not a scored 0', async () => {
    const run = await runHarness({ command: 'echo "qwen: loading config" && no-such-harness-shears --yolo' });
    const rollout = run.record.rollouts[0]!;
    expect(rollout.outcome).toBe('infra_failure');
    expect(rollout.reward).toBeNull();
    expect(rollout.outcomeReason).toContain(
      'harness command exited 127 without calling the model (0 requests to the gateway): it could not start (command not found: check the harness is installed and on PATH, or set "bin" to its folder); its output ends:\n',
    );
    // The harness's own words, as a user would read them on the terminal.
    expect(rollout.outcomeReason).toMatch(/no-such-harness-shears.*not found/);
  });

  it('a harness that exits 0 without ever calling the model is a failure too', async () => {
    const run = await runHarness({ command: 'echo "nothing to do"' });
    const rollout = run.record.rollouts[0]!;
    expect(rollout.outcome).toBe('infra_failure');
    expect(rollout.outcomeReason).toMatch(
      /harness command exited 0 without calling the model .*its output ends:\nnothing to do/s,
    );
  });

  it("refuses a relative bin: it would be read in each rollout's workdir", () => {
    expect(() => createHarnessEnv({ preset: 'qwen-code', bin: './node_modules/.bin' })).toThrow(
      /bin "\.\/node_modules\/\.bin" must be an absolute path/,
    );
  });

  it('kills a harness that hangs at the wall-clock limit (outcome timeout), children included', async () => {
    const seconds = String(3000 + Math.floor(Math.random() * 500));
    const run = await runHarness({
      command: `node ${LIGHT_HARNESS}`,
      env: { LIGHT_MODE: 'hang', LIGHT_SLEEP: seconds },
      timeoutMs: 3_000,
    });
    const rollout = run.record.rollouts[0]!;
    expect(rollout.outcome).toBe('timeout');
    expect(rollout.outcomeReason).toBe('wall-clock limit of 3000 ms');
    expect(rollout.reward).toBeNull();
    // The request it made is still the conversation the viewer shows.
    expect(rollout.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant']);
    const processes = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
    expect(processes).not.toContain(`sleep ${seconds}`);
    expect(processes).not.toContain(LIGHT_HARNESS);
  });

  it('stops a harness at its request limit: the next request is refused and the rollout is a model failure', async () => {
    const run = await runHarness({ command: `node ${LIGHT_HARNESS}`, maxRequests: 1 });
    const rollout = run.record.rollouts[0]!;
    expect(rollout.outcome).toBe('model_failure');
    expect(rollout.outcomeReason).toBe('no final answer (max_turns)');
    expect(rollout.reward).toBe(0);
    expect(run.backend.generate.generated).toHaveLength(1);
  });

  it('stops a harness that keeps opening conversations at its thread limit: a model failure, the threads it opened recorded', async () => {
    const run = await runHarness({
      command: `node ${LIGHT_HARNESS}`,
      env: { LIGHT_MODE: 'spawn' },
      mainTool: 'shell',
      maxThreads: 2,
    });
    const rollout = run.record.rollouts[0]!;
    expect(rollout.outcome).toBe('model_failure');
    expect(rollout.outcomeReason).toBe('no final answer (max_turns)');
    expect(rollout.reward).toBe(0);
    // A sub-agent (t0), the main loop's first turn (t1), then the next sub-agent: refused.
    expect(run.backend.generate.generated).toHaveLength(2);
    const summary = run.env.runSummary(rollout.rolloutId);
    expect(summary).toMatchObject({ threadLimitReached: true, requestLimitReached: false, mainThread: 't1' });
    expect(summary?.requests.map((request) => [request.threadId, request.httpStatus])).toEqual([
      ['t0', 200],
      ['t1', 200],
      [null, 403],
    ]);
  });

  it('refuses requests made with a rollout key after the rollout ended', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'shears-harness-leak-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const leakTo = join(folder, 'session.json');
    const run = await runHarness({
      command: `node ${LIGHT_HARNESS}`,
      env: { LIGHT_MODE: 'leak', LIGHT_LEAK_TO: leakTo },
    });
    expect(run.record.rollouts[0]?.outcome).toBe('scored');
    const leaked = JSON.parse(await readFile(leakTo, 'utf8')) as { url: string; key: string };
    const response = await fetch(`${leaked.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${leaked.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'one more' }] }),
    });
    // The env closes its gateway only with the env; the gateway is still up and refuses the key.
    expect(response.status).toBe(401);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/ended|closed/i);
    expect(run.backend.generate.generated).toHaveLength(2);
  });
});

describe('the harness env with an in-process SDK program', () => {
  it('runs an AI SDK program whose tools act in the rollout sandbox; the GRPO row is exact', async () => {
    const policy: ScriptedGeneratePolicy = (request) => {
      if (!request.promptText.includes('<tool_response>'))
        return `<think>\nFix it.\n</think>\n\n${toolCallText('shell', { command: FIX })}`;
      return '<think>\nDone.\n</think>\n\nFixed.';
    };
    const run = await runHarness(
      {
        mainTool: 'shell',
        program: async ({ openaiBaseUrl, apiKey, model, prompt, sandbox, signal }) => {
          const provider = createOpenAICompatible({
            name: 'shears',
            baseURL: openaiBaseUrl,
            apiKey,
            includeUsage: true,
          });
          const result = streamText({
            model: provider.chatModel(model),
            system: 'You fix files with the shell.',
            prompt,
            stopWhen: stepCountIs(5),
            maxRetries: 0,
            abortSignal: signal,
            tools: {
              shell: tool({
                description: 'Run a shell command in the workspace',
                inputSchema: z.object({ command: z.string() }),
                execute: async ({ command }) => (await sandbox.exec(command)).output || 'ok',
              }),
            },
          });
          return (await result.text) === 'Fixed.' ? 0 : 1;
        },
      },
      { policy },
    );
    const rollout = run.record.rollouts[0]!;
    expect(rollout.outcome, rollout.outcomeReason ?? '').toBe('scored');
    expect(rollout.reward).toBe(1);
    expect(run.onDisk).toEqual(['#!/bin/sh\necho "hello, world"\n']);
    expect(rollout.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expectExactRow(run, 2);
  });

  it('a program that ignores its signal is cut at the limit (timeout)', async () => {
    const run = await runHarness({
      timeoutMs: 500,
      program: () => new Promise<number>(() => {}),
    });
    expect(run.record.rollouts[0]?.outcome).toBe('timeout');
  });
});

describe('the harness env settings and plugin', () => {
  it('is registered as the `harness` env; bad settings are refused naming the setting', async () => {
    const registry = createRegistry().use(plugin);
    expect(registry.list('envs')).toContain('harness');
    const env = await registry.create('envs', 'harness', { preset: 'codex' });
    expect(env.id).toBe('harness');
    await expect(registry.create('envs', 'harness', { preset: 'codx' })).rejects.toThrow(
      /unknown preset "codx" \(available: qwen-code, opencode, claude-code, codex/,
    );
    await expect(registry.create('envs', 'harness', { preset: 'codex', timeout: 5 })).rejects.toThrow(
      /settings\.timeout: unknown setting \(did you mean "timeoutMs"\?\)/,
    );
    await expect(registry.create('envs', 'harness', {})).rejects.toThrow(/give "preset"/);
    expect(() => createHarnessEnv({ preset: 'codex', model: 'a "quoted" model' })).toThrow(ConfigError);
    expect(() => createHarnessEnv({ command: 'true', tasks: [{ id: 'a', prompt: 'p' } as never] })).toThrow(
      /verify/,
    );
  });

  it('loads tasks from a JSONL file, naming the line of a bad one; a seed fixes the order', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'shears-harness-tasks-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const tasks = Array.from({ length: 6 }, (_, index) => ({
      id: `t${index}`,
      prompt: `task ${index}`,
      verify: 'true',
    }));
    const good = join(folder, 'tasks.jsonl');
    await writeFile(good, `${tasks.map((task) => JSON.stringify(task)).join('\n')}\n`);
    const order = async (seed?: number) => {
      const env = createHarnessEnv({ command: 'true', tasks: good, ...(seed !== undefined ? { seed } : {}) });
      return Promise.all(tasks.map(async () => (await env.nextItem())?.id));
    };
    expect(await order()).toEqual(['t0', 't1', 't2', 't3', 't4', 't5']);
    const seeded = await order(7);
    expect(seeded).toEqual(await order(7));
    expect([...seeded].sort()).toEqual(['t0', 't1', 't2', 't3', 't4', 't5']);
    expect(seeded).not.toEqual(await order());
    const bad = join(folder, 'bad.jsonl');
    await writeFile(bad, `${JSON.stringify(tasks[0])}\n{"id": "t1", "prompt": "no verifier"}\n`);
    expect(() => createHarnessEnv({ command: 'true', tasks: bad })).toThrow(/bad\.jsonl line 2: verify/);
  });
});

describe('pickMainThread', () => {
  const thread = (id: string, requestIndices: number[], toolNames: string[]) =>
    ({ id, requestIndices, toolNames }) as unknown as GatewayThreadRecord;
  const record = (threads: GatewayThreadRecord[]) => ({ threads }) as unknown as GatewayRecord;

  it('is the first thread to offer the main tool, not a later and busier one (a sub-agent)', () => {
    const title = thread('t0', [0], []);
    const main = thread('t1', [1, 2, 9], ['Bash', 'Agent']);
    const subAgent = thread('t2', [3, 4, 5, 6, 7, 8], ['Bash']);
    expect(pickMainThread(record([title, main, subAgent]), 'Bash')?.id).toBe('t1');
    expect(pickMainThread(record([subAgent, title, main]), 'Bash')?.id).toBe('t1');
    // Without a main tool, or when no thread offered it: the busiest thread.
    expect(pickMainThread(record([title, main, subAgent]), undefined)?.id).toBe('t2');
    expect(pickMainThread(record([title, main]), 'shell')?.id).toBe('t1');
    expect(pickMainThread(record([]), 'Bash')).toBeUndefined();
  });
});
