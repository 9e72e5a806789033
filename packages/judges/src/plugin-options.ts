// Strict schemas of the settings the registry manifest accepts: the registry parses config settings
// with them (`registry.create`), so a typo or a wrong type is an error naming the setting, not a
// judge that silently runs without its cache, pricing or limits.
import { z } from 'zod';
import { AGGREGATION_METHODS } from './aggregate.js';
import { INJECTION_ACTIONS } from './injection-policy.js';
import { createMemoryJudgeCache, type JudgeCache } from './judge-cache.js';

const positiveInteger = z.number().int().positive();

const formatSchema = z.strictObject({
  maxToolResultChars: positiveInteger.optional(),
  maxMessageChars: positiveInteger.optional(),
  maxTotalChars: positiveInteger.optional(),
  includeReasoning: z.boolean().optional(),
});

const pricingSchema = z.strictObject({
  inputPerMillion: z.number().nonnegative(),
  outputPerMillion: z.number().nonnegative(),
});

function isJudgeCache(value: unknown): value is JudgeCache {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as JudgeCache).get === 'function' &&
    typeof (value as JudgeCache).set === 'function'
  );
}

const CACHE_HINT = 'cache must be true, false, { maxEntries: <positive integer> } or a JudgeCache instance';

/** `true` or `{ maxEntries }` makes a memory cache; a JudgeCache instance is used as it is. */
const cacheSchema = z.custom<boolean | { maxEntries?: number } | JudgeCache>(
  (value) =>
    typeof value === 'boolean' ||
    isJudgeCache(value) ||
    z.strictObject({ maxEntries: positiveInteger.optional() }).safeParse(value).success,
  { message: CACHE_HINT },
);

/** What follows a suspected injection: `{ action, agentAction, penaltyScore, strictJudge, modelScreen }` (servers as `{ provider, ... }`). */
const injectionSchema = z.strictObject({
  action: z.enum(INJECTION_ACTIONS).optional(),
  strictJudge: z
    .strictObject({
      server: z.unknown().optional(),
      timeoutMs: z.number().positive().optional(),
      temperature: z.number().nonnegative().optional(),
      instructions: z.string().min(1).optional(),
    })
    .optional(),
  modelScreen: z
    .union([
      z.boolean(),
      z.strictObject({ server: z.unknown().optional(), timeoutMs: z.number().positive().optional() }),
    ])
    .optional(),
  agentAction: z.enum(INJECTION_ACTIONS).optional(),
  penaltyScore: z.number().min(0).max(1).optional(),
});

export const rubricJudgeOptionsSchema = z.strictObject({
  id: z.string().min(1).optional(),
  server: z.unknown().optional(),
  rubric: z.unknown().optional(),
  responseFormat: z.enum(['json_schema', 'json_object', 'none']).optional(),
  timeoutMs: z.number().positive().optional(),
  temperature: z.number().nonnegative().optional(),
  maxTokens: positiveInteger.optional(),
  format: formatSchema.optional(),
  cache: cacheSchema.optional(),
  pricing: pricingSchema.optional(),
  extraBody: z.record(z.string(), z.unknown()).optional(),
  injection: injectionSchema.optional(),
});

export const panelOptionsSchema = z.strictObject({
  id: z.string().min(1).optional(),
  /** The members: rubric judge settings each. */
  judges: z.array(rubricJudgeOptionsSchema).min(1),
  aggregation: z.enum(AGGREGATION_METHODS).optional(),
  quorum: positiveInteger.optional(),
  disagreementThreshold: z.number().nonnegative().optional(),
  /** Default cache of the members that set none (one cache shared by the panel). */
  cache: cacheSchema.optional(),
  /** Default injection settings of the members that set none. */
  injection: injectionSchema.optional(),
});

export const groupJudgeOptionsSchema = z.strictObject({
  id: z.string().min(1).optional(),
  server: z.unknown().optional(),
  criteria: z.string().min(1).optional(),
  rounds: positiveInteger.optional(),
  timeoutMs: z.number().positive().optional(),
  temperature: z.number().nonnegative().optional(),
  format: formatSchema.optional(),
  pricing: pricingSchema.optional(),
  injection: injectionSchema.optional(),
});

export type InjectionOptions = z.infer<typeof injectionSchema>;
export type RubricJudgeOptions = z.infer<typeof rubricJudgeOptionsSchema>;
export type GroupJudgeOptions = z.infer<typeof groupJudgeOptionsSchema>;

/** The cache a `cache` setting asks for (undefined for none). */
export function resolveCacheOption(value: RubricJudgeOptions['cache']): JudgeCache | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return createMemoryJudgeCache();
  if (isJudgeCache(value)) return value;
  return createMemoryJudgeCache(value);
}
