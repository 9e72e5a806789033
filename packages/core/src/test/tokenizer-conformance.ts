// Conformance suite for the Tokenizer contract. Every tokenizer implementation runs it: ids
// round-trip to text, special tokens of the chat template are single ids, stop tokens decode to
// what the template writes, and rendering is deterministic and extends with the conversation.
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../contracts/chat.js';
import type { TokenizerV1 } from '../contracts/tokenizer.js';

export interface TokenizerConformanceFixture {
  /** Created once for the whole suite (real tokenizers take a second to load). */
  tokenizer: TokenizerV1;
  /** A special token the template writes, e.g. `<|im_start|>`; must encode to one id. */
  specialToken: string;
}

const SAMPLE = 'Hello, world! Ünïcödé 你好 🙂 tabs\tand\nnewlines   and  spaces. x=1+2; print("ok")';

const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Say hi.' },
];

export function describeTokenizerConformance(
  name: string,
  makeFixture: () => TokenizerConformanceFixture | Promise<TokenizerConformanceFixture>,
): void {
  describe(`TokenizerV1 conformance: ${name}`, () => {
    let fixture: TokenizerConformanceFixture;
    const get = async () => {
      fixture ??= await makeFixture();
      return fixture;
    };

    it('declares specificationVersion v1, an id and at least one stop token', async () => {
      const { tokenizer } = await get();
      expect(tokenizer.specificationVersion).toBe('v1');
      expect(tokenizer.id.length).toBeGreaterThan(0);
      expect(tokenizer.stopTokenIds.length).toBeGreaterThan(0);
      for (const id of tokenizer.stopTokenIds) expect(Number.isInteger(id)).toBe(true);
    });

    it('round-trips text through encode and decode', async () => {
      const { tokenizer } = await get();
      const ids = tokenizer.encode(SAMPLE, { addSpecialTokens: false });
      expect(ids.length).toBeGreaterThan(5);
      for (const id of ids) expect(Number.isInteger(id) && id >= 0).toBe(true);
      expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe(SAMPLE);
    });

    it('encodes a special token as one id, kept or skipped on decode as asked', async () => {
      const { tokenizer, specialToken } = await get();
      const ids = tokenizer.encode(`a${specialToken}b`, { addSpecialTokens: false });
      const alone = tokenizer.encode(specialToken, { addSpecialTokens: false });
      expect(alone).toHaveLength(1);
      expect(ids).toContain(alone[0]);
      expect(tokenizer.decode(ids, { skipSpecialTokens: false })).toBe(`a${specialToken}b`);
      expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe('ab');
    });

    it('decodes each stop token to a single token that encodes back to it', async () => {
      const { tokenizer } = await get();
      for (const id of tokenizer.stopTokenIds) {
        const text = tokenizer.decode([id], { skipSpecialTokens: false });
        expect(text.length).toBeGreaterThan(0);
        expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual([id]);
      }
    });

    it('renders the chat template deterministically, with the messages in order', async () => {
      const { tokenizer } = await get();
      const first = tokenizer.applyChatTemplate(CONVERSATION, { addGenerationPrompt: true });
      expect(tokenizer.applyChatTemplate(CONVERSATION, { addGenerationPrompt: true })).toBe(first);
      expect(first.indexOf('Be brief.')).toBeGreaterThanOrEqual(0);
      expect(first.indexOf('Say hi.')).toBeGreaterThan(first.indexOf('Be brief.'));
    });

    it('renders a longer conversation as an extension of the shorter one', async () => {
      const { tokenizer } = await get();
      const short = tokenizer.applyChatTemplate(CONVERSATION, { addGenerationPrompt: true });
      const long = tokenizer.applyChatTemplate(
        [...CONVERSATION, { role: 'assistant', content: 'Hi.' }, { role: 'user', content: 'Again.' }],
        { addGenerationPrompt: true },
      );
      expect(long.startsWith(short)).toBe(true);
      expect(long.length).toBeGreaterThan(short.length);
    });
  });
}
