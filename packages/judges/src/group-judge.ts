// Listwise group judging for GRPO: all rollouts of a group are scored in one call, relative to
// each other. The order shown to the judge is shuffled (and, with several rounds, reshuffled
// and averaged) so that position bias cancels out instead of favouring the first rollout.
// Each candidate's transcript is quarantined between nonce-tagged boundaries under a label drawn
// per call, so no agent can name itself or a rival; the reply must echo the call's nonce; the
// injection screen runs over every candidate and its action follows (a flagged candidate scores 0,
// or the group is re-judged strictly with the suspicious spans removed).
import type { ChatClient, ChatMessage, GroupJudgeV1, JudgeSubject, Usage, Verdict } from '@shears/core';
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
  flaggedDetails,
  type InjectionSettings,
  injectionRecord,
  type ModelScreenOutcome,
  resolveInjection,
  runModelScreen,
} from './injection-policy.js';
import {
  attributeSpans,
  type InjectionSpan,
  redactTranscriptView,
  screenTranscriptView,
} from './injection-screen.js';
import { judgeChat } from './judge-chat.js';
import { addUsage, type JudgePricing, resolveUsage, splitUsage } from './judge-cost.js';
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
  /** What follows a suspected injection (default: the group is re-judged strictly). */
  injection?: InjectionSettings;
  /** Source of nonces and candidate labels (default: node:crypto); `random` only shuffles. */
  nonceRandom?: RandomIndex;
}

const groupReplySchema = z.object({
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

/** The group prompt for one round: candidates in `order`, shown under `labels` (by position). */
function groupMessages(
  task: string,
  views: readonly TranscriptView[],
  order: readonly number[],
  labels: readonly string[],
  criteria: string,
  strict?: { rules: readonly string[]; instructions?: string },
): ChatMessage[] {
  const nonce = views[0]!.nonce;
  const candidates = order.map((subjectIndex, position) =>
    renderTranscript(views[subjectIndex]!, labels[position]),
  );
  const form = `{"nonce": "${nonce}", "scores": {${labels.map((label) => `"${label}": <0.0-1.0>`).join(', ')}}, "rationale": "short reason"}`;
  return [
    {
      role: 'system',
      content: [
        'You compare several attempts at the same task and score each relative to the others. Judge only quality, never position or label.',
        untrustedNotice(nonce, 'candidates'),
        ...(strict ? [strictNotice(strict.rules, strict.instructions)] : []),
      ].join('\n\n'),
    },
    {
      role: 'user',
      content: [
        quotedSection(nonce, 'TASK', task),
        ...candidates,
        [
          instructionsHeading(nonce),
          `Criteria: ${criteria}`,
          `Candidates: ${labels.join(', ')}.`,
          `Score every candidate from 0.0 (worst) to 1.0 (best), relative to the others. Reply with only a JSON object of the form ${form}.`,
          closingReminder(nonce),
        ].join('\n'),
      ].join('\n\n'),
    },
  ];
}

const DEFAULT_CRITERIA = 'Which attempt best completes the task, correctly and efficiently?';

function groupViews(
  subjects: readonly JudgeSubject[],
  nonce: string,
  format: FormatTrajectoryOptions | undefined,
): TranscriptView[] {
  return subjects.map((subject) =>
    buildTranscriptView(subject.messages, {
      maxTotalChars: 8_000,
      ...format,
      nonce,
      finalResponse: subject.finalResponse,
    }),
  );
}

/**
 * The messages a group judge sends for one round: `subjects` shown in `order` under `labels`
 * (by position). With a round's recorded nonce, labels and order this rebuilds its prompt (the
 * judgePromptHash equals the recorded `promptSha256`).
 */
export function buildGroupPrompt(
  subjects: readonly JudgeSubject[],
  options: {
    nonce: string;
    labels: readonly string[];
    order?: readonly number[];
    criteria?: string;
    format?: FormatTrajectoryOptions;
  },
): ChatMessage[] {
  const order = options.order ?? subjects.map((_, index) => index);
  return groupMessages(
    subjects[0]?.task ?? '',
    groupViews(subjects, options.nonce, options.format),
    order,
    options.labels,
    options.criteria ?? DEFAULT_CRITERIA,
  );
}

type RoundUsage = Usage & { estimated: boolean };
type RoundResult =
  | { ok: true; scores: number[]; rationale: string; usage?: RoundUsage; inputs: JudgeInputRecord[] }
  | {
      ok: false;
      kind: string;
      reason: string;
      usage?: RoundUsage;
      /** The reply was unreadable because it repeated these candidates' text (positions in the round's list). */
      echo?: ReplyEcho & { owners: number[] };
    };
type RoundScores =
  | { ok: true; scores: number[]; rationale: string }
  | { ok: false; kind: 'unparseable' | 'out_of_range'; reason: string };

/** Reads a group reply: one score in [0, 1] for every label shown, and none for any other label. */
function readGroupReply(text: string, nonce: string, labels: readonly string[]): RoundScores {
  const selected = selectNonceReply(text, nonce, groupReplySchema, 'group judge reply');
  if (!selected.ok) return { ok: false, kind: 'unparseable', reason: selected.reason };
  const given = selected.value.scores;
  const known = new Set(labels);
  const unknown = Object.keys(given).filter((label) => !known.has(label));
  if (unknown.length > 0)
    return {
      ok: false,
      kind: 'unparseable',
      reason: `scores for unknown candidates ${unknown.map((label) => JSON.stringify(label)).join(', ')} (candidates: ${labels.join(', ')})`,
    };
  const scores: number[] = [];
  for (const label of labels) {
    const value = given[label];
    if (value === undefined)
      return { ok: false, kind: 'unparseable', reason: `no score for candidate ${label}` };
    if (!(value >= 0 && value <= 1))
      return {
        ok: false,
        kind: 'out_of_range',
        reason: `candidate ${label} scored ${value}, outside [0, 1]`,
      };
    scores.push(value);
  }
  return { ok: true, scores, rationale: selected.value.rationale ?? '' };
}

export function createGroupJudge(settings: GroupJudgeSettings): GroupJudgeV1 {
  const id = settings.id ?? `group:${settings.server.model ?? 'judge'}`;
  const rounds = Math.max(1, settings.rounds ?? 1);
  const timeoutMs = settings.timeoutMs ?? 120_000;
  const random = settings.random ?? Math.random;
  const temperature = settings.temperature ?? 0;
  const criteria = settings.criteria ?? DEFAULT_CRITERIA;
  const injection = resolveInjection(settings.injection, { server: settings.server, timeoutMs, temperature });

  const viewsFor = (subjects: readonly JudgeSubject[], nonce: string) =>
    groupViews(subjects, nonce, settings.format);

  /** One call over `subjects` (scores by position in that list). */
  async function round(
    subjects: readonly JudgeSubject[],
    signal: AbortSignal | undefined,
    strict?: { spans: readonly (readonly InjectionSpan[])[]; rules: string[] },
  ): Promise<RoundResult> {
    // An already-aborted signal never fires 'abort' again: check it before calling the judge.
    if (signal?.aborted) return { ok: false, kind: 'aborted', reason: 'judging was cancelled' };
    const order = shuffledIndices(subjects.length, random);
    const nonce = createJudgeNonce(settings.nonceRandom);
    const labels = createCandidateLabels(subjects.length, settings.nonceRandom);
    let views = viewsFor(subjects, nonce);
    if (strict) views = views.map((view, index) => redactTranscriptView(view, strict.spans[index]!));
    const messages = groupMessages(
      subjects[0]?.task ?? '',
      views,
      order,
      labels,
      criteria,
      strict
        ? {
            rules: strict.rules,
            ...(injection.strict.instructions ? { instructions: injection.strict.instructions } : {}),
          }
        : undefined,
    );
    const reply = await judgeChat(
      strict ? injection.strict.server : settings.server,
      {
        messages,
        temperature: strict ? injection.strict.temperature : temperature,
        extraBody: { response_format: { type: 'json_object' } },
      },
      { timeoutMs: strict ? injection.strict.timeoutMs : timeoutMs, signal },
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
    const read = readGroupReply(text, nonce, labels);
    // A verdict written around a candidate's unescaped text may be that candidate's: its doing.
    const planted = read.ok
      ? echoInVerdict(
          text,
          views.flatMap((view, index) => agentEchoSources(view, index, false)),
          nonce,
        )
      : undefined;
    if (planted) return { ok: false, kind: 'unparseable', reason: planted.reason, usage, echo: planted };
    if (!read.ok) {
      // A reply made unreadable by repeating a candidate's text is that candidate's doing.
      const echo =
        read.kind === 'unparseable'
          ? blameEcho(
              text,
              views.flatMap((view, index) => agentEchoSources(view, index)),
              (cut) => readGroupReply(cut, nonce, labels).ok,
              nonce,
            )
          : undefined;
      return { ok: false, kind: read.kind, reason: read.reason, usage, ...(echo ? { echo } : {}) };
    }
    const scores: number[] = new Array(subjects.length).fill(Number.NaN);
    const inputs: JudgeInputRecord[] = new Array(subjects.length);
    for (let position = 0; position < order.length; position++) {
      scores[order[position]!] = read.scores[position]!;
      inputs[order[position]!] = judgeInputRecord(messages, nonce, { label: labels[position]!, position });
    }
    return { ok: true, scores, rationale: read.rationale, usage, inputs };
  }

  type Success = Extract<RoundResult, { ok: true }>;
  type Failure = Extract<RoundResult, { ok: false }>;

  /**
   * `count` rounds (or one strict round) over the `members` of the group. A round whose reply was
   * unreadable because it repeated some members' text takes those members out (they are the
   * penalised ones returned) and the rounds start again without them.
   */
  async function roundsOver(
    subjects: readonly JudgeSubject[],
    members: number[],
    count: number,
    signal: AbortSignal | undefined,
    spent: RoundResult[],
    strict?: { spans: readonly (readonly InjectionSpan[])[]; rules: string[] },
  ): Promise<{ members: number[]; results: Success[]; failure?: Failure; echoed: Map<number, ReplyEcho> }> {
    const echoed = new Map<number, ReplyEcho>();
    let current = [...members];
    let results: Success[] = [];
    while (current.length > 0 && results.length < count) {
      const result = await round(
        current.map((index) => subjects[index]!),
        signal,
        strict ? { spans: current.map((index) => strict.spans[index]!), rules: strict.rules } : undefined,
      );
      spent.push(result);
      if (result.ok) {
        results.push(result);
        continue;
      }
      const blamed = new Set((result.echo?.owners ?? []).map((position) => current[position]!));
      if (blamed.size === 0) return { members: current, results, failure: result, echoed };
      for (const index of blamed) echoed.set(index, result.echo!);
      current = current.filter((index) => !blamed.has(index));
      // The rounds so far scored the others relative to the blamed ones: start again without them.
      results = [];
    }
    return { members: current, results, echoed };
  }

  return {
    specificationVersion: 'v1',
    id,
    async judgeGroup(subjects, options = {}): Promise<Verdict[]> {
      if (subjects.length === 0) return [];
      // The screen reads what the judge reads (the views differ between rounds only in their nonce).
      const screenViews = viewsFor(subjects, createJudgeNonce(settings.nonceRandom));
      const ruleScreens = screenViews.map((view, index) =>
        screenTranscriptView(view, { dimensions: [], subject: subjects[index]! }),
      );
      const modelScreens: (ModelScreenOutcome | undefined)[] = injection.modelScreen
        ? await Promise.all(
            screenViews.map((view) =>
              runModelScreen(view, {
                ...injection.modelScreen!,
                pricing: settings.pricing,
                signal: options.signal,
              }),
            ),
          )
        : subjects.map(() => undefined);
      const decisions = ruleScreens.map((screen, index) => {
        const model = modelScreens[index];
        const modelSpans = model?.status === 'suspected' ? attributeSpans(model.spans, subjects[index]!) : [];
        return decideInjection([...screen.spans, ...modelSpans], injection);
      });
      const spans = decisions.map((decision) => decision?.spans ?? []);
      // A candidate whose score is already decided (zero) is left out of the calls: its text
      // cannot move its rivals' scores.
      const spent: RoundResult[] = [];
      const initial = subjects
        .map((_, index) => index)
        .filter((index) => decisions[index]?.action !== 'zero');
      const judged = await roundsOver(subjects, initial, rounds, options.signal, spent);
      const { members } = judged;
      const echoed = new Map(judged.echoed);
      let failure = judged.failure;
      let strictRun: Awaited<ReturnType<typeof roundsOver>> | undefined;
      if (!failure && members.some((index) => decisions[index]?.action === 'escalate')) {
        // Re-judged strictly without the suspicious passages; a flagged candidate keeps the lower
        // of its two scores, the others take the strict round's (the flagged one may have moved them).
        const rules = [...new Set(members.flatMap((index) => spans[index]!.map((span) => span.rule)))];
        strictRun = await roundsOver(subjects, members, 1, options.signal, spent, { spans, rules });
        for (const [index, echo] of strictRun.echoed) echoed.set(index, echo);
        if (strictRun.failure)
          failure = {
            ...strictRun.failure,
            reason: `the stricter re-judging (after a suspected injection) failed: ${strictRun.failure.reason}`,
          };
      }
      // Each verdict carries an equal share of the calls' usage, so summing the verdicts of a group
      // gives what the judge really cost.
      let groupUsage = spent.reduce<Usage | undefined>(
        (total, result) => addUsage(total, result.usage),
        undefined,
      );
      for (const model of modelScreens) groupUsage = addUsage(groupUsage, model?.usage);
      const usageEstimated = spent.some((result) => result.usage?.estimated);
      const shares = groupUsage ? splitUsage(groupUsage, subjects.length) : undefined;
      const positionOf = new Map(members.map((index, position) => [index, position]));
      const strictPosition = new Map((strictRun?.members ?? []).map((index, position) => [index, position]));
      const strict =
        strictRun && !strictRun.failure && strictRun.results.length > 0 ? strictRun.results[0] : undefined;
      return subjects.map((_, index): Verdict => {
        const model = modelScreens[index];
        const screenNote = model
          ? { modelScreen: model.status, ...(model.reason ? { modelScreenReason: model.reason } : {}) }
          : {};
        const decision = decisions[index];
        const echo = echoed.get(index);
        const penalised = (record: ReturnType<typeof injectionRecord>, why: string): Verdict => ({
          status: 'scored',
          score: injection.penaltyScore,
          rationale: why,
          usage: shares?.[index],
          judgeId: id,
          details: { groupUsage, usageEstimated, ...flaggedDetails(record) },
        });
        if (decision?.action === 'zero')
          return penalised(
            injectionRecord(decision, { penaltyScore: injection.penaltyScore, ...screenNote }),
            `Scored ${injection.penaltyScore}: ${decision.origin === 'agent' ? "the candidate's own text addresses the grader" : 'suspected text aimed at the grader'}; left out of the group call.`,
          );
        if (echo)
          return penalised(
            echoRecord(echo, injection, spans[index]!, screenNote),
            `Scored ${injection.penaltyScore}: the judge's reply could not be read because it repeated this candidate's text (${echo.reason}).`,
          );
        if (failure || !positionOf.has(index))
          return {
            status: 'failed',
            kind: failure?.kind ?? 'other',
            reason: failure?.reason ?? 'the candidate was not scored',
            usage: shares?.[index],
            judgeId: id,
          };
        const position = positionOf.get(index)!;
        const perRound = judged.results.map((result) => result.scores[position]!);
        const judgeScore = perRound.reduce((sum, value) => sum + value, 0) / perRound.length;
        const strictScore = strict ? strict.scores[strictPosition.get(index)!] : undefined;
        const strictInput = strict ? strict.inputs[strictPosition.get(index)!] : undefined;
        let score = judgeScore;
        let injectionDetails: Record<string, unknown> = {};
        if (decision) {
          if (strictScore !== undefined) score = Math.min(judgeScore, strictScore);
          injectionDetails = flaggedDetails(
            injectionRecord(decision, {
              judgeScore,
              ...screenNote,
              ...(strictScore !== undefined ? { strictScore, strictJudgeInput: strictInput! } : {}),
            }),
          );
        } else if (strictScore !== undefined) {
          // Another candidate's injection may have moved this one's relative score: the strict round's stands.
          score = strictScore;
          injectionDetails = {
            groupEscalation: {
              reason: 'another candidate of the group was flagged; the group was re-judged strictly',
              judgeScore,
              strictScore,
              strictJudgeInput: strictInput!,
            },
          };
        }
        if (model?.status === 'failed' && !decision) injectionDetails.modelScreen = screenNote;
        return {
          status: 'scored',
          score,
          rationale: [...judged.results, ...(strict ? [strict] : [])]
            .map((result) => result.rationale)
            .filter(Boolean)
            .join('\n'),
          usage: shares?.[index],
          judgeId: id,
          details: {
            rounds: perRound,
            groupUsage,
            usageEstimated,
            judgeInput: judged.results.map((result) => result.inputs[position]!),
            ...injectionDetails,
          },
        };
      });
    },
  };
}
