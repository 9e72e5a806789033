// End to end: a judge turned into an env reward, and a group judge given to the kernel's group
// runner, run with a temp-dir sandbox, a scripted policy server and a scripted judge server
// (real HTTP both).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createJsonlSink,
  type EnvItem,
  type EnvV1,
  InvalidArgumentError,
  type RewardContext,
  type RewardResult,
  type RolloutView,
  readScoredGroups,
  runGroup,
  verdictRecordSchema,
} from '@shears/core';
import {
  createScriptedServer,
  createScriptedServerClient,
  createTempSandboxProvider,
  type ScriptedChatRequest,
  type ScriptedPolicy,
  type ScriptedServer,
  type TempSandboxProvider,
} from '@shears/core/test';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createGroupJudge } from './group-judge.js';
import { createJudgePanel } from './judge-panel.js';
import { judgeReward } from './judge-reward.js';
import { DEFAULT_RUBRIC } from './rubric.js';
import { createRubricJudge } from './rubric-judge.js';
import { candidatesOf, nonceOf, promptOf } from './test-support/scripted-judge.js';

interface QuizItem extends EnvItem {
  reference: string;
}

const item: QuizItem = { id: 'quiz-1', prompt: 'Which letter comes first in the alphabet?', reference: 'A' };

function quizEnv(
  computeReward: (item: QuizItem, rollout: RolloutView, context: RewardContext) => Promise<RewardResult>,
): EnvV1<QuizItem> {
  return {
    specificationVersion: 'v1',
    id: 'quiz',
    async nextItem() {
      return item;
    },
    buildMessages: (task) => [{ role: 'user', content: task.prompt }],
    tools: () => [],
    computeReward,
  };
}

function verdictText(
  request: ScriptedChatRequest,
  composite: number,
  rationale = `composite ${composite}`,
): string {
  const dimensions = Object.fromEntries(DEFAULT_RUBRIC.dimensions.map((entry) => [entry.name, 7]));
  return JSON.stringify({ nonce: nonceOf(request), dimensions, composite, rationale });
}

let root: string;
let provider: TempSandboxProvider;
const servers: ScriptedServer[] = [];
async function scripted(options: Parameters<typeof createScriptedServer>[0]): Promise<ScriptedServer> {
  const server = await createScriptedServer(options);
  servers.push(server);
  return server;
}
async function policyClient(policy: ScriptedPolicy) {
  const server = await scripted({ policy });
  return createScriptedServerClient({ baseUrl: server.url, model: 'policy' });
}
async function judgeClient(options: Parameters<typeof createScriptedServer>[0], model = 'judge') {
  const server = await scripted(options);
  return { server, client: createScriptedServerClient({ baseUrl: server.url, model }) };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'shears-judge-reward-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  expect(provider.liveCount).toBe(0);
});
function sandboxes(): TempSandboxProvider {
  provider = createTempSandboxProvider({ root });
  return provider;
}

describe('judgeReward through runGroup', () => {
  it('a garbage verdict is retried as a judge failure and the rollout ends scored with its verdict recorded', async () => {
    const judge = await judgeClient({
      policy: (request, { callIndex }) => ({
        content:
          callIndex === 0
            ? 'Looks fine to me, 7/10.'
            : verdictText(request, 0.8, 'Names A, matching the reference.'),
      }),
    });
    const rubricJudge = createRubricJudge({ id: 'rubric-a', server: judge.client });
    const env = quizEnv(judgeReward(rubricJudge));
    const record = await runGroup({
      env,
      item,
      server: await policyClient(() => ({ content: 'The answer is A.' })),
      sandboxes: sandboxes(),
      groupSize: 2,
      allEqualScores: 'keep',
    });

    expect(record.rollouts.map((rollout) => rollout.outcome)).toEqual(['scored', 'scored']);
    expect(record.scores).toEqual([0.8, 0.8]);
    expect(record.rollouts.map((rollout) => rollout.attempts).sort()).toEqual([1, 2]);
    expect(record.stats).toMatchObject({ counted: 2, excluded: 0, mean: 0.8 });
    expect(judge.server.chatRequests).toHaveLength(3);
    // The judge saw the task, the reference and the rollout's answer.
    const prompt = promptOf(judge.server.chatRequests[0]!);
    expect(prompt).toContain('Which letter comes first in the alphabet?');
    expect(prompt).toMatch(/⟦[a-z0-9]+⟧ REFERENCE ANSWER\n│ A\n/);
    expect(prompt).toContain('The answer is A.');

    // The verdicts survive the JSONL sink, in the shape the viewer renders.
    const path = join(root, 'run.jsonl');
    const sink = createJsonlSink({ path });
    await sink.write(record);
    await sink.close();
    const [stored] = await readScoredGroups(path);
    for (const rollout of stored!.rollouts) {
      expect(rollout.rewardComponents).toEqual({ judge: 0.8 });
      const verdicts = verdictRecordSchema.array().parse(rollout.rewardDetails?.verdicts);
      expect(verdicts).toHaveLength(1);
      expect(verdicts[0]).toMatchObject({
        judge: 'rubric-a',
        status: 'scored',
        score: 0.8,
        rationale: 'Names A, matching the reference.',
        dimensions: Object.fromEntries(DEFAULT_RUBRIC.dimensions.map((entry) => [entry.name, 7])),
      });
      expect(verdicts[0]!.usage?.totalTokens).toBeGreaterThan(0);
    }
    await rm(path);
  });

  it('a judge that always times out ends the rollout as a judge failure, kept out of the statistics', async () => {
    // The judge hangs on answer B and scores answer A; the policy answers A once, then B.
    const judge = await judgeClient({
      policy: (request) =>
        promptOf(request).includes('The answer is B.')
          ? { fault: 'hang' }
          : { content: verdictText(request, 0.9) },
    });
    const env = quizEnv(
      judgeReward(createRubricJudge({ id: 'slow-judge', server: judge.client, timeoutMs: 1_000 })),
    );
    const record = await runGroup({
      env,
      item,
      server: await policyClient((_request, { callIndex }) => ({
        content: callIndex === 0 ? 'The answer is A.' : 'The answer is B.',
      })),
      sandboxes: sandboxes(),
      groupSize: 2,
      retryBudget: 1,
    });

    const outcomes = record.rollouts.map((rollout) => [rollout.outcome, rollout.attempts, rollout.reward]);
    expect(outcomes).toContainEqual(['scored', 1, 0.9]);
    expect(outcomes).toContainEqual(['judge_failure', 2, null]);
    const failed = record.rollouts.find((rollout) => rollout.outcome === 'judge_failure')!;
    expect(failed.outcomeReason).toBe(
      'judge: judge "slow-judge" failed (timeout): no verdict within 1000 ms',
    );
    expect(failed.rewardDetails).toBeUndefined();
    // Only the scored rollout counts: no 0 (or 0.5) stands in for the failed verdict.
    expect(record.stats).toMatchObject({ counted: 1, excluded: 1, mean: 0.9, min: 0.9, max: 0.9 });
    expect(record.scores.filter((score) => score !== null)).toEqual([0.9]);
  });

  it('composes a panel verdict with other rewards and records the panel disagreement', async () => {
    const lenient = await judgeClient({
      policy: (request) => ({ content: verdictText(request, 1, 'Correct.') }),
    });
    const strict = await judgeClient({
      policy: (request) => ({ content: verdictText(request, 0.6, 'Correct but terse.') }),
    });
    const panel = createJudgePanel({
      id: 'panel',
      judges: [
        createRubricJudge({ id: 'lenient', server: lenient.client }),
        createRubricJudge({ id: 'strict', server: strict.client }),
      ],
      aggregation: 'mean',
      quorum: 2,
      disagreementThreshold: 0.3,
    });
    const reward = judgeReward<QuizItem>(panel, {
      weight: 0.5,
      rewards: [
        {
          name: 'exact',
          weight: 0.5,
          fn: ({ item: task, rollout }) => (rollout.finalResponse?.includes(task.reference) ? 1 : 0),
        },
        { name: 'length', weight: 0, fn: ({ rollout }) => rollout.finalResponse?.length ?? 0 },
      ],
    });
    const record = await runGroup({
      env: quizEnv(reward),
      item,
      server: await policyClient(() => ({ content: 'The answer is A.' })),
      sandboxes: sandboxes(),
      groupSize: 1,
      allEqualScores: 'keep',
    });

    const [rollout] = record.rollouts;
    expect(rollout).toMatchObject({ outcome: 'scored' });
    expect(rollout!.reward).toBeCloseTo(0.5 * 0.8 + 0.5 * 1, 10);
    expect(rollout!.rewardComponents).toMatchObject({ exact: 1, length: 'The answer is A.'.length });
    expect(rollout!.rewardComponents?.judge).toBeCloseTo(0.8, 10);
    const [verdict] = verdictRecordSchema.array().parse(rollout!.rewardDetails!.verdicts);
    if (verdict?.status !== 'scored') throw new Error(`expected a scored verdict, got ${verdict?.status}`);
    expect(verdict).toMatchObject({
      judge: 'panel',
      status: 'scored',
      rationale: 'lenient: Correct.\nstrict: Correct but terse.',
      disagreement: { flagged: true },
    });
    expect((verdict.disagreement as { range: number }).range).toBeCloseTo(0.4, 10);
    expect(verdict!.details).toMatchObject({
      aggregation: 'mean',
      members: [
        { judgeId: 'lenient', status: 'scored', score: 1 },
        { judgeId: 'strict', status: 'scored', score: 0.6 },
      ],
    });
  });

  it('a panel below quorum is a judge failure naming the panel and the kind', async () => {
    const up = await judgeClient({ policy: (request) => ({ content: verdictText(request, 0.7) }) });
    const down = await judgeClient({ policy: () => ({ fault: 'error', status: 500 }) });
    const panel = createJudgePanel({
      id: 'panel',
      judges: [
        createRubricJudge({ id: 'up', server: up.client }),
        createRubricJudge({ id: 'down', server: down.client }),
      ],
      quorum: 2,
    });
    const record = await runGroup({
      env: quizEnv(judgeReward(panel)),
      item,
      server: await policyClient(() => ({ content: 'The answer is A.' })),
      sandboxes: sandboxes(),
      groupSize: 1,
      retryBudget: 0,
    });
    expect(record.rollouts[0]).toMatchObject({ outcome: 'judge_failure', reward: null });
    expect(record.rollouts[0]!.outcomeReason).toMatch(/^judge: judge "panel" failed \(quorum\): only 1 of 2/);
    expect(record.dropped?.reason).toBe('no rollout produced a valid score');
  });
});

/** A listwise judge "model": 1.0 for a candidate answering A, 0.2 for any other. */
function listwisePolicy(request: ScriptedChatRequest) {
  const scores: Record<string, number> = {};
  for (const { label, text } of candidatesOf(request))
    scores[label] = text.includes('The answer is A.') ? 1 : 0.2;
  return { content: JSON.stringify({ nonce: nonceOf(request), scores, rationale: 'A is right' }) };
}

const exactReward = async (task: QuizItem, rollout: RolloutView): Promise<RewardResult> => ({
  score: rollout.finalResponse?.includes(`answer is ${task.reference}.`) ? 1 : 0,
});

describe('createGroupJudge through runGroup', () => {
  it('scores the group in one call, after one garbage reply, blended with the env reward', async () => {
    let garbage = true;
    const judge = await judgeClient({
      policy: (request) => {
        if (!garbage) return listwisePolicy(request);
        garbage = false;
        return { content: 'Candidate 2 is best.' };
      },
    });
    const record = await runGroup({
      env: quizEnv(exactReward),
      item,
      server: await policyClient((_request, { callIndex }) => ({
        content: callIndex % 2 === 0 ? 'The answer is A.' : 'The answer is C.',
      })),
      sandboxes: sandboxes(),
      groupSize: 4,
      groupJudge: createGroupJudge({ id: 'listwise', server: judge.client }),
      groupJudgeWeight: 0.5,
    });

    // One unparseable reply, then one call for the whole group; no rollout was re-run.
    expect(judge.server.chatRequests).toHaveLength(2);
    expect(provider.acquiredCount).toBe(4);
    expect(candidatesOf(judge.server.chatRequests[1]!)).toHaveLength(4);
    expect(record.rollouts.map((rollout) => rollout.outcome)).toEqual([
      'scored',
      'scored',
      'scored',
      'scored',
    ]);
    for (const rollout of record.rollouts) {
      const right = rollout.finalResponse === 'The answer is A.';
      expect(rollout.reward).toBeCloseTo(right ? 1 : 0.1, 10);
      expect(rollout.judgeScore).toBe(right ? 1 : 0.2);
      expect(rollout.rewardDetails?.verdicts).toEqual([
        expect.objectContaining({
          judge: 'listwise',
          status: 'scored',
          score: right ? 1 : 0.2,
          rationale: 'A is right',
        }),
      ]);
    }
    expect(record.stats).toMatchObject({ counted: 4, excluded: 0 });
  });

  it('a group judge that times out leaves every rollout a judge failure, none counted', async () => {
    const judge = await judgeClient({ policy: () => ({ fault: 'hang' }) });
    const record = await runGroup({
      env: quizEnv(exactReward),
      item,
      server: await policyClient(() => ({ content: 'The answer is A.' })),
      sandboxes: sandboxes(),
      groupSize: 2,
      retryBudget: 0,
      groupJudge: createGroupJudge({ id: 'listwise', server: judge.client, timeoutMs: 100 }),
    });
    expect(record.rollouts.map((rollout) => [rollout.outcome, rollout.reward])).toEqual([
      ['judge_failure', null],
      ['judge_failure', null],
    ]);
    expect(record.rollouts[0]!.outcomeReason).toBe(
      'group judge "listwise" failed (timeout): no verdict within 100 ms',
    );
    expect(record.stats).toMatchObject({ counted: 0, excluded: 2, mean: null });
  });
});

describe('judgeReward options', () => {
  it('rejects something that is not a judge and a non-finite weight, naming the setting', () => {
    sandboxes();
    expect(() => judgeReward({} as never)).toThrow(InvalidArgumentError);
    expect(() => judgeReward({} as never)).toThrow(/needs a JudgeV1/);
    const judge = createRubricJudge({
      id: 'j',
      server: createScriptedServerClient({ baseUrl: 'http://127.0.0.1:9/v1', model: 'j' }),
    });
    expect(() => judgeReward(judge, { weight: Number.NaN })).toThrow(
      'Weight of "judge" must be a finite number',
    );
    expect(() => judgeReward(judge, { rewards: [{ name: 'judge', weight: 1, fn: () => 1 }] })).toThrow(
      'Reward function "judge" is listed twice',
    );
  });
});
