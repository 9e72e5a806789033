// Conformance suite for the Server contract. Every server implementation runs it against a
// scripted HTTP server speaking its protocol: answers and tool calls come back in the OpenAI
// message shape, transient failures are retried, permanent ones fail at once with a
// non-retryable ServerError, aborts are honoured, and managed servers record well-formed
// tokens, masks and logprobs.
import { describe, expect, it } from 'vitest';
import type { ChatMessage, ToolSchema } from '../contracts/chat.js';
import { isManagedServer, type ServerV1 } from '../contracts/server.js';
import { ServerError } from '../errors.js';

export interface ServerConformanceFixture {
  /** The server under test, set up with fast retries (no real waiting). */
  server: ServerV1;
  /** Scripts the next answer: plain text. */
  enqueueText(text: string): void;
  /** Scripts the next answer: one call of `name` with these arguments. */
  enqueueToolCall(name: string, args: Record<string, unknown>): void;
  /** Scripts the next answer: an HTTP error status. */
  enqueueError(status: number): void;
  cleanup(): Promise<void>;
}

const TOOLS: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'lookup',
      description: 'Look a word up',
      parameters: { type: 'object', properties: { word: { type: 'string' } } },
    },
  },
];

export function describeServerConformance(
  name: string,
  makeFixture: () => Promise<ServerConformanceFixture>,
): void {
  const withFixture = async (body: (fixture: ServerConformanceFixture) => Promise<void>) => {
    const fixture = await makeFixture();
    try {
      await body(fixture);
    } finally {
      await fixture.cleanup();
    }
  };

  describe(`ServerV1 conformance: ${name}`, () => {
    it('declares specificationVersion v1, a provider and a model', () =>
      withFixture(async ({ server }) => {
        expect(server.specificationVersion).toBe('v1');
        expect(server.provider.length).toBeGreaterThan(0);
        expect(server.model.length).toBeGreaterThan(0);
      }));

    it('returns a plain answer as an assistant message', () =>
      withFixture(async ({ server, enqueueText }) => {
        enqueueText('The answer is 42.');
        const response = await server.chat({ messages: [{ role: 'user', content: 'Answer?' }] });
        expect(response.choices).toHaveLength(1);
        expect(response.choices[0]?.message.role).toBe('assistant');
        expect(response.choices[0]?.message.content).toBe('The answer is 42.');
        expect(response.choices[0]?.message.tool_calls ?? []).toHaveLength(0);
        if (response.usage) {
          expect(response.usage.promptTokens).toBeGreaterThan(0);
          expect(response.usage.totalTokens).toBe(
            response.usage.promptTokens + response.usage.completionTokens,
          );
        }
      }));

    it('returns a tool call with an id, the name and JSON arguments', () =>
      withFixture(async ({ server, enqueueToolCall }) => {
        enqueueToolCall('lookup', { word: 'shears' });
        const response = await server.chat({
          messages: [{ role: 'user', content: 'Define shears.' }],
          tools: TOOLS,
        });
        const call = response.choices[0]?.message.tool_calls?.[0];
        expect(call?.id.length).toBeGreaterThan(0);
        expect(call?.type).toBe('function');
        expect(call?.function.name).toBe('lookup');
        expect(JSON.parse(call?.function.arguments ?? 'null')).toEqual({ word: 'shears' });
        expect(response.choices[0]?.finishReason).toBe('tool_calls');
      }));

    it('retries a transient HTTP 500', () =>
      withFixture(async ({ server, enqueueError, enqueueText }) => {
        enqueueError(500);
        enqueueText('recovered');
        const response = await server.chat({ messages: [{ role: 'user', content: 'hi' }] });
        expect(response.choices[0]?.message.content).toBe('recovered');
      }));

    it('fails at once with a non-retryable ServerError on HTTP 404', () =>
      withFixture(async ({ server, enqueueError, enqueueText }) => {
        enqueueError(404);
        enqueueText('must not be reached');
        const error = await server
          .chat({ messages: [{ role: 'user', content: 'hi' }] })
          .catch((caught: unknown) => caught);
        expect(ServerError.isInstance(error)).toBe(true);
        expect((error as ServerError).retryable).toBe(false);
        expect((error as ServerError).status).toBe(404);
      }));

    it('rejects a call whose signal is already aborted', () =>
      withFixture(async ({ server, enqueueText }) => {
        enqueueText('unused');
        const controller = new AbortController();
        controller.abort();
        await expect(
          server.chat({ messages: [{ role: 'user', content: 'hi' }], signal: controller.signal }),
        ).rejects.toThrow();
      }));

    it('records well-formed tokens, masks and logprobs in a session (managed servers)', () =>
      withFixture(async ({ server, enqueueText }) => {
        if (!isManagedServer(server)) return;
        enqueueText('first');
        enqueueText('second');
        const session = server.openSession({ rolloutId: 'conformance' });
        const first = await session.chat({ messages: [{ role: 'user', content: 'one' }] });
        await session.chat({
          messages: [
            { role: 'user', content: 'one' },
            first.choices[0]?.message as ChatMessage,
            { role: 'user', content: 'two' },
          ],
        });
        const record = session.tokenRecord();
        expect(record.sequences.length).toBeGreaterThan(0);
        expect(record.splits).toBe(record.sequences.length - 1);
        for (const sequence of record.sequences) {
          expect(sequence.masks).toHaveLength(sequence.tokens.length);
          expect(sequence.logprobs).toHaveLength(sequence.tokens.length);
          expect(sequence.masks[0]).toBe(-100);
          sequence.masks.forEach((mask, index) => {
            if (mask === -100) expect(sequence.logprobs[index]).toBe(1.0);
            else {
              expect(mask).toBe(sequence.tokens[index]);
              expect(sequence.logprobs[index]).toBeLessThanOrEqual(0);
            }
          });
          expect(sequence.masks.some((mask) => mask !== -100)).toBe(true);
        }
        session.close();
      }));
  });
}
