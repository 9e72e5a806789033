// The rubric judge: one LLM call that scores a trajectory on a rubric's dimensions and gives a
// composite in [0, 1]. The trajectory is shown as quarantined, untrusted data between
// nonce-tagged boundaries; the verdict must echo the call's nonce (a quoted or planted verdict
// never counts); the injection screen runs over what the judge reads and its action follows
// (injection-policy.ts). Asks for a JSON-schema response format where the server supports it
// and reads the reply tolerantly where it does not. Timeouts, server errors, unparseable or
// out-of-range replies are judge failures with a kind and a reason. Every verdict records what
// the judge was shown (prompt sha256 and nonce), so it can be re-checked.
import type { ChatClient, ChatMessage, JudgeSubject, JudgeV1, Usage, Verdict } from '@shears/core';
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
  type InjectionRecord,
  type InjectionSettings,
  injectionRecord,
  type ResolvedInjection,
  resolveInjection,
  runModelScreen,
} from './injection-policy.js';
import {
  attributeSpans,
  type InjectionSpan,
  redactTranscriptView,
  screenTranscriptView,
} from './injection-screen.js';
import { type JudgeCache, judgeCacheKey } from './judge-cache.js';
import { judgeChat } from './judge-chat.js';
import { addUsage, type JudgePricing, resolveUsage } from './judge-cost.js';
import {
  createJudgeNonce,
  JUDGE_PROMPT_FORMAT,
  judgeInputRecord,
  judgePromptHash,
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
import { DEFAULT_RUBRIC, type Rubric } from './rubric.js';
import { parseVerdictText, verdictJsonSchema } from './verdict-parsing.js';

export type ResponseFormatMode = 'json_schema' | 'json_object' | 'none';

export interface RubricJudgeSettings {
  /** Judge id, used in verdicts, caches and calibrations (default: `rubric:<model>`). */
  id?: string;
  server: ChatClient & { model?: string };
  rubric?: Rubric;
  /** `json_schema` (default) sends the verdict schema as the response format. */
  responseFormat?: ResponseFormatMode;
  timeoutMs?: number;
  temperature?: number;
  maxTokens?: number;
  format?: FormatTrajectoryOptions;
  cache?: JudgeCache;
  pricing?: JudgePricing;
  /** Extra provider body fields (e.g. OpenRouter provider routing). */
  extraBody?: Record<string, unknown>;
  /** What follows a suspected injection (default: escalate to a stricter judge). */
  injection?: InjectionSettings;
  /** Source of the nonces (default: node:crypto). Tests inject a fixed one to attack it. */
  random?: RandomIndex;
}

/** How a rubric prompt is built: the call's nonce, and for the stricter judge the spans it removes. */
export interface RubricPromptOptions {
  nonce?: string;
  /** The stricter second judge: these spans are removed from what it is shown. */
  strict?: { spans: readonly InjectionSpan[]; instructions?: string };
}

function rubricMessages(
  subject: JudgeSubject,
  rubric: Rubric,
  view: TranscriptView,
  strict?: RubricPromptOptions['strict'],
): ChatMessage[] {
  const { nonce } = view;
  const dimensions = rubric.dimensions
    .map(
      (dimension, index) =>
        `${index + 1}. ${dimension.name} (${dimension.min}-${dimension.max}): ${dimension.description}`,
    )
    .join('\n');
  const form = `{"nonce": "${nonce}", "dimensions": {${rubric.dimensions
    .map((dimension) => `"${dimension.name}": <${dimension.min}-${dimension.max}>`)
    .join(', ')}}, "composite": <0.0-1.0>, "rationale": "one or two sentences"}`;
  const system = [
    rubric.instructions,
    untrustedNotice(nonce, 'one'),
    ...(strict
      ? [strictNotice([...new Set(strict.spans.map((span) => span.rule))], strict.instructions)]
      : []),
  ].join('\n\n');
  const user = [
    quotedSection(nonce, 'TASK', subject.task),
    ...(subject.reference ? [quotedSection(nonce, 'REFERENCE ANSWER', subject.reference)] : []),
    renderTranscript(view),
    [
      instructionsHeading(nonce),
      `Score each dimension:\n${dimensions}`,
      `composite: ${rubric.composite}`,
      `Reply with only a JSON object of the form ${form}.`,
      closingReminder(nonce),
    ].join('\n'),
  ].join('\n\n');
  return [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
}

/**
 * The messages a rubric judge sends for `subject`. Pass the nonce recorded in a verdict's
 * `details.judgeInput` (and, for the stricter judge, its spans) to rebuild the exact prompt:
 * its judgePromptHash equals the recorded `promptSha256`.
 */
export function buildRubricPrompt(
  subject: JudgeSubject,
  rubric: Rubric,
  format?: FormatTrajectoryOptions,
  options: RubricPromptOptions = {},
): ChatMessage[] {
  const nonce = options.nonce ?? createJudgeNonce();
  let view = buildTranscriptView(subject.messages, {
    ...format,
    nonce,
    finalResponse: subject.finalResponse,
  });
  if (options.strict) view = redactTranscriptView(view, options.strict.spans);
  return rubricMessages(subject, rubric, view, options.strict);
}

function responseFormatBody(mode: ResponseFormatMode, rubric: Rubric): Record<string, unknown> {
  if (mode === 'none') return {};
  if (mode === 'json_object') return { response_format: { type: 'json_object' } };
  return {
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: `verdict_${rubric.id.replace(/[^a-zA-Z0-9_-]/g, '_')}`,
        strict: true,
        schema: verdictJsonSchema(rubric),
      },
    },
  };
}

/**
 * A cached verdict as returned to the caller: no call was made, so it reports zero tokens and
 * (when the original was priced) zero cost. The original call's usage stays readable as
 * `details.cachedUsage`.
 */
function cacheHit(cached: Verdict): Verdict {
  const original = cached.usage;
  const usage = original
    ? {
        promptTokens: 0,
        completionTokens: 0,
        totalTokens: 0,
        ...(original.costUsd !== undefined ? { costUsd: 0 } : {}),
      }
    : undefined;
  if (cached.status !== 'scored') return { ...cached, usage };
  return {
    ...cached,
    cached: true,
    usage,
    details: { ...cached.details, ...(original ? { cachedUsage: original } : {}) },
  };
}

type CallResult =
  | {
      ok: true;
      score: number;
      dimensions: Record<string, number>;
      rationale: string;
      usage: Usage & { estimated: boolean };
      messages: ChatMessage[];
    }
  | {
      ok: false;
      kind: string;
      reason: string;
      usage?: Usage & { estimated: boolean };
      /** The reply was unreadable (or its verdict untrustworthy) because it repeated the agent's text. */
      echo?: ReplyEcho;
    };

export function createRubricJudge(settings: RubricJudgeSettings): JudgeV1 & { readonly rubric: Rubric } {
  const rubric = settings.rubric ?? DEFAULT_RUBRIC;
  const id = settings.id ?? `rubric:${settings.server.model ?? 'judge'}`;
  const timeoutMs = settings.timeoutMs ?? 60_000;
  const mode = settings.responseFormat ?? 'json_schema';
  const temperature = settings.temperature ?? 0;
  const injection: ResolvedInjection = resolveInjection(settings.injection, {
    server: settings.server,
    timeoutMs,
    temperature,
  });
  const dimensionNames = rubric.dimensions.map((dimension) => dimension.name);

  async function call(
    server: ChatClient,
    messages: ChatMessage[],
    shown: TranscriptView,
    options: { timeoutMs: number; temperature: number; signal?: AbortSignal },
  ): Promise<CallResult> {
    const { nonce } = shown;
    const reply = await judgeChat(
      server,
      {
        messages,
        temperature: options.temperature,
        maxTokens: settings.maxTokens,
        extraBody: { ...settings.extraBody, ...responseFormatBody(mode, rubric) },
      },
      { timeoutMs: options.timeoutMs, signal: options.signal },
    );
    if (!reply.ok) return { ok: false, kind: reply.kind, reason: reply.reason };
    const choice = reply.response.choices[0];
    if (!choice) return { ok: false, kind: 'unparseable', reason: 'the judge returned no choices' };
    const text = typeof choice.message.content === 'string' ? choice.message.content : '';
    const usage = await resolveUsage({
      serverUsage: reply.response.usage,
      promptText: messages.map((message) => String(message.content)).join('\n'),
      completionText: text,
      pricing: settings.pricing,
    });
    const parsed = parseVerdictText(text, rubric, nonce);
    // A reply the agent's text broke, or a verdict written around the agent's unescaped text, is
    // the agent's doing (reply-echo.ts).
    const echo = parsed.ok
      ? echoInVerdict(text, agentEchoSources(shown, 0, false), nonce)
      : parsed.kind === 'unparseable'
        ? blameEcho(text, agentEchoSources(shown), (cut) => parseVerdictText(cut, rubric, nonce).ok, nonce)
        : undefined;
    if (!parsed.ok || echo)
      return {
        ok: false,
        kind: parsed.ok ? 'unparseable' : parsed.kind,
        reason: parsed.ok ? echo!.reason : parsed.reason,
        usage,
        ...(echo ? { echo } : {}),
      };
    return {
      ok: true,
      score: parsed.composite,
      dimensions: parsed.dimensions,
      rationale: parsed.rationale,
      usage,
      messages,
    };
  }

  return {
    specificationVersion: 'v1',
    id,
    rubric,
    async judge(subject, options = {}): Promise<Verdict> {
      const cacheKey = settings.cache
        ? judgeCacheKey(id, `${rubric.hash}|${injection.key}`, subject)
        : undefined;
      if (cacheKey) {
        const cached = settings.cache!.get(cacheKey);
        if (cached) return cacheHit(cached);
      }
      const nonce = createJudgeNonce(settings.random);
      const view = buildTranscriptView(subject.messages, {
        ...settings.format,
        nonce,
        finalResponse: subject.finalResponse,
      });
      const messages = rubricMessages(subject, rubric, view);
      const rules = screenTranscriptView(view, { dimensions: dimensionNames, subject });
      // The judge is asked even when the agent's text already decided the score: its answer is
      // kept for the record (how far the injection moved it), and its failure changes nothing.
      const [first, screened] = await Promise.all([
        call(settings.server, messages, view, { timeoutMs, temperature, signal: options.signal }),
        injection.modelScreen
          ? runModelScreen(view, {
              ...injection.modelScreen,
              pricing: settings.pricing,
              signal: options.signal,
            })
          : Promise.resolve(undefined),
      ]);
      let usage: Usage | undefined = addUsage(first.usage, screened?.usage);
      const usageEstimated = first.usage?.estimated ?? false;
      const modelSpans = screened?.status === 'suspected' ? attributeSpans(screened.spans, subject) : [];
      const decision = decideInjection([...rules.spans, ...modelSpans], injection);
      const screenNote: Partial<InjectionRecord> = screened
        ? { modelScreen: screened.status, ...(screened.reason ? { modelScreenReason: screened.reason } : {}) }
        : {};
      const base = {
        rubricHash: rubric.hash,
        usageEstimated,
        ...(screened ? { modelScreenInput: screened.judgeInput } : {}),
      };
      const penalty = (record: InjectionRecord, dimensions?: Record<string, number>): Verdict => ({
        status: 'scored',
        score: injection.penaltyScore,
        ...(dimensions ? { dimensions } : {}),
        rationale:
          record.cause === 'judge_reply_echo'
            ? `Scored ${injection.penaltyScore}: the judge's reply could not be read because it repeated the agent's text (${record.echo?.reason}).`
            : `Scored ${injection.penaltyScore}: the agent's own text addresses the grader (${[...new Set(record.spans.map((span) => span.rule))].join(', ')}).${first.ok ? ` Judge's rationale: ${first.rationale}` : ''}`,
        usage,
        judgeId: id,
        details: { ...base, judgeInput: judgeInputRecord(messages, nonce), ...flaggedDetails(record) },
      });
      let verdict: Verdict;
      if (decision?.action === 'zero') {
        verdict = penalty(
          injectionRecord(decision, {
            penaltyScore: injection.penaltyScore,
            ...(first.ok
              ? { judgeScore: first.score }
              : { judgeFailure: { kind: first.kind, reason: first.reason } }),
            ...screenNote,
          }),
          first.ok ? first.dimensions : undefined,
        );
      } else if (!first.ok) {
        const { echo } = first;
        if (!echo) return { status: 'failed', kind: first.kind, reason: first.reason, usage, judgeId: id };
        verdict = penalty(echoRecord(echo, injection, decision?.spans ?? [], screenNote));
      } else if (!decision) {
        verdict = {
          status: 'scored',
          score: first.score,
          dimensions: first.dimensions,
          rationale: first.rationale,
          usage,
          judgeId: id,
          // A screen that could not run is said, not swallowed.
          details: {
            ...base,
            judgeInput: judgeInputRecord(messages, nonce),
            ...(screened?.status === 'failed' ? { modelScreen: screenNote } : {}),
          },
        };
      } else if (decision.action === 'flag') {
        verdict = {
          status: 'scored',
          score: first.score,
          dimensions: first.dimensions,
          rationale: first.rationale,
          usage,
          judgeId: id,
          details: {
            ...base,
            judgeInput: judgeInputRecord(messages, nonce),
            ...flaggedDetails(injectionRecord(decision, { judgeScore: first.score, ...screenNote })),
          },
        };
      } else {
        const strictNonce = createJudgeNonce(settings.random);
        const strictSpec = {
          spans: decision.spans,
          ...(injection.strict.instructions ? { instructions: injection.strict.instructions } : {}),
        };
        const strictView = redactTranscriptView(
          buildTranscriptView(subject.messages, {
            ...settings.format,
            nonce: strictNonce,
            finalResponse: subject.finalResponse,
          }),
          decision.spans,
        );
        const strictMessages = rubricMessages(subject, rubric, strictView, strictSpec);
        const strict = await call(injection.strict.server, strictMessages, strictView, {
          timeoutMs: injection.strict.timeoutMs,
          temperature: injection.strict.temperature,
          signal: options.signal,
        });
        usage = addUsage(usage, strict.usage);
        const strictJudgeInput = judgeInputRecord(strictMessages, strictNonce);
        if (!strict.ok) {
          const { echo } = strict;
          if (!echo)
            return {
              status: 'failed',
              kind: strict.kind,
              reason: `the stricter judge (after a suspected injection) failed: ${strict.reason}`,
              usage,
              judgeId: id,
            };
          verdict = penalty(
            echoRecord(echo, injection, decision.spans, {
              judgeScore: first.score,
              strictJudgeInput,
              ...screenNote,
            }),
          );
        } else {
          // Escalation only lowers: the lower verdict stands, whole.
          const lower = strict.score <= first.score ? strict : first;
          verdict = {
            status: 'scored',
            score: lower.score,
            dimensions: lower.dimensions,
            rationale: lower.rationale,
            usage,
            judgeId: id,
            details: {
              ...base,
              judgeInput: judgeInputRecord(messages, nonce),
              ...flaggedDetails(
                injectionRecord(decision, {
                  judgeScore: first.score,
                  strictScore: strict.score,
                  strictJudgeInput,
                  ...screenNote,
                }),
              ),
            },
          };
        }
      }
      if (cacheKey) settings.cache!.set(cacheKey, verdict);
      return verdict;
    },
  };
}

/**
 * Whether `judgeInput` (from a verdict's details) is what a rubric judge with these settings
 * shows for `subject`: the prompt is rebuilt with the recorded nonce (and, for the stricter
 * judge, the recorded spans) and its sha256 compared. False means the subject, rubric, format or
 * prompt version differ from what the judge saw.
 */
export function recheckRubricPrompt(
  subject: JudgeSubject,
  judgeInput: { promptSha256: string; nonce: string; format?: string },
  options: { rubric?: Rubric; format?: FormatTrajectoryOptions; strict?: RubricPromptOptions['strict'] } = {},
): boolean {
  if (judgeInput.format !== undefined && judgeInput.format !== JUDGE_PROMPT_FORMAT) return false;
  const messages = buildRubricPrompt(subject, options.rubric ?? DEFAULT_RUBRIC, options.format, {
    nonce: judgeInput.nonce,
    ...(options.strict ? { strict: options.strict } : {}),
  });
  return judgePromptHash(messages) === judgeInput.promptSha256;
}
