// The shape of one Atropos group, checked across fields before it is acknowledged: pydantic
// checks each field's type alone, so Atropos stores masks shorter than their tokens, a score
// count that is not the group size, or per-token logprobs of another length, and the trainer
// fails (or trains on misaligned data) batches later. Both decode paths collect the same
// summary (lengths, and the ids of tokens and masks) and check it here, so they agree.
import { IGNORE_LABEL, type Issue } from './wire-numbers.js';

/** Per-token float fields: one row per sequence, as long as its tokens. */
export const PER_TOKEN_FLOATS = ['advantages', 'ref_logprobs', 'inference_logprobs'] as const;
/** Per-sequence fields typed Any: one entry per sequence. */
export const PER_SEQUENCE_ANY = ['messages', 'overrides'] as const;
export const DISTILL_FIELDS = ['distill_token_ids', 'distill_logprobs'] as const;

/** What the type checks found, for the cross-field checks. A field that failed its type check, or is null, is absent. */
export interface GroupShape {
  /** Tokens per sequence. */
  tokens?: number[];
  /** Every token id, sequence after sequence. */
  tokenIds?: ArrayLike<number>;
  masks?: number[];
  maskIds?: ArrayLike<number>;
  /** Number of scores. */
  scores?: number;
  /** Row lengths of the per-token float fields that are present. */
  perToken: Partial<Record<(typeof PER_TOKEN_FLOATS)[number], number[]>>;
  /** Positions per row and, flattened, top-k per position. */
  distill: Partial<Record<(typeof DISTILL_FIELDS)[number], { rows: number[]; k: number[] }>>;
  /** Entries of the per-sequence Any fields that are present. */
  perSequence: Partial<Record<(typeof PER_SEQUENCE_ANY)[number], number>>;
}

export function emptyShape(): GroupShape {
  return { perToken: {}, distill: {}, perSequence: {} };
}

const MAX_ISSUES = 20;

function mismatch(loc: (string | number)[], msg: string, input: unknown): Issue {
  return { type: 'length_mismatch', loc, msg, input };
}

/**
 * Adds an issue for every way the fields disagree with the group's tokens. An optional
 * per-sequence list may be empty (`[]`): Atropos' BaseEnv sends `advantages`, `ref_logprobs`,
 * `messages` and `overrides` that way when no rollout set them.
 */
export function checkShape(shape: GroupShape, base: (string | number)[], issues: Issue[]): void {
  const push = (issue: Issue) => {
    if (issues.length < MAX_ISSUES) issues.push(issue);
  };
  const { tokens } = shape;
  if (tokens === undefined) return;
  const n = tokens.length;
  if (n === 0) {
    push({
      type: 'too_short',
      loc: [...base, 'tokens'],
      msg: 'A group needs at least 1 sequence',
      input: [],
    });
    return;
  }
  tokens.forEach((length, index) => {
    if (length === 0)
      push({
        type: 'too_short',
        loc: [...base, 'tokens', index],
        msg: 'A sequence needs at least 1 token',
        input: [],
      });
  });
  const rows = (key: string, lengths: number[], what: string) => {
    if (lengths.length !== n) {
      push(
        mismatch(
          [...base, key],
          `${key} has ${lengths.length} ${what}, tokens has ${n} sequences`,
          lengths.length,
        ),
      );
      return false;
    }
    let aligned = true;
    lengths.forEach((length, index) => {
      if (length !== tokens[index]) {
        aligned = false;
        push(
          mismatch(
            [...base, key, index],
            `${key}[${index}] has ${length} entries, tokens[${index}] has ${tokens[index]}`,
            length,
          ),
        );
      }
    });
    return aligned;
  };
  if (shape.masks !== undefined && rows('masks', shape.masks, 'sequences')) {
    const { tokenIds, maskIds } = shape;
    if (tokenIds !== undefined && maskIds !== undefined) {
      let offset = 0;
      for (let sequence = 0; sequence < n; sequence++) {
        const length = tokens[sequence] as number;
        for (let position = 0; position < length; position++, offset++) {
          const label = maskIds[offset] as number;
          if (label !== IGNORE_LABEL && label !== tokenIds[offset]) {
            push({
              type: 'mask_value',
              loc: [...base, 'masks', sequence, position],
              msg: `Input should be -100 (not trained) or the token id at this position (${tokenIds[offset]})`,
              input: label,
            });
            if (issues.length >= MAX_ISSUES) return;
          }
        }
      }
    }
  }
  if (shape.scores !== undefined && shape.scores !== n)
    push(
      mismatch(
        [...base, 'scores'],
        `scores has ${shape.scores} entries, tokens has ${n} sequences`,
        shape.scores,
      ),
    );
  for (const key of PER_TOKEN_FLOATS) {
    const lengths = shape.perToken[key];
    if (lengths !== undefined && lengths.length > 0) rows(key, lengths, 'sequences');
  }
  for (const key of PER_SEQUENCE_ANY) {
    const count = shape.perSequence[key];
    if (count !== undefined && count > 0 && count !== n)
      push(mismatch([...base, key], `${key} has ${count} entries, tokens has ${n} sequences`, count));
  }
  const ids = shape.distill.distill_token_ids;
  const logprobs = shape.distill.distill_logprobs;
  const given = (value: { rows: number[] } | undefined) => value !== undefined && value.rows.length > 0;
  if (given(ids) !== given(logprobs)) {
    const missing = given(ids) ? 'distill_logprobs' : 'distill_token_ids';
    const present = given(ids) ? 'distill_token_ids' : 'distill_logprobs';
    push({
      type: 'missing',
      loc: [...base, missing],
      msg: `${missing} is required with ${present} (one teacher logprob per teacher token id)`,
      input: null,
    });
    return;
  }
  if (ids === undefined || logprobs === undefined || !given(ids)) return;
  const idsAligned = rows('distill_token_ids', ids.rows, 'sequences');
  const logprobsAligned = rows('distill_logprobs', logprobs.rows, 'sequences');
  if (!idsAligned || !logprobsAligned) return;
  let offset = 0;
  for (let sequence = 0; sequence < n; sequence++) {
    for (let position = 0; position < (tokens[sequence] as number); position++, offset++) {
      if (ids.k[offset] !== logprobs.k[offset]) {
        push(
          mismatch(
            [...base, 'distill_logprobs', sequence, position],
            `distill_logprobs[${sequence}][${position}] has ${logprobs.k[offset]} entries, distill_token_ids has ${ids.k[offset]}`,
            logprobs.k[offset],
          ),
        );
        if (issues.length >= MAX_ISSUES) return;
      }
    }
  }
}
