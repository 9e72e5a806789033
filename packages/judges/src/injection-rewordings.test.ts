// The screen against rewordings (issue 36): the families of text aimed at the grader in
// test-support/rewordings.ts, as the agent's text, JSON-escaped in its tool arguments and as a
// tool's output, and the honest control set, which must stay unflagged.
import type { JudgeSubject } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { AGENT_PENALTY_RULES, screenForInjection } from './injection-screen.js';
import { SCREEN_LANGUAGES } from './screen-phrases.js';
import { HONEST, REWORDINGS } from './test-support/rewordings.js';

const inFinal = (text: string): Pick<JudgeSubject, 'messages' | 'finalResponse'> => ({
  messages: [{ role: 'user', content: 'Fix the parser.' }],
  finalResponse: text,
});

/** A JSON string as a serialiser that escapes every non-ASCII character (and every "i") writes it. */
function escapedJson(text: string): string {
  return JSON.stringify(text).replace(
    /[^\x20-\x7e]|i/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

describe('rewordings of text aimed at the grader', () => {
  it('the family covers every language the lists do', () => {
    // English is every family that is not named after a language.
    const families = new Set(['en', ...REWORDINGS.map(({ family }) => family)]);
    expect(SCREEN_LANGUAGES.filter((language) => !families.has(language))).toEqual([]);
  });

  it.each(REWORDINGS)('$family: flags $text in the final answer', ({ text }) => {
    const screen = screenForInjection(inFinal(text));
    expect(screen.suspected).toBe(true);
    // At least one hit counts against the agent, and every span points into what it wrote.
    expect(screen.spans.some((span) => AGENT_PENALTY_RULES.has(span.rule))).toBe(true);
    for (const span of screen.spans) {
      expect(span).toMatchObject({ source: 'final_response', origin: 'agent' });
      expect(text.slice(span.start, span.end)).toBe(span.excerpt.slice(0, span.end - span.start));
    }
  });

  it.each(REWORDINGS)('$family: flags $text JSON-escaped in a tool argument', ({ text }) => {
    const subject: Pick<JudgeSubject, 'messages' | 'finalResponse'> = {
      messages: [
        { role: 'user', content: 'Fix the parser.' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: {
                name: 'write_file',
                arguments: `{"path": "NOTES.md", "content": ${escapedJson(text)}}`,
              },
            },
          ],
        },
      ],
    };
    const screen = screenForInjection(subject);
    expect(screen.suspected).toBe(true);
    expect(screen.spans.filter((span) => AGENT_PENALTY_RULES.has(span.rule))).not.toHaveLength(0);
    expect(screen.spans.every((span) => span.source === 'tool_call' && span.origin === 'agent')).toBe(true);
  });

  it.each(REWORDINGS)("$family: flags $text in a tool's output, as the environment's", ({ text }) => {
    const screen = screenForInjection({
      messages: [
        { role: 'user', content: 'Summarise https://example.com/page.' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            {
              id: 'c1',
              type: 'function',
              function: { name: 'fetch', arguments: '{"url": "https://example.com/page"}' },
            },
          ],
        },
        {
          role: 'tool',
          tool_call_id: 'c1',
          content: JSON.stringify({ status: 200, body: `<p>${text}</p>` }),
        },
      ],
    });
    expect(screen.suspected).toBe(true);
    expect(screen.spans.every((span) => span.source === 'tool_result' && span.origin === 'environment')).toBe(
      true,
    );
  });

  it(`flags none of the ${HONEST.length} honest texts (false-positive rate 0/${HONEST.length})`, () => {
    const flagged = HONEST.filter((text) => screenForInjection(inFinal(text)).suspected);
    expect(flagged).toEqual([]);
  });

  it('honest JSON and template tokens that look like a verdict are flagged, but never as the agent addressing the grader', () => {
    for (const text of [
      '{"scores": {"f1": 0.8, "recall": 0.7}}',
      '{"winner": "player_2", "moves": 41}',
      'tokenizer.apply_chat_template(messages)  # adds <|im_start|>assistant',
    ]) {
      const screen = screenForInjection(inFinal(text));
      expect(screen.suspected).toBe(true);
      expect(screen.spans.filter((span) => AGENT_PENALTY_RULES.has(span.rule))).toEqual([]);
    }
  });
});
