// The Atropos ScoredData wire shape: one group as POSTed to /scored_data and served in /batch.
import { z } from 'zod';

export const scoredDataSchema = z.looseObject({
  tokens: z.array(z.array(z.number().int())),
  masks: z.array(z.array(z.number().int())),
  scores: z.array(z.number()),
  advantages: z.array(z.array(z.number())).nullish(),
  ref_logprobs: z.array(z.array(z.number())).nullish(),
  messages: z.array(z.array(z.looseObject({ role: z.string(), content: z.unknown() }))).nullish(),
  generation_params: z.record(z.string(), z.unknown()).nullish(),
  inference_logprobs: z.array(z.array(z.number())).nullish(),
  overrides: z.array(z.record(z.string(), z.unknown())).nullish(),
  group_overrides: z.record(z.string(), z.unknown()).nullish(),
  images: z.unknown().optional(),
  env_id: z.number().int().nullish(),
  distill_token_ids: z.array(z.array(z.array(z.number().int()))).nullish(),
  distill_logprobs: z.array(z.array(z.array(z.number()))).nullish(),
});
export type ScoredData = z.infer<typeof scoredDataSchema>;

/** The 14 keys every group in a /batch response carries (absent ones as null). */
export const SCORED_DATA_KEYS = [
  'tokens',
  'masks',
  'scores',
  'advantages',
  'ref_logprobs',
  'messages',
  'generation_params',
  'inference_logprobs',
  'overrides',
  'group_overrides',
  'images',
  'env_id',
  'distill_token_ids',
  'distill_logprobs',
] as const;
