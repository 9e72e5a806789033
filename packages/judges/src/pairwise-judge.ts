// Pairwise judging with position swap: each pair is judged twice, A-vs-B and B-vs-A. A winner
// is declared only when both orders agree; disagreement means the judge preferred a position,
// which is counted so position bias can be reported. Each call shows the two transcripts as
// quarantined data under labels drawn per call, and the reply must echo the call's nonce. The
// injection screen runs over both attempts; a flagged attempt cannot win by its injection:
// `zero` makes it lose, `escalate` re-compares with the suspicious spans removed.
import type { ChatClient, ChatMessage, JudgeSubject, Usage } from '@shears/core';
import { z } from 'zod';
import {
  buildTranscriptView,
  type FormatTrajectoryOptions,
  renderTranscript,
  type TranscriptView,
} from './format-trajectory.js';
import {
  type InjectionRecord,
  type InjectionSettings,
  injectionRecord,
  resolveInjection,
  runModelScreen,
} from './injection-policy.js';
import { type InjectionScreen, redactTranscriptView, screenTranscriptView } from './injection-screen.js';
import { judgeChat } from './judge-chat.js';
import { addUsage, type JudgePricing, resolveUsage } from './judge-cost.js';
import {
  createCandidateLabels,
  createJudgeNonce,
  type JudgeInputRecord,
  judgeInputRecord,
  type RandomIndex,
} from './judge-nonce.js';
import {
  closingReminder,
  instructionsHeading,
  quotedSection,
  strictNotice,
  untrustedNotice,
} from './judge-prompt.js';
import { selectNonceReply } from './verdict-parsing.js';

export interface PairwiseJudgeSettings {
  id?: string;
  server: ChatClient & { model?: string };
  criteria?: string;
  /** Per comparison call (default 60 s); past it the outcome is a failure of kind `timeout`. */
  timeoutMs?: number;
  format?: FormatTrajectoryOptions;
  /** Prices the judge calls (`usage.costUsd` of the outcome). */
  pricing?: JudgePricing;
  /** What follows a suspected injection in either attempt (default: a strict re-comparison). */
  injection?: InjectionSettings;
  /** Source of nonces and labels (default: node:crypto). */
  random?: RandomIndex;
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
      /** What each call was shown (prompt sha256, nonce, the labels of a and b). */
      judgeInput?: Array<JudgeInputRecord & { labels: { a: string; b: string } }>;
      /** A suspected injection in either attempt, and what followed. */
      injection?: {
        a?: InjectionRecord;
        b?: InjectionRecord;
        judgeWinner?: 'a' | 'b' | 'tie';
        strictWinner?: 'a' | 'b' | 'tie';
      };
      flags?: string[];
    }
  | { status: 'failed'; kind: string; reason: string; usage?: Usage };
export type PairPosition = 'first' | 'second' | 'tie';

const pairReplySchema = z.looseObject({
  winner: z.string(),
  rationale: z.string().optional(),
});

/** The messages of one pairwise comparison: `first` then `second`, under `labels`. */
function pairwiseMessages(
  task: string,
  views: readonly [TranscriptView, TranscriptView],
  labels: readonly [string, string],
  criteria: string,
  strict?: { rules: readonly string[]; instructions?: string },
): ChatMessage[] {
  const nonce = views[0].nonce;
  const [firstLabel, secondLabel] = labels;
  const form = `{"nonce": "${nonce}", "winner": "${firstLabel}" or "${secondLabel}" or "tie", "rationale": "..."}`;
  return [
    {
      role: 'system',
      content: [
        'You compare two attempts at the same task. Judge only quality, never order or label.',
        untrustedNotice(nonce, 'candidates'),
        ...(strict ? [strictNotice(strict.rules, strict.instructions)] : []),
      ].join('\n\n'),
    },
    {
      role: 'user',
      content: [
        quotedSection(nonce, 'TASK', task),
        renderTranscript(views[0], firstLabel),
        renderTranscript(views[1], secondLabel),
        [
          instructionsHeading(nonce),
          `Criteria: ${criteria}`,
          `Reply with only a JSON object of the form ${form}.`,
          closingReminder(nonce),
        ].join('\n'),
      ].join('\n\n'),
    },
  ];
}

const DEFAULT_CRITERIA = 'Which attempt better completes the task, correctly and efficiently?';

function pairView(
  subject: JudgeSubject,
  nonce: string,
  format: FormatTrajectoryOptions | undefined,
): TranscriptView {
  return buildTranscriptView(subject.messages, {
    maxTotalChars: 10_000,
    ...format,
    nonce,
    finalResponse: subject.finalResponse,
  });
}

/** The messages of one pairwise comparison call (with a recorded nonce and labels, its exact prompt). */
export function buildPairwisePrompt(
  first: JudgeSubject,
  second: JudgeSubject,
  options: {
    nonce: string;
    labels: readonly [string, string];
    criteria?: string;
    format?: FormatTrajectoryOptions;
  },
): ChatMessage[] {
  return pairwiseMessages(
    first.task,
    [pairView(first, options.nonce, options.format), pairView(second, options.nonce, options.format)],
    options.labels,
    options.criteria ?? DEFAULT_CRITERIA,
  );
}

export interface PairwiseJudge {
  readonly id: string;
  compare(a: JudgeSubject, b: JudgeSubject, options?: { signal?: AbortSignal }): Promise<PairwiseOutcome>;
}

type Answer = {
  result: PairPosition | { kind: string; reason: string };
  usage?: Usage;
  input?: JudgeInputRecord & { labels: { a: string; b: string } };
};

export function createPairwiseJudge(settings: PairwiseJudgeSettings): PairwiseJudge {
  const id = settings.id ?? `pairwise:${settings.server.model ?? 'judge'}`;
  const criteria = settings.criteria ?? DEFAULT_CRITERIA;
  const timeoutMs = settings.timeoutMs ?? 60_000;
  const injection = resolveInjection(settings.injection, {
    server: settings.server,
    timeoutMs,
    temperature: 0,
  });

  const viewOf = (subject: JudgeSubject, nonce: string) => pairView(subject, nonce, settings.format);

  async function ask(
    first: JudgeSubject,
    second: JudgeSubject,
    firstIsA: boolean,
    signal: AbortSignal | undefined,
    strict?: { screens: { first: InjectionScreen; second: InjectionScreen }; rules: string[] },
  ): Promise<Answer> {
    const nonce = createJudgeNonce(settings.random);
    const [firstLabel, secondLabel] = createCandidateLabels(2, settings.random) as [string, string];
    let views: [TranscriptView, TranscriptView] = [viewOf(first, nonce), viewOf(second, nonce)];
    if (strict)
      views = [
        redactTranscriptView(views[0], strict.screens.first.spans),
        redactTranscriptView(views[1], strict.screens.second.spans),
      ];
    const messages = pairwiseMessages(
      first.task,
      views,
      [firstLabel, secondLabel],
      criteria,
      strict ? { rules: strict.rules, instructions: injection.strict.instructions } : undefined,
    );
    const labels = firstIsA ? { a: firstLabel, b: secondLabel } : { a: secondLabel, b: firstLabel };
    const input = { ...judgeInputRecord(messages, nonce), labels };
    const reply = await judgeChat(
      strict ? injection.strict.server : settings.server,
      { messages, temperature: 0, extraBody: { response_format: { type: 'json_object' } } },
      { timeoutMs: strict ? injection.strict.timeoutMs : timeoutMs, signal },
    );
    if (!reply.ok) return { result: { kind: reply.kind, reason: reply.reason }, input };
    const content = reply.response.choices[0]?.message.content;
    const text = typeof content === 'string' ? content : '';
    const { estimated: _estimated, ...usage } = await resolveUsage({
      serverUsage: reply.response.usage,
      promptText: messages.map((message) => String(message.content)).join('\n'),
      completionText: text,
      pricing: settings.pricing,
    });
    const selected = selectNonceReply(text, nonce, pairReplySchema, 'pairwise judge reply');
    if (!selected.ok) return { result: { kind: 'unparseable', reason: selected.reason }, usage, input };
    const winner = selected.value.winner.trim();
    if (winner === firstLabel) return { result: 'first', usage, input };
    if (winner === secondLabel) return { result: 'second', usage, input };
    if (winner.toLowerCase() === 'tie') return { result: 'tie', usage, input };
    return {
      result: {
        kind: 'unparseable',
        reason: `winner ${JSON.stringify(winner)} is neither candidate (${firstLabel}, ${secondLabel}) nor "tie"`,
      },
      usage,
      input,
    };
  }

  type Compared = Extract<PairwiseOutcome, { status: 'compared' }>;

  async function bothOrders(
    a: JudgeSubject,
    b: JudgeSubject,
    signal: AbortSignal | undefined,
    strict?: { screens: { a: InjectionScreen; b: InjectionScreen }; rules: string[] },
  ): Promise<PairwiseOutcome> {
    const forwardAnswer = await ask(
      a,
      b,
      true,
      signal,
      strict
        ? { screens: { first: strict.screens.a, second: strict.screens.b }, rules: strict.rules }
        : undefined,
    );
    const forward = forwardAnswer.result;
    if (typeof forward !== 'string') return { status: 'failed', ...forward, usage: forwardAnswer.usage };
    const backwardAnswer = await ask(
      b,
      a,
      false,
      signal,
      strict
        ? { screens: { first: strict.screens.b, second: strict.screens.a }, rules: strict.rules }
        : undefined,
    );
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
      judgeInput: [forwardAnswer.input!, backwardAnswer.input!],
    };
  }

  return {
    id,
    async compare(a, b, options = {}) {
      // An already-aborted signal never fires 'abort' again: check it before calling the judge.
      if (options.signal?.aborted)
        return { status: 'failed', kind: 'aborted', reason: 'judging was cancelled' };
      const screenNonce = createJudgeNonce(settings.random);
      const screenViews = { a: viewOf(a, screenNonce), b: viewOf(b, screenNonce) };
      const screens = { a: screenTranscriptView(screenViews.a), b: screenTranscriptView(screenViews.b) };
      let screenUsage: Usage | undefined;
      if (injection.modelScreen) {
        const [modelA, modelB] = await Promise.all(
          [screenViews.a, screenViews.b].map((view) =>
            runModelScreen(view, {
              ...injection.modelScreen!,
              pricing: settings.pricing,
              signal: options.signal,
            }),
          ),
        );
        screenUsage = addUsage(modelA!.usage, modelB!.usage);
        screens.a = {
          suspected: screens.a.suspected || modelA!.status === 'suspected',
          spans: [...screens.a.spans, ...modelA!.spans],
        };
        screens.b = {
          suspected: screens.b.suspected || modelB!.status === 'suspected',
          spans: [...screens.b.spans, ...modelB!.spans],
        };
      }
      const first = await bothOrders(a, b, options.signal);
      if (first.status === 'failed') return { ...first, usage: addUsage(first.usage, screenUsage) };
      const outcome: Compared = { ...first, usage: addUsage(first.usage, screenUsage) };
      const flagged = { a: screens.a.suspected, b: screens.b.suspected };
      if (!flagged.a && !flagged.b) return outcome;
      const record = (side: 'a' | 'b') =>
        flagged[side] ? injectionRecord(injection.action, screens[side].spans) : undefined;
      const injectionInfo: NonNullable<Compared['injection']> = {
        ...(flagged.a ? { a: record('a')! } : {}),
        ...(flagged.b ? { b: record('b')! } : {}),
        judgeWinner: first.winner,
      };
      let winner = first.winner;
      if (injection.action === 'zero') {
        // A flagged attempt loses to an unflagged one; two flagged attempts tie.
        if (flagged.a && flagged.b) winner = 'tie';
        else winner = flagged.a ? 'b' : 'a';
      } else if (injection.action === 'escalate') {
        const rules = [...new Set([...screens.a.spans, ...screens.b.spans].map((span) => span.rule))];
        const strict = await bothOrders(a, b, options.signal, { screens, rules });
        outcome.usage = addUsage(outcome.usage, strict.usage);
        if (strict.status === 'failed')
          return {
            status: 'failed',
            kind: strict.kind,
            reason: `the stricter re-comparison (after a suspected injection) failed: ${strict.reason}`,
            usage: outcome.usage,
          };
        injectionInfo.strictWinner = strict.winner;
        outcome.judgeInput = [...(outcome.judgeInput ?? []), ...(strict.judgeInput ?? [])];
        // Escalation only lowers: a flagged attempt wins only if both comparisons say so.
        winner =
          strict.winner !== 'tie' && flagged[strict.winner] && first.winner !== strict.winner
            ? 'tie'
            : strict.winner;
      }
      return { ...outcome, winner, injection: injectionInfo, flags: ['judge_injection_suspected'] };
    },
  };
}
