// The rubric judge: one LLM call that scores a trajectory on a rubric's dimensions and gives a
// composite in [0, 1]. Asks for a JSON-schema response format where the server supports it and
// reads the reply tolerantly where it does not. Timeouts, server errors, unparseable or
// out-of-range replies are judge failures with a kind and a reason.
import type { ChatClient, ChatMessage, JudgeSubject, JudgeV1, Verdict } from '@shears/core';
import { type FormatTrajectoryOptions, formatTrajectory } from './format-trajectory.js';
import { type JudgeCache, judgeCacheKey } from './judge-cache.js';
import { judgeChat } from './judge-chat.js';
import { type JudgePricing, resolveUsage } from './judge-cost.js';
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
}

export function buildRubricPrompt(
  subject: JudgeSubject,
  rubric: Rubric,
  format?: FormatTrajectoryOptions,
): ChatMessage[] {
  const dimensions = rubric.dimensions
    .map(
      (dimension, index) =>
        `${index + 1}. ${dimension.name} (${dimension.min}-${dimension.max}): ${dimension.description}`,
    )
    .join('\n');
  const example = Object.fromEntries(rubric.dimensions.map((dimension) => [dimension.name, dimension.max]));
  const reference = subject.reference ? `\nReference answer:\n${subject.reference}\n` : '';
  const finalResponse = subject.finalResponse ? `\nFinal response:\n${subject.finalResponse}\n` : '';
  const user = [
    `Task:\n${subject.task}`,
    reference,
    `Agent trajectory:\n${formatTrajectory(subject.messages, format)}`,
    finalResponse,
    `Score each dimension:\n${dimensions}`,
    `composite: ${rubric.composite}`,
    `Reply with only a JSON object of the form ${JSON.stringify({ dimensions: example, composite: 1.0, rationale: 'one or two sentences' })}.`,
  ]
    .filter((part) => part.trim().length > 0)
    .join('\n\n');
  return [
    { role: 'system', content: rubric.instructions },
    { role: 'user', content: user },
  ];
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

export function createRubricJudge(settings: RubricJudgeSettings): JudgeV1 & { readonly rubric: Rubric } {
  const rubric = settings.rubric ?? DEFAULT_RUBRIC;
  const id = settings.id ?? `rubric:${settings.server.model ?? 'judge'}`;
  const timeoutMs = settings.timeoutMs ?? 60_000;
  const mode = settings.responseFormat ?? 'json_schema';

  return {
    specificationVersion: 'v1',
    id,
    rubric,
    async judge(subject, options = {}): Promise<Verdict> {
      const cacheKey = settings.cache ? judgeCacheKey(id, rubric.hash, subject) : undefined;
      if (cacheKey) {
        const cached = settings.cache!.get(cacheKey);
        if (cached) return cacheHit(cached);
      }
      const messages = buildRubricPrompt(subject, rubric, settings.format);
      const reply = await judgeChat(
        settings.server,
        {
          messages,
          temperature: settings.temperature ?? 0,
          maxTokens: settings.maxTokens,
          extraBody: { ...settings.extraBody, ...responseFormatBody(mode, rubric) },
        },
        { timeoutMs, signal: options.signal },
      );
      if (!reply.ok) return { status: 'failed', kind: reply.kind, reason: reply.reason, judgeId: id };
      const choice = reply.response.choices[0];
      if (!choice)
        return {
          status: 'failed',
          kind: 'unparseable',
          reason: 'the judge returned no choices',
          judgeId: id,
        };
      const text = typeof choice.message.content === 'string' ? choice.message.content : '';
      const serverUsage = reply.response.usage;
      const usage = await resolveUsage({
        serverUsage,
        promptText: messages.map((message) => String(message.content)).join('\n'),
        completionText: text,
        pricing: settings.pricing,
      });
      const parsed = parseVerdictText(text, rubric);
      if (!parsed.ok)
        return { status: 'failed', kind: parsed.kind, reason: parsed.reason, usage, judgeId: id };
      const verdict: Verdict = {
        status: 'scored',
        score: parsed.composite,
        dimensions: parsed.dimensions,
        rationale: parsed.rationale,
        usage,
        judgeId: id,
        details: { rubricHash: rubric.hash, usageEstimated: usage.estimated },
      };
      if (cacheKey) settings.cache!.set(cacheKey, verdict);
      return verdict;
    },
  };
}
