// Pairwise judging with position swap: each pair is judged twice, A-vs-B and B-vs-A. A winner
// is declared only when both orders agree; disagreement means the judge preferred a position,
// which is counted so position bias can be reported.
import { type ChatClient, describeError, type JudgeSubject, safeParseJson } from '@shears/core';
import { z } from 'zod';
import { type FormatTrajectoryOptions, formatTrajectory } from './format-trajectory.js';
import { extractJsonObjects } from './verdict-parsing.js';

export interface PairwiseJudgeSettings {
  id?: string;
  server: ChatClient & { model?: string };
  criteria?: string;
  timeoutMs?: number;
  format?: FormatTrajectoryOptions;
}

export type PairwiseOutcome =
  | {
      status: 'compared';
      winner: 'a' | 'b' | 'tie';
      /** Both orders agreed. */
      consistent: boolean;
      /** Which position won in each order ('first' | 'second' | 'tie'), for position-bias reports. */
      positions: [PairPosition, PairPosition];
    }
  | { status: 'failed'; kind: string; reason: string };
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

  async function ask(
    first: JudgeSubject,
    second: JudgeSubject,
    signal?: AbortSignal,
  ): Promise<PairPosition | { kind: string; reason: string }> {
    const render = (subject: JudgeSubject) =>
      `${formatTrajectory(subject.messages, { maxTotalChars: 10_000, ...settings.format })}${subject.finalResponse ? `\nFinal response:\n${subject.finalResponse}` : ''}`;
    try {
      const response = await settings.server.chat({
        messages: [
          {
            role: 'system',
            content: 'You compare two attempts at the same task. Judge only quality, never order.',
          },
          {
            role: 'user',
            content: `Task:\n${first.task}\n\nCriteria: ${criteria}\n\n### Attempt 1\n${render(first)}\n\n### Attempt 2\n${render(second)}\n\nReply with only a JSON object {"winner": "1" | "2" | "tie", "rationale": "..."}.`,
          },
        ],
        temperature: 0,
        timeoutMs: settings.timeoutMs ?? 60_000,
        signal,
        extraBody: { response_format: { type: 'json_object' } },
      });
      const text =
        typeof response.choices[0]?.message.content === 'string' ? response.choices[0].message.content : '';
      for (const candidate of [text.trim(), ...extractJsonObjects(text)]) {
        const parsed = safeParseJson(candidate, { source: 'pairwise judge reply', schema: pairReplySchema });
        if (parsed.success)
          return parsed.value.winner === '1' ? 'first' : parsed.value.winner === '2' ? 'second' : 'tie';
      }
      return {
        kind: 'unparseable',
        reason: `no {"winner": ...} in the reply: ${JSON.stringify(text.slice(0, 200))}`,
      };
    } catch (error) {
      return { kind: signal?.aborted ? 'aborted' : 'server_error', reason: describeError(error) };
    }
  }

  return {
    id,
    async compare(a, b, options = {}) {
      const forward = await ask(a, b, options.signal);
      if (typeof forward !== 'string') return { status: 'failed', ...forward };
      const backward = await ask(b, a, options.signal);
      if (typeof backward !== 'string') return { status: 'failed', ...backward };
      // Map positions back to subjects: forward 'first' = a; backward 'first' = b.
      const forwardWinner = forward === 'first' ? 'a' : forward === 'second' ? 'b' : 'tie';
      const backwardWinner = backward === 'first' ? 'b' : backward === 'second' ? 'a' : 'tie';
      const consistent = forwardWinner === backwardWinner;
      return {
        status: 'compared',
        winner: consistent ? forwardWinner : 'tie',
        consistent,
        positions: [forward, backward],
      };
    },
  };
}
