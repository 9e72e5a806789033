// Pairwise judging with position swap: each pair is judged twice, A-vs-B and B-vs-A. A winner
// is declared only when both orders agree; disagreement means the judge preferred a position,
// which is counted so position bias can be reported.
import {
  type ChatClient,
  type ChatMessage,
  type JudgeSubject,
  safeParseJson,
  type Usage,
} from '@shears/core';
import { z } from 'zod';
import { type FormatTrajectoryOptions, formatTrajectory } from './format-trajectory.js';
import { judgeChat } from './judge-chat.js';
import { addUsage, type JudgePricing, resolveUsage } from './judge-cost.js';
import { extractJsonObjects } from './verdict-parsing.js';

export interface PairwiseJudgeSettings {
  id?: string;
  server: ChatClient & { model?: string };
  criteria?: string;
  /** Per comparison call (default 60 s); past it the outcome is a failure of kind `timeout`. */
  timeoutMs?: number;
  format?: FormatTrajectoryOptions;
  /** Prices the judge calls (`usage.costUsd` of the outcome). */
  pricing?: JudgePricing;
}

export type PairwiseOutcome =
  | {
      status: 'compared';
      winner: 'a' | 'b' | 'tie';
      /** Both orders agreed. */
      consistent: boolean;
      /** Which position won in each order ('first' | 'second' | 'tie'), for position-bias reports. */
      positions: [PairPosition, PairPosition];
      /** Tokens and cost of both calls (server-reported, else counted with tiktoken). */
      usage?: Usage;
    }
  | { status: 'failed'; kind: string; reason: string; usage?: Usage };
export type PairPosition = 'first' | 'second' | 'tie';

const pairReplySchema = z.looseObject({
  winner: z.enum(['1', '2', 'tie']),
  rationale: z.string().optional(),
});

export interface PairwiseJudge {
  readonly id: string;
  compare(a: JudgeSubject, b: JudgeSubject, options?: { signal?: AbortSignal }): Promise<PairwiseOutcome>;
}

export function createPairwiseJudge(settings: PairwiseJudgeSettings): PairwiseJudge {
  const id = settings.id ?? `pairwise:${settings.server.model ?? 'judge'}`;
  const criteria = settings.criteria ?? 'Which attempt better completes the task, correctly and efficiently?';
  const timeoutMs = settings.timeoutMs ?? 60_000;

  type Answer = { result: PairPosition | { kind: string; reason: string }; usage?: Usage };

  async function ask(first: JudgeSubject, second: JudgeSubject, signal?: AbortSignal): Promise<Answer> {
    const render = (subject: JudgeSubject) =>
      `${formatTrajectory(subject.messages, { maxTotalChars: 10_000, ...settings.format })}${subject.finalResponse ? `\nFinal response:\n${subject.finalResponse}` : ''}`;
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content: 'You compare two attempts at the same task. Judge only quality, never order.',
      },
      {
        role: 'user',
        content: `Task:\n${first.task}\n\nCriteria: ${criteria}\n\n### Attempt 1\n${render(first)}\n\n### Attempt 2\n${render(second)}\n\nReply with only a JSON object {"winner": "1" | "2" | "tie", "rationale": "..."}.`,
      },
    ];
    const reply = await judgeChat(
      settings.server,
      { messages, temperature: 0, extraBody: { response_format: { type: 'json_object' } } },
      { timeoutMs, signal },
    );
    if (!reply.ok) return { result: { kind: reply.kind, reason: reply.reason } };
    const content = reply.response.choices[0]?.message.content;
    const text = typeof content === 'string' ? content : '';
    const serverUsage = reply.response.usage;
    const { estimated: _estimated, ...usage } = await resolveUsage({
      serverUsage,
      promptText: messages.map((message) => String(message.content)).join('\n'),
      completionText: text,
      pricing: settings.pricing,
    });
    for (const candidate of [text.trim(), ...extractJsonObjects(text)]) {
      const parsed = safeParseJson(candidate, { source: 'pairwise judge reply', schema: pairReplySchema });
      if (parsed.success) {
        const winner = parsed.value.winner;
        return { result: winner === '1' ? 'first' : winner === '2' ? 'second' : 'tie', usage };
      }
    }
    return {
      result: {
        kind: 'unparseable',
        reason: `no {"winner": ...} in the reply: ${JSON.stringify(text.slice(0, 200))}`,
      },
      usage,
    };
  }

  return {
    id,
    async compare(a, b, options = {}) {
      const forwardAnswer = await ask(a, b, options.signal);
      const forward = forwardAnswer.result;
      if (typeof forward !== 'string') return { status: 'failed', ...forward, usage: forwardAnswer.usage };
      const backwardAnswer = await ask(b, a, options.signal);
      const usage = addUsage(forwardAnswer.usage, backwardAnswer.usage);
      const backward = backwardAnswer.result;
      if (typeof backward !== 'string') return { status: 'failed', ...backward, usage };
      // Map positions back to subjects: forward 'first' = a; backward 'first' = b.
      const forwardWinner = forward === 'first' ? 'a' : forward === 'second' ? 'b' : 'tie';
      const backwardWinner = backward === 'first' ? 'b' : backward === 'second' ? 'a' : 'tie';
      const consistent = forwardWinner === backwardWinner;
      return {
        status: 'compared',
        winner: consistent ? forwardWinner : 'tie',
        consistent,
        positions: [forward, backward],
        usage,
      };
    },
  };
}
