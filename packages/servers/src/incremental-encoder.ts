// Incremental tokenization for growing conversations: when the new text extends the previous
// one, only the text after the last safe boundary (the end of an added token such as
// `<|im_start|>`, across which the tokenizer never merges) is tokenized again, so per-turn
// cost follows the new text, not the whole context. The ids equal one-shot tokenization.
import type { TokenizerV1 } from '@shears/core';

export interface IncrementalEncodeResult {
  ids: number[];
  /** Tokens reused from the previous call. */
  reusedTokens: number;
  /** Characters actually tokenized by this call. */
  encodedChars: number;
}

export interface IncrementalEncoder {
  /** Ids of `text` (no special tokens added: templates write their own). */
  encode(text: string): IncrementalEncodeResult;
  reset(): void;
}

type BoundaryTokenizer = TokenizerV1 & { readonly addedTokens?: ReadonlyMap<string, number> };

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Finds the last added token in `text`: its end offset and its id. Searches growing windows
 * from the end, so the cost is proportional to the distance from the end.
 */
function lastAddedToken(
  text: string,
  pattern: RegExp,
  tokens: ReadonlyMap<string, number>,
): { end: number; id: number } | undefined {
  for (let window = 2048; ; window *= 4) {
    const start = Math.max(0, text.length - window);
    pattern.lastIndex = 0;
    let last: RegExpExecArray | undefined;
    const slice = text.slice(start);
    for (let match = pattern.exec(slice); match; match = pattern.exec(slice)) last = match;
    if (last) {
      const id = tokens.get(last[0]);
      if (id !== undefined) return { end: start + last.index + last[0].length, id };
    }
    if (start === 0) return undefined;
  }
}

export function createIncrementalEncoder(tokenizer: BoundaryTokenizer): IncrementalEncoder {
  const tokens = tokenizer.addedTokens ?? new Map<string, number>();
  const addedIds = new Set(tokens.values());
  const pattern =
    tokens.size > 0
      ? new RegExp(
          [...tokens.keys()]
            .sort((a, b) => b.length - a.length)
            .map(escapeRegExp)
            .join('|'),
          'g',
        )
      : undefined;
  let previousText = '';
  let previousIds: number[] = [];

  const full = (text: string): IncrementalEncodeResult => {
    previousText = text;
    previousIds = tokenizer.encode(text, { addSpecialTokens: false });
    return { ids: previousIds.slice(), reusedTokens: 0, encodedChars: text.length };
  };

  return {
    encode(text) {
      if (!pattern || previousText.length === 0 || !text.startsWith(previousText)) return full(text);
      const boundary = lastAddedToken(previousText, pattern, tokens);
      if (!boundary) return full(text);
      // The boundary token must be the last added-token id in the previous ids; otherwise the
      // text and ids disagree (e.g. a token string split by normalisation) and we start over.
      let index = previousIds.length - 1;
      while (index >= 0 && !addedIds.has(previousIds[index] as number)) index--;
      if (index < 0 || previousIds[index] !== boundary.id) return full(text);
      const tail = text.slice(boundary.end);
      const tailIds = tail.length > 0 ? tokenizer.encode(tail, { addSpecialTokens: false }) : [];
      const ids = previousIds.slice(0, index + 1);
      for (const id of tailIds) ids.push(id);
      previousText = text;
      previousIds = ids;
      return { ids: ids.slice(), reusedTokens: index + 1, encodedChars: tail.length };
    },
    reset() {
      previousText = '';
      previousIds = [];
    },
  };
}
