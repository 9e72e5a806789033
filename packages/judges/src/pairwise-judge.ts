// Pairwise judging with position swap: each pair is judged twice, A-vs-B and B-vs-A. A winner
// is declared only when both orders agree; disagreement means the judge preferred a position,
// which is counted so position bias can be reported.
import {
  type ChatClient,
  type ChatMessage,
  describeError,
  type JudgeSubject,
  ServerError,
  safeParseJson,
  type Usage,
} from '@shears/core';
import { z } from 'zod';
import { type FormatTrajectoryOptions, formatTrajectory } from './format-trajectory.js';
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
    if (signal?.aborted) return { result: { kind: 'aborted', reason: 'judging was cancelled' } };
    // Our own timer, not only the server's: a client that ignores `timeoutMs` must not hang us.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`judge timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let text: string;
    let serverUsage: Usage | undefined;
    try {
      const stopped = new Promise<never>((_, reject) => {
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
      });
      const response = await Promise.race([
        settings.server.chat({
          messages,
          temperature: 0,
          timeoutMs,
          signal: controller.signal,
          extraBody: { response_format: { type: 'json_object' } },
        }),
        stopped,
      ]);
      text =
        typeof response.choices[0]?.message.content === 'string' ? response.choices[0].message.content : '';
      serverUsage = response.usage;
    } catch (error) {
      if (timedOut) return { result: { kind: 'timeout', reason: `no verdict within ${timeoutMs} ms` } };
      if (signal?.aborted) return { result: { kind: 'aborted', reason: 'judging was cancelled' } };
      const kind = ServerError.isInstance(error) ? 'server_error' : 'other';
      return { result: { kind, reason: describeError(error) } };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
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
