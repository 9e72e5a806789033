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
  decideInjection,
  echoRecord,
  type InjectionRecord,
  type InjectionSettings,
  injectionRecord,
  resolveInjection,
  runModelScreen,
} from './injection-policy.js';
import {
  attributeSpans,
  type InjectionSpan,
  JUDGE_INJECTION_FLAG,
  redactTranscriptView,
  screenTranscriptView,
} from './injection-screen.js';
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
import { agentEchoSources, blameEcho, echoInVerdict, type ReplyEcho } from './reply-echo.js';
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
      /**
       * Which position won in each order ('first' | 'second' | 'tie'), for position-bias reports;
       * empty when no comparison decided the outcome (an attempt penalised for its own text).
       */
      positions: PairPosition[];
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

const pairReplySchema = z.object({
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

type Side = 'a' | 'b';
type AnswerFailure = {
  kind: string;
  reason: string;
  /** The reply was unreadable because it repeated these attempts' text. */
  echo?: ReplyEcho & { sides: Side[] };
};
type Answer = {
  result: PairPosition | AnswerFailure;
  usage?: Usage;
  input?: JudgeInputRecord & { labels: { a: string; b: string } };
};

/** Reads a pairwise reply: the winner's label, or "tie". */
function readPairReply(
  text: string,
  nonce: string,
  labels: readonly [string, string],
): { ok: true; position: PairPosition } | { ok: false; reason: string } {
  const selected = selectNonceReply(text, nonce, pairReplySchema, 'pairwise judge reply');
  if (!selected.ok) return selected;
  const winner = selected.value.winner.trim();
  if (winner === labels[0]) return { ok: true, position: 'first' };
  if (winner === labels[1]) return { ok: true, position: 'second' };
  if (winner.toLowerCase() === 'tie') return { ok: true, position: 'tie' };
  return {
    ok: false,
    reason: `winner ${JSON.stringify(winner)} is neither candidate (${labels[0]}, ${labels[1]}) nor "tie"`,
  };
}

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
    strict?: {
      spans: { first: readonly InjectionSpan[]; second: readonly InjectionSpan[] };
      rules: string[];
    },
  ): Promise<Answer> {
    const nonce = createJudgeNonce(settings.random);
    const labels = createCandidateLabels(2, settings.random) as [string, string];
    let views: [TranscriptView, TranscriptView] = [viewOf(first, nonce), viewOf(second, nonce)];
    if (strict)
      views = [
        redactTranscriptView(views[0], strict.spans.first),
        redactTranscriptView(views[1], strict.spans.second),
      ];
    const messages = pairwiseMessages(
      first.task,
      views,
      labels,
      criteria,
      strict ? { rules: strict.rules, instructions: injection.strict.instructions } : undefined,
    );
    const shownAs = firstIsA ? { a: labels[0], b: labels[1] } : { a: labels[1], b: labels[0] };
    const input = { ...judgeInputRecord(messages, nonce), labels: shownAs };
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
    const read = readPairReply(text, nonce, labels);
    // A reply made unreadable by repeating an attempt's text, or a verdict written around an
    // attempt's unescaped text, is that attempt's doing.
    const sources = (shown: boolean) => [
      ...agentEchoSources(views[0], 0, shown),
      ...agentEchoSources(views[1], 1, shown),
    ];
    const echo = read.ok
      ? echoInVerdict(text, sources(false), nonce)
      : blameEcho(text, sources(true), (cut) => readPairReply(cut, nonce, labels).ok, nonce);
    if (read.ok && !echo) return { result: read.position, usage, input };
    const sideOf = (position: number): Side => ((position === 0) === firstIsA ? 'a' : 'b');
    return {
      result: {
        kind: 'unparseable',
        reason: read.ok ? echo!.reason : read.reason,
        ...(echo
          ? {
              echo: {
                chars: echo.chars,
                share: echo.share,
                excerpt: echo.excerpt,
                reason: echo.reason,
                sides: echo.owners.map(sideOf),
              },
            }
          : {}),
      },
      usage,
      input,
    };
  }

  type Compared = Extract<PairwiseOutcome, { status: 'compared' }>;
  type Compare =
    | Compared
    | { status: 'failed'; kind: string; reason: string; usage?: Usage; echo?: AnswerFailure['echo'] };

  async function bothOrders(
    a: JudgeSubject,
    b: JudgeSubject,
    signal: AbortSignal | undefined,
    strict?: { spans: { a: readonly InjectionSpan[]; b: readonly InjectionSpan[] }; rules: string[] },
  ): Promise<Compare> {
    const forwardAnswer = await ask(
      a,
      b,
      true,
      signal,
      strict ? { spans: { first: strict.spans.a, second: strict.spans.b }, rules: strict.rules } : undefined,
    );
    const forward = forwardAnswer.result;
    if (typeof forward !== 'string') return { status: 'failed', ...forward, usage: forwardAnswer.usage };
    const backwardAnswer = await ask(
      b,
      a,
      false,
      signal,
      strict ? { spans: { first: strict.spans.b, second: strict.spans.a }, rules: strict.rules } : undefined,
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

  /** The winner when one or both attempts lose by their own doing: the other, or a tie. */
  const againstBoth = (losers: ReadonlySet<Side>): Compared['winner'] =>
    losers.size === 2 ? 'tie' : losers.has('a') ? 'b' : 'a';

  return {
    id,
    async compare(a, b, options = {}) {
      // An already-aborted signal never fires 'abort' again: check it before calling the judge.
      if (options.signal?.aborted)
        return { status: 'failed', kind: 'aborted', reason: 'judging was cancelled' };
      const screenNonce = createJudgeNonce(settings.random);
      const subjects = { a, b };
      const screenViews = { a: viewOf(a, screenNonce), b: viewOf(b, screenNonce) };
      const spans: Record<Side, InjectionSpan[]> = {
        a: screenTranscriptView(screenViews.a, { subject: a }).spans,
        b: screenTranscriptView(screenViews.b, { subject: b }).spans,
      };
      let usage: Usage | undefined;
      if (injection.modelScreen) {
        const models = await Promise.all(
          (['a', 'b'] as const).map((side) =>
            runModelScreen(screenViews[side], {
              ...injection.modelScreen!,
              pricing: settings.pricing,
              signal: options.signal,
            }),
          ),
        );
        (['a', 'b'] as const).forEach((side, index) => {
          const model = models[index]!;
          usage = addUsage(usage, model.usage);
          if (model.status === 'suspected') spans[side].push(...attributeSpans(model.spans, subjects[side]));
        });
      }
      const decisions = { a: decideInjection(spans.a, injection), b: decideInjection(spans.b, injection) };
      const records: NonNullable<Compared['injection']> = {};
      for (const side of ['a', 'b'] as const) {
        const decision = decisions[side];
        if (decision)
          records[side] = injectionRecord(
            decision,
            decision.action === 'zero' ? { penaltyScore: injection.penaltyScore } : {},
          );
      }
      const flagged = records.a !== undefined || records.b !== undefined;
      const flags = flagged ? { flags: [JUDGE_INJECTION_FLAG] } : {};
      // An attempt whose score is decided by its own text loses without a comparison: its text
      // cannot move the judge.
      const zeroed = new Set((['a', 'b'] as const).filter((side) => decisions[side]?.action === 'zero'));
      if (zeroed.size > 0)
        return {
          status: 'compared',
          winner: againstBoth(zeroed),
          consistent: true,
          positions: [],
          ...(usage ? { usage } : {}),
          judgeInput: [],
          injection: records,
          ...flags,
        };
      /** A comparison made unreadable by an attempt's text: that attempt loses. */
      const echoed = (
        failed: Extract<Compare, { status: 'failed' }>,
        extra: Partial<InjectionRecord> = {},
      ) => {
        const echo = failed.echo!;
        for (const side of echo.sides) {
          const { sides: _sides, ...shown } = echo;
          records[side] = echoRecord(shown, injection, spans[side], extra);
        }
        return {
          status: 'compared' as const,
          winner: againstBoth(new Set(echo.sides)),
          consistent: true,
          positions: [],
          usage: addUsage(usage, failed.usage),
          judgeInput: [],
          injection: records,
          flags: [JUDGE_INJECTION_FLAG],
        };
      };
      const first = await bothOrders(a, b, options.signal);
      if (first.status === 'failed') {
        if (first.echo) return echoed(first);
        const { echo: _echo, ...failure } = first;
        return { ...failure, usage: addUsage(first.usage, usage) };
      }
      const outcome: Compared = { ...first, usage: addUsage(first.usage, usage) };
      if (!flagged) return outcome;
      records.judgeWinner = first.winner;
      let winner = first.winner;
      const escalate = (['a', 'b'] as const).filter((side) => decisions[side]?.action === 'escalate');
      if (escalate.length > 0) {
        const rules = [...new Set([...spans.a, ...spans.b].map((span) => span.rule))];
        const strict = await bothOrders(a, b, options.signal, {
          spans: { a: decisions.a?.spans ?? [], b: decisions.b?.spans ?? [] },
          rules,
        });
        outcome.usage = addUsage(outcome.usage, strict.usage);
        if (strict.status === 'failed') {
          if (strict.echo) return { ...echoed(strict), usage: outcome.usage };
          return {
            status: 'failed',
            kind: strict.kind,
            reason: `the stricter re-comparison (after a suspected injection) failed: ${strict.reason}`,
            usage: outcome.usage,
          };
        }
        records.strictWinner = strict.winner;
        outcome.judgeInput = [...(outcome.judgeInput ?? []), ...(strict.judgeInput ?? [])];
        // Escalation only lowers: a flagged attempt wins only if both comparisons say so.
        winner =
          strict.winner !== 'tie' && decisions[strict.winner] && first.winner !== strict.winner
            ? 'tie'
            : strict.winner;
      }
      return { ...outcome, winner, injection: records, flags: [JUDGE_INJECTION_FLAG] };
    },
  };
}
