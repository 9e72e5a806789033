// The overhead bench's same-API baseline: the backend answers the Responses and Messages APIs
// itself, as an inference server that speaks them does (vLLM serves /v1/responses and
// /v1/messages), so a harness can be timed calling it directly in its own API. It parses the
// request and renders the answer with the gateway's own dialects, in one write as the gateway
// does, so the bytes the harness reads are the gateway's. Against it, the gateway's added time
// leaves out what the API itself costs (a streamed Responses answer here is 14 KB, a chat one
// 3 KB); against the chat baseline that cost is in. The bench reports both.
import type { ChatResponse } from '@shears/core';
import { sendJson } from '@shears/core/internal';
import type { ScriptedRoute } from '@shears/core/test';
import { messagesDialect } from '../src/anthropic-messages.js';
import type { Dialect } from '../src/dialect.js';
import { randomId } from '../src/ids.js';
import { responsesDialect } from '../src/responses-api.js';

/** The bench's scripted reply. */
export interface BenchReply {
  content: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; arguments: Record<string, unknown> }>;
  usage: { prompt_tokens: number; completion_tokens: number };
}

/** The reply as a shears ChatResponse: what a server hands the gateway. */
export function replyAnswer(reply: BenchReply): ChatResponse {
  return {
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.content,
          reasoning_content: reply.reasoning,
          tool_calls: reply.toolCalls.map((call) => ({
            id: call.id,
            type: 'function' as const,
            function: { name: call.name, arguments: JSON.stringify(call.arguments) },
          })),
        },
        finishReason: 'tool_calls',
      },
    ],
    usage: {
      promptTokens: reply.usage.prompt_tokens,
      completionTokens: reply.usage.completion_tokens,
      totalTokens: reply.usage.prompt_tokens + reply.usage.completion_tokens,
    },
  };
}

/** Routes for the scripted server: `/v1/responses` and `/v1/messages`, answered with `answer`. */
export function sameApiRoutes(answer: ChatResponse, chunkChars = 16): Record<string, ScriptedRoute> {
  const route =
    (dialect: Dialect, prefix: string): ScriptedRoute =>
    (_request, response, _raw, body) => {
      const parsed = dialect.parse(body, { recall: () => undefined });
      const meta = {
        id: randomId(prefix),
        created: Math.floor(Date.now() / 1000),
        model: parsed.model ?? 'scripted-model',
        chunkChars,
        sequence: 0,
      };
      if (!parsed.stream) return sendJson(response, 200, dialect.respond(parsed, answer, meta));
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      response.end(dialect.stream(parsed, answer, meta, false));
    };
  return {
    '/v1/responses': route(responsesDialect as Dialect, 'resp_'),
    '/v1/messages': route(messagesDialect as Dialect, 'msg_'),
  };
}
