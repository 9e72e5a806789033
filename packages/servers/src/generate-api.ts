// The token-in/token-out answers as the backends read them (vercel/ai's `*-api.ts` habit): only
// the fields read, `.nullish()` where a server may leave them out, and checked at the border, so
// a malformed answer is a ServerError naming the field (`choices.0.logprobs.token_logprobs.3:
// expected number, received null`) rather than a silent default: a generated token's logprob is
// never made up.
import { z } from 'zod';

/** One generated position: `{"<token id>": logprob}`, or a list of them (top-k, sampled first). */
const vllmLogprobPosition = z.union([
  z.record(z.string(), z.number()),
  z.array(z.record(z.string(), z.number())),
]);

/** vLLM's `/generate` (the Atropos-style API server) and the reference trainer's policy server. */
export const vllmGenerateResponseSchema = z.object({
  token_ids: z.array(z.array(z.number().int())),
  logprobs: z.array(z.array(vllmLogprobPosition)).nullish(),
  finish_reasons: z.array(z.string().nullable()).nullish(),
  // The reference trainer's colocated policy server says which weights sampled (vLLM does not).
  policy_version: z.number().int().nonnegative().nullish(),
});

/** vLLM's `/v1/completions` with `return_tokens_as_token_ids` and `logprobs: 1`. */
export const completionsResponseSchema = z.object({
  choices: z.array(
    z.object({
      index: z.number().nullish(),
      token_ids: z.array(z.number().int()).nullish(),
      finish_reason: z.string().nullish(),
      logprobs: z
        .object({
          tokens: z.array(z.string()).nullish(),
          // Generated tokens always have one (only an echoed first prompt token has null).
          token_logprobs: z.array(z.number()).nullish(),
        })
        .nullish(),
    }),
  ),
});

/** One completion of SGLang's `/generate` with `return_logprob: true`. */
const sglangItem = z.object({
  output_ids: z.array(z.number().int()).nullish(),
  meta_info: z.object({
    /** `[logprob, token id, text?]` per generated token. */
    output_token_logprobs: z.array(z.tuple([z.number(), z.number().int()]).rest(z.unknown())).nullish(),
    finish_reason: z.union([z.looseObject({ type: z.string() }), z.string()]).nullish(),
  }),
});

/** One completion, or a list of them (`n` > 1); read as a list, so an error names its index. */
export const sglangResponseSchema = z.preprocess(
  (value) => (Array.isArray(value) ? value : [value]),
  z.array(sglangItem),
);
