import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createConcurrencyLimiter } from './concurrency-limiter.js';
import type { AgentResult } from './contracts/agent-result.js';
import type { ChatMessage } from './contracts/chat.js';
import type { EnvItem, EnvV1, RewardResult } from './contracts/env.js';
import type { GroupJudgeV1, JudgeSubject, Verdict } from './contracts/judge.js';
import { silentLogger } from './contracts/logger.js';
import type { SandboxProviderV1 } from './contracts/sandbox.js';
import { defineTool } from './contracts/tool.js';
import { EnvError, InvalidArgumentError, JudgeError, SandboxError, ServerError } from './errors.js';
import { filterToolsByToolsets, type GroupEvent, runGroup } from './group-runner.js';
import { scoredGroupRecordSchema } from './schemas/group-record.js';
import { rolloutOutcomeSchema } from './schemas/trajectory.js';
import { createScriptedServer, type ScriptedPolicy, type ScriptedServer } from './test/scripted-server.js';
import { createScriptedServerClient } from './test/scripted-server-client.js';
import { createTempSandboxProvider, type TempSandboxProvider } from './test/temp-sandbox-provider.js';

let root: string;
let provider: TempSandboxProvider;
let server: ScriptedServer | undefined;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'shears-group-test-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  expect(provider.liveCount).toBe(0);
  expect(await readdir(root)).toEqual([]);
});

/** Writes its text into the sandbox workspace. */
const writeTool = defineTool({
  name: 'write_note',
  description: 'Write a note file',
  inputSchema: z.object({ text: z.string() }),
  async execute(args, context) {
    await context.sandbox.writeFile('note.txt', args.text);
    return 'written';
  },
});
const catTool = defineTool({
  name: 'cat_note',
  description: 'Read the note file',
  inputSchema: z.object({}),
  async execute(_args, context) {
    const result = await context.sandbox.exec('cat note.txt');
    return result.output;
  },
});

interface NoteItem extends EnvItem {
  answer: string;
}

/** An env whose reward reads the note back through the rollout's own tools, in its own sandbox. */
function noteEnv(reward?: (note: string, call: number) => Promise<RewardResult>): EnvV1<NoteItem> {
  let rewardCalls = 0;
  return {
    specificationVersion: 'v1',
    id: 'notes',
    async nextItem() {
      return { id: 'task-1', prompt: 'Write the word yes into note.txt', answer: 'yes' };
    },
    buildMessages: (item) => [{ role: 'user', content: item.prompt }],
    tools: () => [writeTool, catTool],
    async computeReward(item, rollout, context) {
      const note = await context.callTool('cat_note', {});
      if (reward) return reward(note, rewardCalls++);
      return {
        score: note.trim() === item.answer && rollout.finishedNaturally ? 1 : 0,
        components: { exact: note.trim() === item.answer ? 1 : 0 },
      };
    },
  };
}

/** Stateless per rollout: write a note (yes or no, alternating by call), then answer. */
function notePolicy(
  words: (callIndex: number) => string = (index) => (index % 2 === 0 ? 'yes' : 'no'),
): ScriptedPolicy {
  return (request, { callIndex }) => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') return { content: 'done', usage: { prompt_tokens: 20, completion_tokens: 2 } };
    return {
      toolCalls: [{ name: 'write_note', arguments: { text: words(callIndex) } }],
      usage: { prompt_tokens: 10, completion_tokens: 5 },
    };
  };
}

/**
 * An in-process GroupJudgeV1 (core cannot depend on @shears/judges): scores 0.9 a rollout that
 * wrote "yes" and 0.3 otherwise; `plan(call)` can fail verdicts or drop some from the list.
 */
function fakeGroupJudge(
  plan: (call: number) => {
    fail?: (subject: JudgeSubject) => { kind: string; reason: string } | undefined;
    drop?: number;
  },
) {
  const calls: JudgeSubject[][] = [];
  const judge: GroupJudgeV1 = {
    specificationVersion: 'v1',
    id: 'fake-group',
    async judgeGroup(subjects) {
      const { fail, drop = 0 } = plan(calls.length);
      calls.push(subjects);
      const verdicts = subjects.map((subject): Verdict => {
        const failure = fail?.(subject);
        if (failure) return { status: 'failed', ...failure, judgeId: 'fake-group' };
        const wroteYes = subject.messages.some((message) =>
          (message.tool_calls ?? []).some((call) => call.function.arguments.includes('yes')),
        );
        return {
          status: 'scored',
          score: wroteYes ? 0.9 : 0.3,
          rationale: `wrote ${wroteYes ? 'yes' : 'no'}`,
          judgeId: 'fake-group',
        };
      });
      return verdicts.slice(0, verdicts.length - drop);
    },
  };
  return { judge, calls };
}

async function client(policy: ScriptedPolicy, timeoutMs = 5_000) {
  server = await createScriptedServer({ policy });
  return createScriptedServerClient({ baseUrl: server.url, model: 'scripted', timeoutMs });
}

function newProvider(): TempSandboxProvider {
  provider = createTempSandboxProvider({ root });
  return provider;
}

/** hermes-agent's toolsets as the tool plugins and the CLI plugin declare them (registry.toolsets()). */
const HERMES_TOOLSETS = {
  web: { tools: ['web_search', 'web_extract'] },
  search: { tools: ['web_search'] },
  terminal: { tools: ['terminal', 'process'] },
  file: { tools: ['read_file', 'write_file', 'patch', 'search_files'] },
  debugging: { tools: ['terminal', 'process'], includes: ['web', 'file'] },
};

function emptyAgentResult(messages: ChatMessage[]): AgentResult {
  return {
    messages,
    turnsUsed: 1,
    finishedNaturally: true,
    finalResponse: null,
    reasoningPerTurn: [],
    toolErrors: [],
    steps: [],
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    timings: { totalMs: 0, chatMs: 0, toolMs: 0 },
    stopReason: 'answer',
    policyRefusals: 0,
  };
}

describe('runGroup', () => {
  it('runs G rollouts, rewards each in its own sandbox and normalises advantages', async () => {
    const env = noteEnv();
    const item = (await env.nextItem())!;
    const events: GroupEvent[] = [];
    const record = await runGroup({
      env,
      item,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 4,
      onEvent: (event) => events.push(event),
      groupId: 'g1',
    });
    expect(scoredGroupRecordSchema.parse(record)).toBeTruthy();
    expect(record.rollouts.map((rollout) => rollout.outcome)).toEqual([
      'scored',
      'scored',
      'scored',
      'scored',
    ]);
    expect([...record.scores].sort()).toEqual([0, 0, 1, 1]);
    expect(record.stats).toMatchObject({ counted: 4, excluded: 0, mean: 0.5, std: 0.5, min: 0, max: 1 });
    // The seed's GRPO: (score − mean) / (sample std + 1e-8); sample std of [0, 0, 1, 1] is √(1/3).
    for (const [index, score] of record.scores.entries()) {
      expect(record.advantages[index]).toBeCloseTo((score === 1 ? 0.5 : -0.5) / Math.sqrt(1 / 3), 6);
    }
    expect(record.advantageMethod).toBe('grpo');
    expect(record.dropped).toBeNull();
    expect(record.rollouts[0]).toMatchObject({
      taskId: 'task-1',
      modelId: 'scripted',
      attempts: 1,
      turnsUsed: 2,
      tokenCount: 37,
    });
    expect(provider.acquiredCount).toBe(4);
    expect(events.filter((event) => event.type === 'rollout_finished')).toHaveLength(4);
    expect(events.at(-1)?.type).toBe('group_finished');
  });

  it('counts unfinished rollouts as model failures with reward 0', async () => {
    const env = noteEnv();
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy(() => 'yes')),
      sandboxes: newProvider(),
      groupSize: 2,
      budget: { maxTurns: 1 },
      allEqualScores: 'keep',
    });
    expect(record.rollouts.map((rollout) => [rollout.outcome, rollout.reward])).toEqual([
      ['model_failure', 0],
      ['model_failure', 0],
    ]);
    expect(record.stats.counted).toBe(2);
    expect(record.dropped).toBeNull();
    expect(record.advantages).toEqual([0, 0]);
  });

  it('drops a group whose scores are all equal, when asked', async () => {
    const env = noteEnv();
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy(() => 'yes')),
      sandboxes: newProvider(),
      groupSize: 2,
    });
    expect(record.scores).toEqual([1, 1]);
    expect(record.dropped?.reason).toContain('equal');
  });

  it('retries judge failures within the budget and keeps exhausted ones out of the statistics', async () => {
    const flaky = noteEnv(async (note, call) => {
      if (call === 0) throw new JudgeError({ message: 'judge returned garbage', judgeId: 'j' });
      return { score: note.trim() === 'yes' ? 1 : 0 };
    });
    const retried = await runGroup({
      env: flaky,
      item: (await flaky.nextItem())!,
      server: await client(notePolicy(() => 'yes')),
      sandboxes: newProvider(),
      groupSize: 1,
    });
    expect(retried.rollouts[0]).toMatchObject({ outcome: 'scored', attempts: 2, reward: 1 });
    await server?.close();

    const broken = noteEnv(async () => {
      throw new JudgeError({ message: 'judge down' });
    });
    const failed = await runGroup({
      env: broken,
      item: (await broken.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      retryBudget: 1,
    });
    expect(failed.rollouts.map((rollout) => [rollout.outcome, rollout.attempts, rollout.reward])).toEqual([
      ['judge_failure', 2, null],
      ['judge_failure', 2, null],
    ]);
    expect(failed.stats).toMatchObject({ counted: 0, excluded: 2, mean: null });
    expect(failed.advantages).toEqual([null, null]);
    expect(failed.dropped?.reason).toBe('no rollout produced a valid score');
  });

  it('a group judge scores the scored rollouts together and blends with the env reward', async () => {
    const fake = fakeGroupJudge(() => ({}));
    const env = noteEnv();
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 4,
      groupJudge: fake.judge,
      groupJudgeWeight: 0.5,
    });
    expect(scoredGroupRecordSchema.parse(record)).toBeTruthy();
    // One call for the whole group, with every rollout's task and trajectory.
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]).toHaveLength(4);
    expect(fake.calls[0]!.every((subject) => subject.task === 'Write the word yes into note.txt')).toBe(true);
    for (const rollout of record.rollouts) {
      const wroteYes = rollout.rewardComponents?.exact === 1;
      const groupScore = wroteYes ? 0.9 : 0.3;
      expect(rollout.outcome).toBe('scored');
      expect(rollout.reward).toBeCloseTo(0.5 * (wroteYes ? 1 : 0) + 0.5 * groupScore, 10);
      expect(rollout.judgeScore).toBe(groupScore);
      expect(rollout.rewardComponents).toMatchObject({
        before_group_judge: wroteYes ? 1 : 0,
        group_judge: groupScore,
      });
      expect(rollout.rewardDetails?.verdicts).toEqual([
        {
          judge: 'fake-group',
          status: 'scored',
          score: groupScore,
          rationale: `wrote ${wroteYes ? 'yes' : 'no'}`,
        },
      ]);
    }
    expect(record.stats).toMatchObject({ counted: 4, excluded: 0 });
    expect(record.stats.mean).toBeCloseTo(0.55, 10);
    expect([record.stats.min, record.stats.max]).toEqual([0.15, 0.95]);
  });

  it('a failed group verdict makes its rollout a judge failure; the judge call, not the rollout, is retried', async () => {
    // First call: every verdict times out; second call: all scored. No rollout is re-run.
    const flaky = fakeGroupJudge((call) =>
      call === 0 ? { fail: () => ({ kind: 'timeout', reason: 'no verdict within 100 ms' }) } : {},
    );
    const env = noteEnv();
    const retried = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      groupJudge: flaky.judge,
    });
    expect(flaky.calls).toHaveLength(2);
    expect(provider.acquiredCount).toBe(2);
    expect(retried.rollouts.map((rollout) => [rollout.outcome, rollout.attempts])).toEqual([
      ['scored', 1],
      ['scored', 1],
    ]);
    expect([...retried.scores].sort()).toEqual([0.3, 0.9]);
    await server?.close();

    // A judge that never scores the "no" rollouts: they stay judge failures, out of the statistics.
    const picky = fakeGroupJudge(() => ({
      fail: (subject) =>
        subject.messages.some((message) =>
          (message.tool_calls ?? []).some((call) => call.function.arguments.includes('"no"')),
        )
          ? { kind: 'unparseable', reason: 'no score for candidate' }
          : undefined,
    }));
    const failed = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 4,
      retryBudget: 1,
      groupJudge: picky.judge,
    });
    expect(picky.calls).toHaveLength(2);
    const outcomes = failed.rollouts.map((rollout) => [rollout.outcome, rollout.reward]);
    expect(outcomes.filter(([outcome]) => outcome === 'scored')).toEqual([
      ['scored', 0.9],
      ['scored', 0.9],
    ]);
    expect(outcomes.filter(([outcome]) => outcome === 'judge_failure')).toEqual([
      ['judge_failure', null],
      ['judge_failure', null],
    ]);
    const reason = failed.rollouts.find((rollout) => rollout.outcome === 'judge_failure')!.outcomeReason;
    expect(reason).toBe('group judge "fake-group" failed (unparseable): no score for candidate');
    expect(failed.stats).toMatchObject({ counted: 2, excluded: 2, mean: 0.9 });
    expect(failed.advantages.filter((advantage) => advantage === null)).toHaveLength(2);
  });

  it('sends only finished rollouts to the group judge; a judge returning the wrong count fails them all', async () => {
    const short = fakeGroupJudge(() => ({ drop: 1 }));
    const env = noteEnv();
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy(() => 'yes')),
      sandboxes: newProvider(),
      groupSize: 2,
      retryBudget: 0,
      groupJudge: short.judge,
    });
    expect(record.rollouts.map((rollout) => rollout.outcome)).toEqual(['judge_failure', 'judge_failure']);
    expect(record.rollouts[0]!.outcomeReason).toBe(
      'group judge "fake-group" failed (other): returned 1 verdicts for 2 rollouts',
    );
    await server?.close();

    const counting = fakeGroupJudge(() => ({}));
    const unfinished = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy(() => 'yes')),
      sandboxes: newProvider(),
      groupSize: 2,
      budget: { maxTurns: 1 },
      allEqualScores: 'keep',
      groupJudge: counting.judge,
    });
    expect(counting.calls).toHaveLength(0);
    expect(unfinished.rollouts.map((rollout) => [rollout.outcome, rollout.reward])).toEqual([
      ['model_failure', 0],
      ['model_failure', 0],
    ]);
  });

  it('rejects a bad groupJudgeWeight or groupJudge before starting any rollout', async () => {
    const env = noteEnv();
    const sandboxes = newProvider();
    const base = {
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy()),
      sandboxes,
      groupSize: 1,
    };
    await expect(
      runGroup({ ...base, groupJudge: fakeGroupJudge(() => ({})).judge, groupJudgeWeight: 1.5 }),
    ).rejects.toThrow('groupJudgeWeight must be a number from 0 to 1 (got 1.5)');
    await expect(runGroup({ ...base, groupJudge: {} as never })).rejects.toThrow(
      'groupJudge must be a GroupJudgeV1',
    );
    expect(sandboxes.acquiredCount).toBe(0);
  });

  it('retries a sandbox that fails to start as an infrastructure failure', async () => {
    const inner = newProvider();
    let failures = 1;
    const flakyProvider: SandboxProviderV1 = {
      specificationVersion: 'v1',
      id: 'flaky',
      acquire: (spec, options) => {
        if (failures-- > 0) return Promise.reject(new SandboxError({ message: 'container failed to start' }));
        return inner.acquire(spec, options);
      },
      close: () => inner.close(),
    };
    const env = noteEnv();
    const events: GroupEvent[] = [];
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy(() => 'yes')),
      sandboxes: flakyProvider,
      groupSize: 1,
      onEvent: (event) => events.push(event),
    });
    expect(record.rollouts[0]).toMatchObject({ outcome: 'scored', attempts: 2 });
    const finished = events.filter((event) => event.type === 'rollout_finished');
    expect(finished.map((event) => [event.outcome, event.willRetry])).toEqual([
      ['infra_failure', true],
      ['scored', false],
    ]);
  });

  it('does not retry a refusal of the input itself (a bad argument or setting), directly or as a cause', async () => {
    // The same attempt would be refused the same way: retrying it only repeats the refusal.
    const refusals = [
      new InvalidArgumentError({
        argument: 'spec.image',
        value: 'x',
        message: 'this sandbox takes no image',
      }),
      new ServerError({
        message: 'the request could not be built',
        retryable: true,
        cause: new InvalidArgumentError({ argument: 'messages[3].content', message: 'an image_url part' }),
      }),
    ];
    for (const refusal of refusals) {
      let acquired = 0;
      const refusing: SandboxProviderV1 = {
        specificationVersion: 'v1',
        id: 'refusing',
        acquire: () => {
          acquired += 1;
          return Promise.reject(refusal);
        },
        close: async () => {},
      };
      const env = noteEnv();
      const events: GroupEvent[] = [];
      const record = await runGroup({
        env,
        item: (await env.nextItem())!,
        server: await client(notePolicy(() => 'yes')),
        sandboxes: refusing,
        groupSize: 1,
        onEvent: (event) => events.push(event),
      });
      expect(record.rollouts[0]).toMatchObject({ outcome: 'infra_failure', attempts: 1 });
      expect(acquired).toBe(1);
      const finished = events.filter((event) => event.type === 'rollout_finished');
      expect(finished.map((event) => [event.outcome, event.willRetry])).toEqual([['infra_failure', false]]);
    }
  });

  it('ends a rollout past its wall-clock limit as a timeout', async () => {
    const env = noteEnv();
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(() => ({ fault: 'hang' })),
      sandboxes: newProvider(),
      groupSize: 2,
      budget: { wallClockMs: 200 },
    });
    expect(record.rollouts.map((rollout) => rollout.outcome)).toEqual(['timeout', 'timeout']);
    expect(record.stats.excluded).toBe(2);
  });

  it("runs an env's own doRollout in place of the agent loop, in the rollout's sandbox, then rewards it there", async () => {
    const seen: Array<{ rolloutId: string; workdir: string; prompt: string; wallClockMs?: number }> = [];
    const base = noteEnv();
    const env: EnvV1<NoteItem> = {
      ...base,
      budget: () => ({ wallClockMs: 60_000 }),
      async doRollout(item, context) {
        seen.push({
          rolloutId: context.rolloutId,
          workdir: context.sandbox.workdir,
          prompt: String(context.messages[0]?.content),
          ...(context.budget.wallClockMs !== undefined ? { wallClockMs: context.budget.wallClockMs } : {}),
        });
        const word = context.rolloutId.endsWith('r0') ? item.answer : 'no';
        await context.sandbox.exec(`printf ${word} > note.txt`);
        if (context.rolloutId.endsWith('r2'))
          return {
            ...emptyAgentResult(context.messages),
            stopReason: 'wall_clock',
            finishedNaturally: false,
          };
        return {
          ...emptyAgentResult([...context.messages, { role: 'assistant', content: `wrote ${word}` }]),
          finalResponse: `wrote ${word}`,
        };
      },
    };
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(() => {
        throw new Error('the agent loop must not call the server');
      }),
      sandboxes: newProvider(),
      groupSize: 3,
      groupId: 'own',
    });
    expect(scoredGroupRecordSchema.parse(record)).toBeTruthy();
    expect(record.rollouts.map((rollout) => [rollout.outcome, rollout.reward])).toEqual([
      ['scored', 1],
      ['scored', 0],
      ['timeout', null],
    ]);
    expect(record.rollouts[2]?.outcomeReason).toBe('wall-clock limit of 60000 ms');
    expect(record.rollouts[0]?.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'wrote yes' });
    expect(seen.map((entry) => entry.rolloutId).sort()).toEqual(['own-r0', 'own-r1', 'own-r2']);
    expect(new Set(seen.map((entry) => entry.workdir)).size).toBe(3);
    expect(seen[0]).toMatchObject({ prompt: 'Write the word yes into note.txt', wallClockMs: 60_000 });
    expect(server?.requests ?? []).toHaveLength(0);
  });

  it('ends a rollout whose reward hangs as a timeout and still releases its sandbox', async () => {
    const stuck = noteEnv(() => new Promise<RewardResult>(() => {}));
    const record = await runGroup({
      env: stuck,
      item: (await stuck.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      rewardTimeoutMs: 100,
    });
    expect(record.rollouts.map((rollout) => [rollout.outcome, rollout.outcomeReason])).toEqual([
      ['timeout', 'reward exceeded 100 ms'],
      ['timeout', 'reward exceeded 100 ms'],
    ]);
  });

  it('aborts every rollout and releases every sandbox', async () => {
    const env = noteEnv();
    const controller = new AbortController();
    const events: GroupEvent[] = [];
    const running = runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(() => ({ fault: 'hang' })),
      sandboxes: newProvider(),
      groupSize: 4,
      limiter: createConcurrencyLimiter(2),
      signal: controller.signal,
      onEvent: (event) => {
        events.push(event);
        if (events.filter((entry) => entry.type === 'rollout_started').length === 2)
          setTimeout(() => controller.abort(), 50);
      },
    });
    const record = await running;
    expect(record.rollouts.map((rollout) => rollout.outcome)).toEqual([
      'aborted',
      'aborted',
      'aborted',
      'aborted',
    ]);
  });

  it("classifies an exception from the env's own reward as env_error: not retried, its stack kept for the event", async () => {
    function brokenReward(): never {
      const item = undefined as unknown as { answer: string };
      return item.answer as never; // TypeError: a bug in the env
    }
    const broken = noteEnv(async () => brokenReward());
    const events: GroupEvent[] = [];
    const record = await runGroup({
      env: broken,
      item: (await broken.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      retryBudget: 2,
      onEvent: (event) => events.push(event),
    });
    expect(record.rollouts.map((rollout) => [rollout.outcome, rollout.attempts, rollout.reward])).toEqual([
      ['env_error', 1, null],
      ['env_error', 1, null],
    ]);
    expect(record.rollouts[0]!.outcomeReason).toMatch(
      /^env "notes" reward threw TypeError: Cannot read properties of undefined/,
    );
    const finished = events.filter((event) => event.type === 'rollout_finished');
    expect(finished).toHaveLength(2);
    for (const event of finished) {
      expect(event.willRetry).toBe(false);
      expect(EnvError.isInstance(event.error)).toBe(true);
      expect(((event.error as EnvError).cause as Error).stack).toContain('brokenReward');
    }
    expect(record.dropped).toMatchObject({ kind: 'no_valid_score' });
    expect(scoredGroupRecordSchema.safeParse(record).success).toBe(true);
    await server?.close();

    const nan = noteEnv(async () => ({ score: Number.NaN }));
    const nanRecord = await runGroup({
      env: nan,
      item: (await nan.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 1,
    });
    expect(nanRecord.rollouts[0]).toMatchObject({
      outcome: 'env_error',
      attempts: 1,
      outcomeReason: 'env "notes" reward returned a non-finite score (NaN)',
    });
  });

  it('keeps the success the env reward reports on each trajectory', async () => {
    const env = noteEnv(async (note) => ({ score: 0.5, success: note.trim() === 'yes' }));
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      allEqualScores: 'keep',
    });
    expect(record.rollouts.map((rollout) => rollout.success).sort()).toEqual([false, true]);
  });

  it('drains: rollouts that finished their turns are rewarded, running and queued ones stop, and the group is partial without advantages', async () => {
    const drain = new AbortController();
    const hard = new AbortController();
    // Only a bound: without draining, this stops everything after 5 s.
    const bound = setTimeout(() => hard.abort(), 5_000);
    let rewards = 0;
    const env = noteEnv(async () => {
      rewards++;
      drain.abort(); // the first Ctrl-C arrives while this reward runs
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { score: 1 };
    });
    const events: GroupEvent[] = [];
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      // The first conversation writes and finishes; every later one hangs in the model call.
      server: await client((request, { callIndex }) => {
        if (request.messages.at(-1)?.role === 'tool') return { content: 'done' };
        if (callIndex === 0) return { toolCalls: [{ name: 'write_note', arguments: { text: 'yes' } }] };
        return { fault: 'hang' };
      }),
      sandboxes: newProvider(),
      groupSize: 4,
      limiter: createConcurrencyLimiter(2),
      signal: hard.signal,
      drainSignal: drain.signal,
      onEvent: (event) => events.push(event),
    });
    clearTimeout(bound);
    expect(hard.signal.aborted).toBe(false);
    expect(rewards).toBe(1);
    const outcomes = record.rollouts.map((rollout) => rollout.outcome);
    expect(outcomes.filter((outcome) => outcome === 'scored')).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome === 'aborted')).toHaveLength(3);
    expect(record.rollouts.find((rollout) => rollout.outcome === 'scored')?.reward).toBe(1);
    // Only two rollouts ever started: the queued ones never did.
    expect(events.filter((event) => event.type === 'rollout_started')).toHaveLength(2);
    expect(record.advantages).toEqual([null, null, null, null]);
    expect(record.rollouts.every((rollout) => rollout.advantage === null)).toBe(true);
    expect(record.partial).toMatchObject({ stopped: 3 });
    expect(record.dropped).toMatchObject({ kind: 'partial' });
    expect(scoredGroupRecordSchema.safeParse(record).success).toBe(true);
  });

  it('stops a reward in progress when the hard signal fires after a drain', async () => {
    const drain = new AbortController();
    const hard = new AbortController();
    const env = noteEnv(async () => {
      drain.abort();
      setTimeout(() => hard.abort(), 50); // the second Ctrl-C
      return new Promise<RewardResult>(() => {});
    });
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy(() => 'yes')),
      sandboxes: newProvider(),
      groupSize: 1,
      signal: hard.signal,
      drainSignal: drain.signal,
    });
    expect(record.rollouts[0]).toMatchObject({ outcome: 'aborted', outcomeReason: 'aborted during reward' });
    expect(record.partial).toMatchObject({ stopped: 1 });
  });

  it('uses a pluggable advantage estimator', async () => {
    const env = noteEnv();
    const record = await runGroup({
      env,
      item: (await env.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      advantages: { name: 'centered', compute: (scores) => scores.map((score) => score - 0.5) },
    });
    expect(record.advantageMethod).toBe('centered');
    expect(
      record.advantages.map((advantage, index) => (advantage ?? 0) + 0.5 - (record.scores[index] ?? 0)),
    ).toEqual([0, 0]);
  });

  it('samples the toolset distribution once per group and offers only those tools', async () => {
    const env = noteEnv();
    const terminalTool = defineTool({
      name: 'terminal',
      toolset: 'terminal',
      description: 't',
      inputSchema: z.object({}),
      execute: async () => '',
    });
    const webTool = defineTool({
      name: 'web_search',
      toolset: 'web',
      description: 'w',
      inputSchema: z.object({}),
      execute: async () => '',
    });
    expect(
      filterToolsByToolsets([writeTool, terminalTool, webTool], ['terminal']).map((tool) => tool.name),
    ).toEqual(['write_note', 'terminal']);
    const record = await runGroup({
      env: { ...env, tools: () => [writeTool, catTool, terminalTool, webTool] },
      item: (await env.nextItem())!,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      toolsetDistribution: { toolsets: { web: 100, terminal: 0 } },
    });
    expect(record.toolsets).toEqual(['web']);
    for (const request of server?.chatRequests ?? []) {
      expect((request.tools ?? []).map((tool) => tool.function.name)).toEqual([
        'write_note',
        'cat_note',
        'web_search',
      ]);
    }
  });

  it('offers enabled toolsets minus disabled ones, also applied to the sampled toolsets', async () => {
    const env = noteEnv();
    const item = (await env.nextItem())!;
    const terminalTool = defineTool({
      name: 'terminal',
      toolset: 'terminal',
      description: 't',
      inputSchema: z.object({}),
      execute: async () => '',
    });
    const searchTool = defineTool({
      name: 'web_search',
      toolset: 'web',
      description: 'w',
      inputSchema: z.object({}),
      execute: async () => '',
    });
    const toolsEnv = { ...env, tools: () => [writeTool, catTool, terminalTool, searchTool] };
    const offered = () =>
      (server?.chatRequests ?? []).map((request) => (request.tools ?? []).map((tool) => tool.function.name));

    // Enabled only: the toolset's tools plus the env's own tools (which belong to no toolset).
    const enabled = await runGroup({
      env: toolsEnv,
      item,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      enabledToolsets: ['terminal'],
    });
    expect(enabled.toolsets).toEqual(['terminal']);
    expect(enabled.rollouts.map((rollout) => rollout.toolsets)).toEqual([['terminal'], ['terminal']]);
    expect(offered()).toHaveLength(4);
    for (const names of offered()) expect(names).toEqual(['write_note', 'cat_note', 'terminal']);
    await server?.close();

    // A composite enabled, with one of its includes disabled: subtracted at the end.
    const composite = await runGroup({
      env: toolsEnv,
      item,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 1,
      enabledToolsets: ['debugging'],
      disabledToolsets: ['web'],
      toolsets: HERMES_TOOLSETS,
    });
    expect(composite.rollouts[0]?.outcome).toBe('scored');
    for (const names of offered()) expect(names).toEqual(['write_note', 'cat_note', 'terminal']);
    await server?.close();

    // Disabled toolsets are subtracted from the sampled ones; the distribution wins over enabledToolsets.
    const warnings: string[] = [];
    const sampled = await runGroup({
      logger: { ...silentLogger, warn: (message) => warnings.push(message) },
      env: toolsEnv,
      item,
      server: await client(notePolicy()),
      sandboxes: newProvider(),
      groupSize: 2,
      toolsetDistribution: { toolsets: { web: 100, terminal: 100 } },
      enabledToolsets: ['file'],
      disabledToolsets: ['terminal'],
    });
    expect(sampled.toolsets).toEqual(['web', 'terminal']);
    expect(warnings).toEqual(['toolsetDistribution takes precedence; enabledToolsets is ignored']);
    for (const names of offered()) expect(names).toEqual(['write_note', 'cat_note', 'web_search']);
  });

  it('rejects an unknown enabled, disabled or distribution toolset before starting any rollout', async () => {
    const env = noteEnv();
    const item = (await env.nextItem())!;
    const api = await client(notePolicy());
    const sandboxes = newProvider();
    // The toolsets plugins declare (registry.toolsets()); the kernel declares none.
    const known = { env, item, server: api, sandboxes, groupSize: 1, toolsets: HERMES_TOOLSETS };
    await expect(runGroup({ ...known, enabledToolsets: ['termnal'] })).rejects.toThrow(
      'No toolset "termnal" (available: debugging, file, search, terminal, web)',
    );
    await expect(runGroup({ ...known, disabledToolsets: ['wbe'] })).rejects.toThrow('No toolset "wbe"');
    await expect(
      runGroup({ ...known, toolsetDistribution: { toolsets: { terminal: 100, fiel: 5 } } }),
    ).rejects.toThrow('No toolset "fiel"');
    expect(provider.acquiredCount).toBe(0);
    expect(server?.chatRequests).toEqual([]);
  });

  it('gives every rollout a typed outcome when 30% of server calls fail or hang', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const base = notePolicy();
      const policy: ScriptedPolicy = (request, context) => {
        const slot = (context.callIndex * 7) % 10;
        if (slot < 2) return { fault: 'error', status: 500 };
        if (slot < 3) return { fault: 'hang' };
        return base(request, context);
      };
      const api = await client(policy, 400);
      const env = noteEnv();
      const limiter = createConcurrencyLimiter(6);
      const sandboxes = newProvider();
      const records = await Promise.all(
        Array.from({ length: 4 }, async (_, group) =>
          runGroup({
            env,
            item: (await env.nextItem())!,
            server: api,
            sandboxes,
            groupSize: 4,
            limiter,
            groupId: `fault-${group}`,
            retryBudget: 1,
          }),
        ),
      );
      const outcomes = records.flatMap((record) => record.rollouts.map((rollout) => rollout.outcome));
      expect(outcomes).toHaveLength(16);
      for (const outcome of outcomes) expect(rolloutOutcomeSchema.options).toContain(outcome);
      expect(outcomes.some((outcome) => outcome === 'scored')).toBe(true);
      for (const record of records) {
        expect(scoredGroupRecordSchema.safeParse(record).success).toBe(true);
        expect(record.stats.counted + record.stats.excluded).toBe(4);
      }
      expect(server?.chatRequests.length).toBeGreaterThan(16);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
