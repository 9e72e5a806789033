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
  flaggedDetails,
  type InjectionSettings,
  injectionRecord,
  type ModelScreenOutcome,
  resolveInjection,
  runModelScreen,
} from './injection-policy.js';
import { type InjectionScreen, redactTranscriptView, screenTranscriptView } from './injection-screen.js';
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
  | { ok: false; kind: string; reason: string; usage?: RoundUsage };

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

  async function round(
    subjects: readonly JudgeSubject[],
    signal: AbortSignal | undefined,
    strict?: { screens: readonly InjectionScreen[]; rules: string[] },
  ): Promise<RoundResult> {
    // An already-aborted signal never fires 'abort' again: check it before calling the judge.
    if (signal?.aborted) return { ok: false, kind: 'aborted', reason: 'judging was cancelled' };
    const order = shuffledIndices(subjects.length, random);
    const nonce = createJudgeNonce(settings.nonceRandom);
    const labels = createCandidateLabels(subjects.length, settings.nonceRandom);
    let views = viewsFor(subjects, nonce);
    if (strict) views = views.map((view, index) => redactTranscriptView(view, strict.screens[index]!.spans));
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
    const selected = selectNonceReply(text, nonce, groupReplySchema, 'group judge reply');
    if (!selected.ok) return { ok: false, kind: 'unparseable', reason: selected.reason, usage };
    const given = selected.value.scores;
    const scores: number[] = new Array(subjects.length).fill(Number.NaN);
    const inputs: JudgeInputRecord[] = new Array(subjects.length);
    const known = new Set(labels);
    const unknown = Object.keys(given).filter((label) => !known.has(label));
    if (unknown.length > 0)
      return {
        ok: false,
        kind: 'unparseable',
        reason: `scores for unknown candidates ${unknown.map((label) => JSON.stringify(label)).join(', ')} (candidates: ${labels.join(', ')})`,
        usage,
      };
    for (let position = 0; position < order.length; position++) {
      const label = labels[position]!;
      const value = given[label];
      if (value === undefined)
        return { ok: false, kind: 'unparseable', reason: `no score for candidate ${label}`, usage };
      if (!(value >= 0 && value <= 1))
        return {
          ok: false,
          kind: 'out_of_range',
          reason: `candidate ${label} scored ${value}, outside [0, 1]`,
          usage,
        };
      scores[order[position]!] = value;
      inputs[order[position]!] = judgeInputRecord(messages, nonce, { label, position });
    }
    return { ok: true, scores, rationale: selected.value.rationale ?? '', usage, inputs };
  }

  return {
    specificationVersion: 'v1',
    id,
    async judgeGroup(subjects, options = {}): Promise<Verdict[]> {
      if (subjects.length === 0) return [];
      // The screen reads what the judge reads (the views differ between rounds only in their nonce).
      const screenViews = viewsFor(subjects, createJudgeNonce(settings.nonceRandom));
      const dimensions: string[] = [];
      const ruleScreens = screenViews.map((view) => screenTranscriptView(view, { dimensions }));
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
      const screens: InjectionScreen[] = ruleScreens.map((screen, index) => {
        const model = modelScreens[index];
        const spans = [...screen.spans, ...(model?.spans ?? [])];
        return { suspected: screen.suspected || model?.status === 'suspected', spans };
      });
      const flagged = screens.map((screen) => screen.suspected);
      const results: RoundResult[] = [];
      for (let index = 0; index < rounds; index++) {
        const result = await round(subjects, options.signal);
        results.push(result);
        // A cancelled or failed round fails the group; further rounds would only cost money.
        if (!result.ok) break;
      }
      let strictResult: RoundResult | undefined;
      if (injection.action === 'escalate' && flagged.some(Boolean) && results.every((result) => result.ok)) {
        const rules = [...new Set(screens.flatMap((screen) => screen.spans.map((span) => span.rule)))];
        strictResult = await round(subjects, options.signal, { screens, rules });
      }
      // One call judges the whole group: each verdict carries an equal share of the calls' usage,
      // so summing the verdicts of a group gives what the judge really cost.
      const all = strictResult ? [...results, strictResult] : results;
      let groupUsage = all.reduce<Usage | undefined>(
        (total, result) => addUsage(total, result.usage),
        undefined,
      );
      for (const model of modelScreens) groupUsage = addUsage(groupUsage, model?.usage);
      const usageEstimated = all.some((result) => result.usage?.estimated);
      const shares = groupUsage ? splitUsage(groupUsage, subjects.length) : undefined;
      const failed = all.find((result): result is Extract<RoundResult, { ok: false }> => !result.ok);
      if (failed)
        return subjects.map((_, index) => ({
          status: 'failed',
          kind: failed.kind,
          reason:
            failed === strictResult
              ? `the stricter re-judging (after a suspected injection) failed: ${failed.reason}`
              : failed.reason,
          usage: shares?.[index],
          judgeId: id,
        }));
      const successes = results as Extract<RoundResult, { ok: true }>[];
      const strict = strictResult as Extract<RoundResult, { ok: true }> | undefined;
      return subjects.map((_, index): Verdict => {
        const perRound = successes.map((result) => result.scores[index]!);
        const judgeScore = perRound.reduce((sum, value) => sum + value, 0) / perRound.length;
        const model = modelScreens[index];
        const screenNote = model
          ? { modelScreen: model.status, ...(model.reason ? { modelScreenReason: model.reason } : {}) }
          : {};
        let score = judgeScore;
        let injectionDetails: Record<string, unknown> = {};
        if (flagged[index]) {
          const extra = { judgeScore, ...screenNote };
          if (injection.action === 'zero') score = 0;
          if (strict) score = Math.min(judgeScore, strict.scores[index]!);
          injectionDetails = flaggedDetails(
            injectionRecord(injection.action, screens[index]!.spans, {
              ...extra,
              ...(strict
                ? { strictScore: strict.scores[index]!, strictJudgeInput: strict.inputs[index]! }
                : {}),
            }),
          );
        } else if (strict) {
          // Another candidate's injection may have moved this one's relative score: the strict round's stands.
          score = strict.scores[index]!;
          injectionDetails = {
            groupEscalation: {
              reason: 'another candidate of the group was flagged; the group was re-judged strictly',
              judgeScore,
              strictScore: score,
              strictJudgeInput: strict.inputs[index]!,
            },
          };
        }
        if (model?.status === 'failed' && !flagged[index]) injectionDetails.modelScreen = screenNote;
        return {
          status: 'scored',
          score,
          rationale: [...successes, ...(strict ? [strict] : [])]
            .map((result) => result.rationale)
            .filter(Boolean)
            .join('\n'),
          usage: shares?.[index],
          judgeId: id,
          details: {
            rounds: perRound,
            groupUsage,
            usageEstimated,
            judgeInput: successes.map((result) => result.inputs[index]!),
            ...injectionDetails,
          },
        };
      });
    },
  };
}
