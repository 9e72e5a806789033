import type { JudgeSubject } from '@shears/core';
import {
  createScriptedServer,
  createScriptedServerClient,
  describeGroupJudgeConformance,
  describeJudgeConformance,
  type ScriptedChatRequest,
  type ScriptedServer,
} from '@shears/core/test';
import { get_encoding } from 'tiktoken';
import { afterEach, describe, expect, it } from 'vitest';
import { positionBias } from './calibration.js';
import { createGroupJudge, shuffledIndices } from './group-judge.js';
import { createMemoryJudgeCache } from './judge-cache.js';
import { createJudgePanel } from './judge-panel.js';
import { createPairwiseJudge } from './pairwise-judge.js';
import { DEFAULT_RUBRIC } from './rubric.js';
import { createRubricJudge } from './rubric-judge.js';
import { candidatesOf, nonceOf, promptOf } from './test-support/scripted-judge.js';

function subject(answer: string, id = 't1'): JudgeSubject {
  return {
    taskId: id,
    task: 'Write the word hello into hello.txt',
    messages: [
      { role: 'user', content: 'Write the word hello into hello.txt' },
      { role: 'assistant', content: answer },
    ],
    finalResponse: answer,
  };
}

/** A rubric verdict answering `request` (its nonce echoed). */
function verdictText(request: ScriptedChatRequest, composite: number, dimension = 7): string {
  const dimensions = Object.fromEntries(DEFAULT_RUBRIC.dimensions.map((entry) => [entry.name, dimension]));
  return JSON.stringify({ nonce: nonceOf(request), dimensions, composite, rationale: `score ${composite}` });
}

/** A judge model answering every request with this verdict. */
const answering =
  (composite: number, dimension = 7) =>
  (request: ScriptedChatRequest) => ({
    content: verdictText(request, composite, dimension),
  });

const servers: ScriptedServer[] = [];
async function scripted(options: Parameters<typeof createScriptedServer>[0]): Promise<ScriptedServer> {
  const server = await createScriptedServer(options);
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe('rubric judge', () => {
  it('scores a trajectory from a JSON-schema reply and sends the schema as response_format', async () => {
    const server = await scripted({ policy: answering(0.8) });
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'judge-a' }),
    });
    const verdict = await judge.judge(subject('done'));
    expect(verdict).toMatchObject({ status: 'scored', score: 0.8, rationale: 'score 0.8' });
    if (verdict.status === 'scored') {
      expect(verdict.dimensions).toEqual(
        Object.fromEntries(DEFAULT_RUBRIC.dimensions.map((entry) => [entry.name, 7])),
      );
      expect(verdict.usage?.totalTokens).toBeGreaterThan(0);
    }
    const request = server.chatRequests[0]!;
    expect((request.response_format as { type: string }).type).toBe('json_schema');
    expect(promptOf(request)).toContain('Write the word hello into hello.txt');
    expect(promptOf(request)).toContain('task_completion (0-10)');
  });

  it('reads a verdict wrapped in prose and code fences when the server ignores the format', async () => {
    const server = await scripted({
      policy: (request) => ({
        content: `Here is my assessment:\n\`\`\`json\n${verdictText(request, 0.6)}\n\`\`\`\nThanks!`,
      }),
    });
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'j' }),
      responseFormat: 'none',
    });
    const verdict = await judge.judge(subject('done'));
    expect(verdict).toMatchObject({ status: 'scored', score: 0.6 });
    expect(server.chatRequests[0]!.response_format).toBeUndefined();
  });

  it('a garbage reply is a judge failure, not a score', async () => {
    const server = await scripted({
      replies: [{ content: 'I think it is pretty good, maybe 7 out of 10.' }],
    });
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'j' }),
    });
    const verdict = await judge.judge(subject('done'));
    expect(verdict.status).toBe('failed');
    if (verdict.status === 'failed') expect(verdict.kind).toBe('unparseable');
    expect('score' in verdict).toBe(false);
  });

  it('an out-of-range score is a judge failure naming the field', async () => {
    const server = await scripted({
      policy: (request, { callIndex }) => ({
        content: callIndex === 0 ? verdictText(request, 0.5, 11) : verdictText(request, 1.5),
      }),
    });
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'j' }),
    });
    const first = await judge.judge(subject('a'));
    expect(first).toMatchObject({ status: 'failed', kind: 'out_of_range' });
    if (first.status === 'failed')
      expect(first.reason).toContain('dimension "task_completion" = 11 is outside [0, 10]');
    const second = await judge.judge(subject('b'));
    expect(second).toMatchObject({ status: 'failed', kind: 'out_of_range' });
    if (second.status === 'failed') expect(second.reason).toContain('composite 1.5 is outside [0, 1]');
  });

  it('a judge that does not answer in time is a timeout failure', async () => {
    const server = await scripted({ replies: [{ fault: 'hang' }] });
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'j' }),
      timeoutMs: 200,
    });
    const verdict = await judge.judge(subject('done'));
    expect(verdict).toMatchObject({ status: 'failed', kind: 'timeout' });
  });

  it('a server error is a failure of kind server_error', async () => {
    const server = await scripted({
      replies: [{ fault: 'error', status: 500, body: { error: { message: 'boom' } } }],
    });
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'j' }),
    });
    expect(await judge.judge(subject('done'))).toMatchObject({ status: 'failed', kind: 'server_error' });
  });

  it('counts tokens with tiktoken and prices them when the server reports no usage', async () => {
    let reply = '';
    const received: ScriptedChatRequest[] = [];
    // A chat completions endpoint that, like some self-hosted servers, sends no `usage` at all.
    const server = await scripted({
      routes: {
        '/v1/chat/completions': (_request, response, body) => {
          const request = JSON.parse(body.toString('utf8')) as ScriptedChatRequest;
          received.push(request);
          reply = verdictText(request, 0.7);
          const text = JSON.stringify({
            id: 'c1',
            object: 'chat.completion',
            model: 'j',
            choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
          });
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(text);
        },
      },
    });
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'j' }),
      pricing: { inputPerMillion: 3, outputPerMillion: 15 },
    });
    const verdict = await judge.judge(subject('done'));
    expect(verdict).toMatchObject({ status: 'scored', score: 0.7 });
    expect(received).toHaveLength(1);
    const encoding = get_encoding('o200k_base');
    const promptTokens = encoding.encode(
      received[0]!.messages.map((message) => String(message.content)).join('\n'),
    ).length;
    const completionTokens = encoding.encode(reply).length;
    encoding.free();
    expect(promptTokens).toBeGreaterThan(100);
    expect(verdict.usage).toMatchObject({
      promptTokens,
      completionTokens,
      totalTokens: promptTokens + completionTokens,
    });
    expect(verdict.usage?.costUsd).toBeCloseTo((promptTokens * 3 + completionTokens * 15) / 1_000_000, 15);
    if (verdict.status === 'scored') expect(verdict.details?.usageEstimated).toBe(true);
  });

  it('caches verdicts by judge, rubric and trajectory; failures are not cached', async () => {
    const server = await scripted({ policy: answering(0.9) });
    const cache = createMemoryJudgeCache();
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'j' }),
      cache,
    });
    const first = await judge.judge(subject('same'));
    const second = await judge.judge(subject('same'));
    const third = await judge.judge(subject('different'));
    expect(first).toMatchObject({ status: 'scored', score: 0.9 });
    expect(second).toMatchObject({ status: 'scored', score: 0.9, cached: true });
    expect(third.status === 'scored' && third.cached).toBeFalsy();
    expect(server.chatRequests).toHaveLength(2);
    expect(cache.stats).toEqual({ hits: 1, misses: 2 });
  });

  it('a cache hit costs nothing: zero tokens and cost, the original usage kept as cachedUsage', async () => {
    const server = await scripted({
      policy: (request) => ({
        content: verdictText(request, 0.9),
        usage: { prompt_tokens: 1_000, completion_tokens: 200 },
      }),
    });
    const cache = createMemoryJudgeCache();
    const judges = ['a', 'b'].map((model) =>
      createRubricJudge({
        id: model,
        server: createScriptedServerClient({ baseUrl: server.url, model }),
        cache,
        pricing: { inputPerMillion: 2, outputPerMillion: 10 },
      }),
    );
    const panel = createJudgePanel({ judges, aggregation: 'mean' });
    const fresh = await panel.judge(subject('same'));
    // Two calls of 1,000 + 200 tokens at $2 / $10 per million: 2 * (0.002 + 0.002) = $0.008.
    expect(fresh.usage).toMatchObject({ promptTokens: 2_000, completionTokens: 400, totalTokens: 2_400 });
    expect(fresh.usage?.costUsd).toBeCloseTo(0.008, 12);

    const again = await panel.judge(subject('same'));
    expect(server.chatRequests).toHaveLength(2);
    expect(again).toMatchObject({ status: 'scored', score: 0.9 });
    expect(again.usage).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 });

    const hit = await judges[0]!.judge(subject('same'));
    expect(hit).toMatchObject({ status: 'scored', cached: true });
    expect(hit.usage).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 });
    if (hit.status === 'scored')
      expect(hit.details?.cachedUsage).toMatchObject({
        promptTokens: 1_000,
        completionTokens: 200,
        totalTokens: 1_200,
        costUsd: 0.004,
      });
  });
});

describe('judge panel', () => {
  /** Three judge "models" on one scripted server, each answering with its own score. */
  async function panelServer(scores: Record<string, number | 'garbage' | 'hang'>) {
    return scripted({
      policy: (request) => {
        const score = scores[String(request.model)];
        if (score === 'hang') return { fault: 'hang' };
        if (score === 'garbage') return { content: 'no idea' };
        return { content: verdictText(request, score ?? 0) };
      },
    });
  }
  const judgesFor = (server: ScriptedServer, models: string[], timeoutMs = 2_000) =>
    models.map((model) =>
      createRubricJudge({
        id: model,
        server: createScriptedServerClient({ baseUrl: server.url, model }),
        timeoutMs,
      }),
    );

  it('aggregates by trimmed mean and records each member', async () => {
    const server = await panelServer({ a: 0.2, b: 0.6, c: 1.0 });
    const panel = createJudgePanel({
      judges: judgesFor(server, ['a', 'b', 'c']),
      aggregation: 'trimmed_mean',
    });
    const verdict = await panel.judge(subject('x'));
    expect(verdict).toMatchObject({ status: 'scored', score: 0.6 });
    if (verdict.status === 'scored') {
      const details = verdict.details as any;
      expect(
        details.members.map((member: { judgeId: string; score: number }) => [member.judgeId, member.score]),
      ).toEqual([
        ['a', 0.2],
        ['b', 0.6],
        ['c', 1.0],
      ]);
      expect(details.disagreement.flagged).toBe(true);
      expect(details.disagreement.range).toBeCloseTo(0.8, 12);
    }
  });

  it.each<{ size: number; scores: Record<string, number>; expected: number }>([
    // Two judges: nothing is trimmed, (0.3 + 0.8) / 2.
    { size: 2, scores: { a: 0.3, b: 0.8 }, expected: 0.55 },
    // Three: 0.2 and 0.9 are dropped, the middle judge remains.
    { size: 3, scores: { a: 0.9, b: 0.2, c: 0.5 }, expected: 0.5 },
    // Five: 0.1 and 1.0 are dropped, (0.4 + 0.45 + 0.7) / 3.
    { size: 5, scores: { a: 1.0, b: 0.4, c: 0.1, d: 0.7, e: 0.45 }, expected: 1.55 / 3 },
  ])(
    'trimmed mean of a $size-judge panel through the server equals the hand-computed $expected',
    async ({ scores, expected }) => {
      const server = await panelServer(scores);
      const models = Object.keys(scores);
      const verdict = await createJudgePanel({
        judges: judgesFor(server, models),
        aggregation: 'trimmed_mean',
      }).judge(subject('x'));
      expect(server.chatRequests.map((request) => request.model).sort()).toEqual(models);
      expect(verdict.status).toBe('scored');
      if (verdict.status === 'scored') {
        expect(verdict.score).toBeCloseTo(expected, 12);
        expect((verdict.details as any).successful).toBe(models.length);
      }
    },
  );

  it('does not flag agreeing judges', async () => {
    const server = await panelServer({ a: 0.7, b: 0.75, c: 0.8 });
    const verdict = await createJudgePanel({
      judges: judgesFor(server, ['a', 'b', 'c']),
      aggregation: 'mean',
    }).judge(subject('x'));
    expect(verdict.status === 'scored' && (verdict.details as any).disagreement.flagged).toBe(false);
  });

  it('failed members are left out; below quorum the panel fails', async () => {
    const server = await panelServer({ a: 0.4, b: 'garbage', c: 'hang' });
    const judges = judgesFor(server, ['a', 'b', 'c'], 300);
    const lenient = await createJudgePanel({ judges, quorum: 1, aggregation: 'mean' }).judge(subject('x'));
    expect(lenient).toMatchObject({ status: 'scored', score: 0.4 });
    const strict = await createJudgePanel({ judges, quorum: 2 }).judge(subject('x'));
    expect(strict).toMatchObject({ status: 'failed', kind: 'quorum' });
    if (strict.status === 'failed') {
      expect(strict.reason).toContain('only 1 of 3 judges gave a verdict (quorum 2)');
      expect(strict.reason).toContain('b: unparseable');
      expect(strict.reason).toContain('c: timeout');
    }
  });

  it('majority vote over yes/no judges', async () => {
    const server = await panelServer({ a: 1, b: 0, c: 1 });
    const verdict = await createJudgePanel({
      judges: judgesFor(server, ['a', 'b', 'c']),
      aggregation: 'majority',
    }).judge(subject('x'));
    expect(verdict).toMatchObject({ status: 'scored', score: 1 });
  });

  it('rejects a bad panel configuration clearly', () => {
    expect(() => createJudgePanel({ judges: [] })).toThrow('at least one judge');
    const judge = createRubricJudge({
      server: createScriptedServerClient({ baseUrl: 'http://127.0.0.1:9/v1', model: 'x' }),
    });
    expect(() => createJudgePanel({ judges: [judge], quorum: 2 })).toThrow(
      'quorum must be an integer from 1 to 1',
    );
  });
});

/** A listwise judge "model" that scores each candidate by a quality tag in its text. */
function qualityPolicy(request: ScriptedChatRequest) {
  const scores: Record<string, number> = {};
  for (const { label, text } of candidatesOf(request)) {
    const quality = /quality=(\d+)/.exec(text);
    scores[label] = quality ? Number(quality[1]) / 10 : 0;
  }
  return { content: JSON.stringify({ nonce: nonceOf(request), scores, rationale: 'by quality' }) };
}

describe('group judge', () => {
  it('result does not depend on input order or shuffle', async () => {
    const server = await scripted({ policy: qualityPolicy });
    const subjects = [
      subject('quality=2', 'a'),
      subject('quality=9', 'b'),
      subject('quality=5', 'c'),
      subject('quality=7', 'd'),
    ];
    let seed = 1;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const judge = createGroupJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'g' }),
      random,
      rounds: 2,
    });
    const forward = await judge.judgeGroup(subjects);
    const reversed = await judge.judgeGroup([...subjects].reverse());
    const byId = (verdicts: typeof forward, list: JudgeSubject[]) =>
      Object.fromEntries(
        list.map((entry, index) => [
          entry.taskId,
          verdicts[index]!.status === 'scored' ? (verdicts[index] as any).score : null,
        ]),
      );
    expect(byId(forward, subjects)).toEqual({ a: 0.2, b: 0.9, c: 0.5, d: 0.7 });
    expect(byId(reversed, [...subjects].reverse())).toEqual({ a: 0.2, b: 0.9, c: 0.5, d: 0.7 });
    // The judge saw the candidates in shuffled orders.
    const orders = server.chatRequests.map((request) =>
      [...promptOf(request).matchAll(/quality=(\d)/g)].map((match) => match[1]).join(''),
    );
    expect(new Set(orders).size).toBeGreaterThan(1);
  });

  it('shuffles with a proper permutation', () => {
    let calls = 0;
    const order = shuffledIndices(5, () => (calls++ * 0.37) % 1);
    expect([...order].sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it("each verdict carries its share of the calls' tokens and cost; the shares add up to the whole", async () => {
    const server = await scripted({
      policy: (request) => ({
        ...qualityPolicy(request),
        usage: { prompt_tokens: 1_000, completion_tokens: 101 },
      }),
    });
    const judge = createGroupJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'g' }),
      rounds: 2,
      pricing: { inputPerMillion: 2, outputPerMillion: 10 },
    });
    const verdicts = await judge.judgeGroup([
      subject('quality=2', 'a'),
      subject('quality=9', 'b'),
      subject('quality=5', 'c'),
    ]);
    expect(server.chatRequests).toHaveLength(2);
    // Two calls of 1,000 + 101 tokens at $2 / $10 per million: 2 * (0.002 + 0.00101) = $0.00602.
    const whole = { promptTokens: 2_000, completionTokens: 202, totalTokens: 2_202 };
    const sum = (key: 'promptTokens' | 'completionTokens' | 'totalTokens' | 'costUsd') =>
      verdicts.reduce((total, verdict) => total + (verdict.usage?.[key] ?? Number.NaN), 0);
    expect(sum('promptTokens')).toBe(whole.promptTokens);
    expect(sum('completionTokens')).toBe(whole.completionTokens);
    expect(sum('totalTokens')).toBe(whole.totalTokens);
    expect(sum('costUsd')).toBeCloseTo(0.00602, 12);
    expect(verdicts.map((verdict) => verdict.usage?.promptTokens)).toEqual([667, 667, 666]);
    for (const verdict of verdicts) {
      expect(verdict.status).toBe('scored');
      if (verdict.status === 'scored') {
        expect(verdict.details?.groupUsage).toMatchObject(whole);
        expect((verdict.details?.groupUsage as { costUsd?: number } | undefined)?.costUsd).toBeCloseTo(
          0.00602,
          12,
        );
      }
    }
  });

  it('a failed group still reports what its call cost', async () => {
    const server = await scripted({
      policy: (request) => ({
        content: JSON.stringify({
          nonce: nonceOf(request),
          scores: { [candidatesOf(request)[0]!.label]: 0.5 },
        }),
        usage: { prompt_tokens: 300, completion_tokens: 10 },
      }),
    });
    const judge = createGroupJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'g' }),
    });
    const verdicts = await judge.judgeGroup([subject('x', 'a'), subject('y', 'b')]);
    expect(verdicts.map((verdict) => [verdict.status, verdict.usage?.totalTokens])).toEqual([
      ['failed', 155],
      ['failed', 155],
    ]);
  });

  it('an already-cancelled group is aborted without calling the judge', async () => {
    const server = await scripted({ policy: qualityPolicy });
    const judge = createGroupJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'g' }),
      rounds: 2,
    });
    const controller = new AbortController();
    controller.abort();
    const verdicts = await judge.judgeGroup([subject('quality=1', 'a'), subject('quality=3', 'b')], {
      signal: controller.signal,
    });
    expect(verdicts.map((verdict) => [verdict.status, verdict.status === 'failed' && verdict.kind])).toEqual([
      ['failed', 'aborted'],
      ['failed', 'aborted'],
    ]);
    expect(server.chatRequests).toHaveLength(0);
  });

  it('cancelling during a round aborts the group and runs no further rounds', async () => {
    const controller = new AbortController();
    const server = await scripted({
      policy: () => {
        controller.abort();
        return { fault: 'hang' };
      },
    });
    const judge = createGroupJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'g' }),
      rounds: 3,
    });
    const verdicts = await judge.judgeGroup([subject('quality=1', 'a'), subject('quality=3', 'b')], {
      signal: controller.signal,
    });
    expect(verdicts.map((verdict) => verdict.status === 'failed' && verdict.kind)).toEqual([
      'aborted',
      'aborted',
    ]);
    expect(server.chatRequests).toHaveLength(1);
  });

  it('a reply missing a candidate fails every verdict of the group', async () => {
    const server = await scripted({
      policy: (request) => ({
        content: JSON.stringify({
          nonce: nonceOf(request),
          scores: { [candidatesOf(request)[0]!.label]: 0.5 },
        }),
      }),
    });
    const judge = createGroupJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'g' }),
    });
    const verdicts = await judge.judgeGroup([subject('x', 'a'), subject('y', 'b')]);
    expect(verdicts.map((verdict) => verdict.status)).toEqual(['failed', 'failed']);
  });
});

describe('pairwise judge', () => {
  it('declares a winner when both orders agree', async () => {
    const server = await scripted({
      policy: (request) => {
        const [first, second] = candidatesOf(request).map(({ label, text }) => ({
          label,
          quality: Number(/quality=(\d)/.exec(text)![1]),
        }));
        const winner = first!.quality > second!.quality ? first!.label : second!.label;
        return { content: JSON.stringify({ nonce: nonceOf(request), winner }) };
      },
    });
    const judge = createPairwiseJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'p' }),
    });
    const outcome = await judge.compare(subject('quality=3'), subject('quality=8'));
    expect(outcome).toMatchObject({
      status: 'compared',
      winner: 'b',
      consistent: true,
      positions: ['second', 'first'],
    });
  });

  it('reports the tokens and cost of both orders', async () => {
    const server = await scripted({
      policy: (request) => ({
        content: JSON.stringify({ nonce: nonceOf(request), winner: 'tie' }),
        usage: { prompt_tokens: 500, completion_tokens: 20 },
      }),
    });
    const judge = createPairwiseJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'p' }),
      pricing: { inputPerMillion: 1, outputPerMillion: 4 },
    });
    const outcome = await judge.compare(subject('quality=3'), subject('quality=8'));
    expect(outcome).toMatchObject({
      status: 'compared',
      winner: 'tie',
      usage: { promptTokens: 1_000, completionTokens: 40, totalTokens: 1_040 },
    });
    // (1,000 * $1 + 40 * $4) per million tokens.
    expect(outcome.usage?.costUsd).toBeCloseTo(0.00116, 12);

    const failing = await scripted({
      replies: [{ content: 'no idea', usage: { prompt_tokens: 500, completion_tokens: 3 } }],
    });
    const failed = await createPairwiseJudge({
      server: createScriptedServerClient({ baseUrl: failing.url, model: 'p' }),
      pricing: { inputPerMillion: 1, outputPerMillion: 4 },
    }).compare(subject('quality=3'), subject('quality=8'));
    expect(failed).toMatchObject({ status: 'failed', kind: 'unparseable', usage: { totalTokens: 503 } });
    expect(failed.usage?.costUsd).toBeCloseTo(0.000512, 12);
  });

  it('a judge that does not answer in time is a timeout failure; a server error stays server_error', async () => {
    const server = await scripted({
      replies: [
        { fault: 'hang' },
        { fault: 'error', status: 503, body: { error: { message: 'overloaded' } } },
      ],
    });
    const judge = createPairwiseJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'p' }),
      timeoutMs: 200,
    });
    const hung = await judge.compare(subject('quality=3'), subject('quality=8'));
    expect(hung).toMatchObject({ status: 'failed', kind: 'timeout', reason: 'no verdict within 200 ms' });
    const broken = await judge.compare(subject('quality=3'), subject('quality=8'));
    expect(broken).toMatchObject({ status: 'failed', kind: 'server_error' });
    if (broken.status === 'failed') expect(broken.reason).toContain('overloaded');
    expect(server.chatRequests).toHaveLength(2);
  });

  it('a cancelled comparison is aborted without calling the judge', async () => {
    const server = await scripted({ policy: () => ({ content: '{"winner": "tie"}' }) });
    const judge = createPairwiseJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'p' }),
    });
    const controller = new AbortController();
    controller.abort();
    const outcome = await judge.compare(subject('quality=3'), subject('quality=8'), {
      signal: controller.signal,
    });
    expect(outcome).toMatchObject({ status: 'failed', kind: 'aborted' });
    expect(server.chatRequests).toHaveLength(0);
  });

  it('a judge that always prefers the first position yields a tie and shows position bias', async () => {
    const server = await scripted({
      policy: (request) => ({
        content: JSON.stringify({ nonce: nonceOf(request), winner: candidatesOf(request)[0]!.label }),
      }),
    });
    const judge = createPairwiseJudge({
      server: createScriptedServerClient({ baseUrl: server.url, model: 'p' }),
    });
    const outcome = await judge.compare(subject('quality=3'), subject('quality=8'));
    expect(outcome).toMatchObject({ status: 'compared', winner: 'tie', consistent: false });
    expect(positionBias([outcome]).firstPositionWinRate).toBe(1);
  });
});

describeJudgeConformance('rubric judge', async () => {
  const server = await createScriptedServer({ policy: answering(0.5) });
  const bad = await createScriptedServer({ policy: () => ({ content: 'garbage' }) });
  return {
    judge: createRubricJudge({ server: createScriptedServerClient({ baseUrl: server.url, model: 'c' }) }),
    failingJudge: createRubricJudge({ server: createScriptedServerClient({ baseUrl: bad.url, model: 'c' }) }),
    subjects: [subject('a'), subject('b')],
    cleanup: async () => {
      await server.close();
      await bad.close();
    },
  };
});

describeJudgeConformance('judge panel', async () => {
  const server = await createScriptedServer({ policy: answering(0.5) });
  const judges = ['a', 'b', 'c'].map((model) =>
    createRubricJudge({ id: model, server: createScriptedServerClient({ baseUrl: server.url, model }) }),
  );
  return { judge: createJudgePanel({ judges }), subjects: [subject('a')], cleanup: () => server.close() };
});

describeGroupJudgeConformance('group judge', async () => {
  const server = await createScriptedServer({ policy: qualityPolicy });
  return {
    judge: createGroupJudge({ server: createScriptedServerClient({ baseUrl: server.url, model: 'g' }) }),
    subjects: [subject('quality=1', 'a'), subject('quality=3', 'b')],
    cleanup: () => server.close(),
  };
});
