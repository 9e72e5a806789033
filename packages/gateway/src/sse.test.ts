import type { ChatResponse } from '@shears/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { messagesDialect } from './anthropic-messages.js';
import { chatCompletionsDialect } from './chat-completions.js';
import type { ResponseMeta } from './dialect.js';
import { responsesDialect } from './responses-api.js';
import { splitForStream, sseEvent } from './sse.js';

describe('splitForStream', () => {
  it('gives the text back exactly, in pieces no longer than the window allows, never splitting a surrogate pair', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 400 }),
        fc.integer({ min: 1, max: 40 }),
        (text, size) => {
          const pieces = splitForStream(text, size);
          expect(pieces.join('')).toBe(text);
          for (const piece of pieces) {
            expect(piece.length).toBeGreaterThan(0);
            expect(piece.length).toBeLessThanOrEqual(size + 1);
            const last = piece.charCodeAt(piece.length - 1);
            expect(
              last >= 0xd800 && last <= 0xdbff,
              `piece ends in a high surrogate: ${JSON.stringify(piece)}`,
            ).toBe(false);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('cuts after whitespace when it can, like tokens that end at word boundaries', () => {
    expect(splitForStream('the quick brown fox jumps', 8)).toEqual([
      'the ',
      'quick ',
      'brown ',
      'fox ',
      'jumps',
    ]);
    expect(splitForStream('', 8)).toEqual([]);
    expect(splitForStream('🎉🎉🎉', 3)).toEqual(['🎉', '🎉', '🎉']);
  });
});

describe('sseEvent', () => {
  it('writes named and unnamed events, JSON-encoding data that is not already text', () => {
    expect(sseEvent(undefined, '[DONE]')).toBe('data: [DONE]\n\n');
    expect(sseEvent('ping', { type: 'ping' })).toBe('event: ping\ndata: {"type":"ping"}\n\n');
    // Newlines inside values stay escaped, so one event is one data line.
    expect(sseEvent(undefined, { text: 'a\nb' }).split('\n').filter(Boolean)).toHaveLength(1);
  });
});

describe("the dialects' stream writers", () => {
  // They assemble event JSON from pre-serialised parts (cheaper than one object per event): every
  // event must still be one valid JSON data line, named as its type, whose deltas rebuild the reply.
  const events = (text: string) =>
    text
      .split('\n\n')
      .filter(Boolean)
      .map((block) => {
        const lines = block.split('\n');
        const data = lines.find((line) => line.startsWith('data: '))?.slice(6) ?? '';
        const name = lines.find((line) => line.startsWith('event: '))?.slice(7);
        return { name, data: data === '[DONE]' ? data : (JSON.parse(data) as Record<string, unknown>) };
      });
  const reply = (content: string, reasoning: string, args: string): ChatResponse => ({
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          reasoning_content: reasoning,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'run', arguments: args } }],
        },
        finishReason: 'tool_calls',
      },
    ],
    usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
  });
  const meta = (): ResponseMeta => ({ id: 'id_1', created: 1, model: 'm "q"', chunkChars: 5, sequence: 0 });
  const text = fc.string({ unit: 'grapheme', maxLength: 60 });

  it('Chat Completions, Responses and Messages streams parse event by event and rebuild the reply', () => {
    fc.assert(
      fc.property(text.filter(Boolean), text, text, (content, reasoning, command) => {
        const args = JSON.stringify({ command });
        const response = reply(content, reasoning, args);
        const chat = chatCompletionsDialect.parse(
          {
            model: 'm',
            messages: [{ role: 'user', content: 'x' }],
            stream: true,
            stream_options: { include_usage: true },
          },
          { recall: () => undefined },
        );
        const chunks = events(chatCompletionsDialect.stream(chat, response, meta(), false));
        expect(chunks.at(-1)?.data).toBe('[DONE]');
        const deltas = chunks
          .slice(0, -1)
          .flatMap((chunk) => (chunk.data as { choices: Array<{ delta: Record<string, unknown> }> }).choices)
          .map((choice) => choice.delta);
        expect(deltas.map((delta) => delta.content ?? '').join('')).toBe(content);
        expect(deltas.map((delta) => delta.reasoning_content ?? '').join('')).toBe(reasoning);

        const responses = responsesDialect.parse(
          { model: 'm', instructions: 'be "brief"\n', input: 'x', stream: true },
          { recall: () => undefined },
        );
        const responseMeta = meta();
        const sent = events(
          responsesDialect.preamble(responses, responseMeta) +
            responsesDialect.stream(responses, response, responseMeta, true),
        );
        for (const [index, event] of sent.entries()) {
          expect(event.name).toBe((event.data as { type: string }).type);
          expect((event.data as { sequence_number: number }).sequence_number).toBe(index);
        }
        const joined = (type: string) =>
          sent
            .filter((event) => event.name === type)
            .map((event) => (event.data as { delta: string }).delta)
            .join('');
        expect(joined('response.output_text.delta')).toBe(content);
        expect(joined('response.reasoning_text.delta')).toBe(reasoning);
        expect(joined('response.function_call_arguments.delta')).toBe(args);
        const completed = sent.at(-1)?.data as { response: Record<string, unknown> };
        expect(completed.response).toMatchObject({ status: 'completed', instructions: 'be "brief"\n' });
        // The same object the non-streaming answer sends (item ids are drawn per answer).
        const withoutIds = (body: Record<string, unknown>) => ({
          ...body,
          output: (body.output as Array<Record<string, unknown>>).map(({ id: _id, ...item }) => item),
        });
        expect(withoutIds(completed.response)).toEqual(
          withoutIds(JSON.parse(JSON.stringify(responsesDialect.respond(responses, response, responseMeta)))),
        );

        const messages = messagesDialect.parse(
          { model: 'm', max_tokens: 9, messages: [{ role: 'user', content: 'x' }], stream: true },
          { recall: () => undefined },
        );
        const anthropic = events(messagesDialect.stream(messages, response, meta(), false));
        for (const event of anthropic) expect(event.name).toBe((event.data as { type: string }).type);
        const blockDeltas = anthropic
          .filter((event) => event.name === 'content_block_delta')
          .map((event) => (event.data as { delta: Record<string, string> }).delta);
        expect(blockDeltas.map((delta) => delta.text ?? '').join('')).toBe(content);
        expect(blockDeltas.map((delta) => delta.thinking ?? '').join('')).toBe(reasoning);
        expect(JSON.parse(blockDeltas.map((delta) => delta.partial_json ?? '').join(''))).toEqual({
          command,
        });
      }),
      { numRuns: 150 },
    );
  });
});
