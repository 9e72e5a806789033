// Listwise group judging for GRPO: all rollouts of a group are scored in one call, relative to
// each other. The order shown to the judge is shuffled (and, with several rounds, reshuffled
// and averaged) so that position bias cancels out instead of favouring the first rollout.
import {
  type ChatClient,
  type ChatMessage,
  type GroupJudgeV1,
  type JudgeSubject,
  safeParseJson,
  type Usage,
  type Verdict,
} from '@shears/core';
import { z } from 'zod';
import { type FormatTrajectoryOptions, formatTrajectory } from './format-trajectory.js';
import { judgeChat } from './judge-chat.js';
import { addUsage, type JudgePricing, resolveUsage, splitUsage } from './judge-cost.js';
import { extractJsonObjects } from './verdict-parsing.js';

export interface GroupJudgeSettings {
  id?: string;
  server: ChatClient & { model?: string };
  /** What "better" means for this task family. */
  criteria?: string;
  /** Independent shuffled rounds, averaged (default 1). */
  rounds?: number;
  timeoutMs?: number;
  temperature?: number;
  random?: () => number;
  format?: FormatTrajectoryOptions;
  /** Prices the judge calls; each verdict carries its share of the group's usage and cost. */
  pricing?: JudgePricing;
}

const groupReplySchema = z.looseObject({
  scores: z.record(z.string(), z.number()),
  rationale: z.string().optional(),
});

/** Fisher-Yates permutation of 0..n-1. */
export function shuffledIndices(count: number, random: () => number): number[] {
  const order = Array.from({ length: count }, (_, index) => index);
  for (let index = count - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [order[index], order[other]] = [order[other]!, order[index]!];
  }
  return order;
}

function buildGroupPrompt(
  subjects: readonly JudgeSubject[],
  order: readonly number[],
  criteria: string,
  format?: FormatTrajectoryOptions,
): ChatMessage[] {
  const task = subjects[0]?.task ?? '';
  const candidates = order
    .map((subjectIndex, position) => {
      const subject = subjects[subjectIndex]!;
      const answer = subject.finalResponse ? `\nFinal response:\n${subject.finalResponse}` : '';
      return `### Candidate ${position + 1}\n${formatTrajectory(subject.messages, { maxTotalChars: 8_000, ...format })}${answer}`;
    })
    .join('\n\n');
  const example = Object.fromEntries(order.map((_, position) => [String(position + 1), 0.5]));
  return [
    {
      role: 'system',
      content:
        'You compare several attempts at the same task and score each relative to the others. Judge only quality, never position.',
    },
    {
      role: 'user',
      content: `Task:\n${task}\n\nCriteria: ${criteria}\n\n${candidates}\n\nScore every candidate from 0.0 (worst) to 1.0 (best), relative to the others. Reply with only a JSON object like ${JSON.stringify({ scores: example, rationale: 'short reason' })}.`,
    },
  ];
}

type RoundUsage = Usage & { estimated: boolean };
type RoundResult =
  | { ok: true; scores: number[]; rationale: string; usage?: RoundUsage }
  | { ok: false; kind: string; reason: string; usage?: RoundUsage };

export function createGroupJudge(settings: GroupJudgeSettings): GroupJudgeV1 {
  const id = settings.id ?? `group:${settings.server.model ?? 'judge'}`;
  const rounds = Math.max(1, settings.rounds ?? 1);
  const timeoutMs = settings.timeoutMs ?? 120_000;
  const random = settings.random ?? Math.random;
  const criteria = settings.criteria ?? 'Which attempt best completes the task, correctly and efficiently?';

  async function round(
    subjects: readonly JudgeSubject[],
    signal: AbortSignal | undefined,
  ): Promise<RoundResult> {
    // An already-aborted signal never fires 'abort' again: check it before calling the judge.
    if (signal?.aborted) return { ok: false, kind: 'aborted', reason: 'judging was cancelled' };
    const order = shuffledIndices(subjects.length, random);
    const messages = buildGroupPrompt(subjects, order, criteria, settings.format);
    const reply = await judgeChat(
      settings.server,
      {
        messages,
        temperature: settings.temperature ?? 0,
        extraBody: { response_format: { type: 'json_object' } },
      },
      { timeoutMs, signal },
    );
    if (!reply.ok) return { ok: false, kind: reply.kind, reason: reply.reason };
    const content = reply.response.choices[0]?.message.content;
    const text = typeof content === 'string' ? content : '';
    const usage = await resolveUsage({
      serverUsage: reply.response.usage,
      promptText: messages.map((message) => String(message.content)).join('\n'),
      completionText: text,
      pricing: settings.pricing,
    });
    for (const candidate of [text.trim(), ...extractJsonObjects(text)]) {
      const parsed = safeParseJson(candidate, { source: 'group judge reply', schema: groupReplySchema });
      if (!parsed.success) continue;
      const scores: number[] = new Array(subjects.length).fill(Number.NaN);
      for (let position = 0; position < order.length; position++) {
        const value = parsed.value.scores[String(position + 1)];
        if (value === undefined)
          return {
            ok: false,
            kind: 'unparseable',
            reason: `no score for candidate ${position + 1}`,
            usage,
          };
        if (!(value >= 0 && value <= 1))
          return {
            ok: false,
            kind: 'out_of_range',
            reason: `candidate ${position + 1} scored ${value}, outside [0, 1]`,
            usage,
          };
        scores[order[position]!] = value;
      }
      return { ok: true, scores, rationale: parsed.value.rationale ?? '', usage };
    }
    return {
      ok: false,
      kind: 'unparseable',
      reason: `no scores object in the reply: ${JSON.stringify(text.slice(0, 200))}`,
      usage,
    };
  }

  return {
    specificationVersion: 'v1',
    id,
    async judgeGroup(subjects, options = {}): Promise<Verdict[]> {
      if (subjects.length === 0) return [];
      const results: RoundResult[] = [];
      for (let index = 0; index < rounds; index++) {
        const result = await round(subjects, options.signal);
        results.push(result);
        // A cancelled or failed round fails the group; further rounds would only cost money.
        if (!result.ok) break;
      }
      // One call judges the whole group: each verdict carries an equal share of the calls' usage,
      // so summing the verdicts of a group gives what the judge really cost.
      const groupUsage = results.reduce<Usage | undefined>(
        (total, result) => addUsage(total, result.usage),
        undefined,
      );
      const usageEstimated = results.some((result) => result.usage?.estimated);
      const shares = groupUsage ? splitUsage(groupUsage, subjects.length) : undefined;
      const failed = results.find((result): result is Extract<RoundResult, { ok: false }> => !result.ok);
      if (failed)
        return subjects.map((_, index) => ({
          status: 'failed',
          kind: failed.kind,
          reason: failed.reason,
          usage: shares?.[index],
          judgeId: id,
        }));
      const successes = results as Extract<RoundResult, { ok: true }>[];
      return subjects.map((_, index): Verdict => {
        const perRound = successes.map((result) => result.scores[index]!);
        return {
          status: 'scored',
          score: perRound.reduce((sum, value) => sum + value, 0) / perRound.length,
          rationale: successes
            .map((result) => result.rationale)
            .filter(Boolean)
            .join('\n'),
          usage: shares?.[index],
          judgeId: id,
          details: { rounds: perRound, groupUsage, usageEstimated },
        };
      });
    },
  };
}
