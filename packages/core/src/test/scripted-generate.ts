// Token-in/token-out routes for the scripted test server: vLLM-style `/generate` (Atropos'
// vLLM API server shape), SGLang-style `/generate`, vLLM `/v1/completions` with token-id
// prompts, and `/health`. The scripted policy decides the completion TEXT; the route turns it
// into real token ids with a real tokenizer (any TokenizerV1, so core stays dependency-free)
// and attaches deterministic logprobs. Plug into createScriptedServer({ routes }).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TokenizerV1 } from '../contracts/tokenizer.js';
import type { ScriptedFault, ScriptedRoute } from './scripted-server.js';

export type ScriptedGenerateFlavor = 'vllm' | 'sglang' | 'completions';

export interface ScriptedGenerateRequest {
  flavor: ScriptedGenerateFlavor;
  promptIds: number[];
  /** The prompt decoded with special tokens kept. */
  promptText: string;
  maxTokens: number | undefined;
  n: number;
  body: Record<string, unknown>;
}

export interface ScriptedCompletion {
  /** The completion text the model "writes" (special tokens may appear literally). */
  text: string;
  /** `stop` (default) appends the tokenizer's first stop token unless the text already ends in one. */
  finishReason?: 'stop' | 'length';
}

export type ScriptedGenerateReply = string | ScriptedCompletion | ScriptedFault;

export type ScriptedGeneratePolicy = (
  request: ScriptedGenerateRequest,
  context: { callIndex: number },
) => ScriptedGenerateReply | undefined | Promise<ScriptedGenerateReply | undefined>;

export interface ScriptedGenerateOptions {
  tokenizer: TokenizerV1;
  policy?: ScriptedGeneratePolicy;
  /** Consumed in order when there is no policy or it returns undefined. */
  replies?: ScriptedGenerateReply[];
  /** Stop token appended to `stop` completions (default tokenizer.stopTokenIds[0]). */
  stopTokenId?: number;
  /**
   * vLLM `/generate` answers carry `policy_version` (as the reference trainer's colocated policy
   * server does): the value this returns at each call. Absent: no such field, like vLLM.
   */
  policyVersion?: () => number;
}

export interface ScriptedGeneratedRecord {
  request: ScriptedGenerateRequest;
  tokenIds: number[];
  logprobs: number[];
}

export interface ScriptedGenerate {
  /** `/generate`, `/v1/completions`, `/health`: pass as `createScriptedServer({ routes })`. */
  readonly routes: Record<string, ScriptedRoute>;
  /** Every completion produced, in order (one per choice). */
  readonly generated: ScriptedGeneratedRecord[];
  readonly requests: ScriptedGenerateRequest[];
  enqueue(...replies: ScriptedGenerateReply[]): void;
}

/** A deterministic, plausible logprob in (-2.01, -0.01] for a token at a position. */
export function scriptedLogprob(tokenId: number, position: number): number {
  return -0.01 - (((tokenId * 31 + position * 7) % 97) / 97) * 2;
}

function send(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (response.destroyed || response.writableEnded) return;
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

function isFault(reply: ScriptedGenerateReply): reply is ScriptedFault {
  return typeof reply === 'object' && 'fault' in reply;
}

function numberArray(value: unknown): number[] | undefined {
  return Array.isArray(value) && value.every((item) => Number.isInteger(item))
    ? (value as number[])
    : undefined;
}

export function createScriptedGenerate(options: ScriptedGenerateOptions): ScriptedGenerate {
  const { tokenizer } = options;
  const queue: ScriptedGenerateReply[] = [...(options.replies ?? [])];
  const generated: ScriptedGeneratedRecord[] = [];
  const requests: ScriptedGenerateRequest[] = [];
  const stopTokenId = options.stopTokenId ?? tokenizer.stopTokenIds[0];
  const stopSet = new Set(tokenizer.stopTokenIds);
  let callIndex = 0;

  const complete = (reply: string | ScriptedCompletion, request: ScriptedGenerateRequest) => {
    const completion = typeof reply === 'string' ? { text: reply } : reply;
    let ids = tokenizer.encode(completion.text, { addSpecialTokens: false });
    let finishReason = completion.finishReason ?? 'stop';
    if (finishReason === 'stop' && stopTokenId !== undefined && !stopSet.has(ids[ids.length - 1] as number))
      ids.push(stopTokenId);
    if (request.maxTokens !== undefined && ids.length > request.maxTokens) {
      ids = ids.slice(0, request.maxTokens);
      finishReason = 'length';
    }
    const logprobs = ids.map((id, position) => scriptedLogprob(id, position));
    const skipSpecial =
      request.body.skip_special_tokens !== false &&
      (request.body.sampling_params as { skip_special_tokens?: unknown } | undefined)?.skip_special_tokens !==
        false;
    generated.push({ request, tokenIds: ids, logprobs });
    return { ids, logprobs, finishReason, text: tokenizer.decode(ids, { skipSpecialTokens: skipSpecial }) };
  };

  const handle =
    (flavor: 'generate' | 'completions'): ScriptedRoute =>
    async (request: IncomingMessage, response: ServerResponse, raw: Buffer) => {
      if (request.method === 'GET') return send(response, 405, { error: { message: 'use POST' } });
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        return send(response, 400, { error: { message: 'scripted generate: body is not valid JSON' } });
      }
      const sampling = (body.sampling_params ?? {}) as Record<string, unknown>;
      let kind: ScriptedGenerateFlavor;
      let promptIds: number[] | undefined;
      if (flavor === 'completions') {
        kind = 'completions';
        promptIds =
          numberArray(body.prompt) ??
          (typeof body.prompt === 'string'
            ? tokenizer.encode(body.prompt, { addSpecialTokens: false })
            : undefined);
      } else if ('input_ids' in body || 'sampling_params' in body) {
        kind = 'sglang';
        promptIds = numberArray(body.input_ids);
      } else {
        kind = 'vllm';
        promptIds = numberArray(
          (body.prompt as { prompt_token_ids?: unknown } | undefined)?.prompt_token_ids,
        );
      }
      if (!promptIds) {
        return send(response, 400, {
          error: {
            message: `scripted generate (${kind}): expected token-id prompt (${kind === 'sglang' ? 'input_ids' : kind === 'vllm' ? 'prompt.prompt_token_ids' : 'prompt'})`,
          },
        });
      }
      const maxRaw = kind === 'sglang' ? sampling.max_new_tokens : body.max_tokens;
      const nRaw = kind === 'sglang' ? sampling.n : body.n;
      const scripted: ScriptedGenerateRequest = {
        flavor: kind,
        promptIds,
        promptText: tokenizer.decode(promptIds, { skipSpecialTokens: false }),
        maxTokens: typeof maxRaw === 'number' ? maxRaw : undefined,
        n: typeof nRaw === 'number' && nRaw > 1 ? nRaw : 1,
        body,
      };
      requests.push(scripted);
      const index = callIndex++;
      const reply =
        (options.policy ? await options.policy(scripted, { callIndex: index }) : undefined) ?? queue.shift();
      if (reply === undefined)
        return send(response, 500, {
          error: { message: `scripted generate: no reply scripted for call #${index}` },
        });
      if (isFault(reply)) {
        switch (reply.fault) {
          case 'error':
            return send(
              response,
              reply.status,
              reply.body ?? { error: { message: `scripted error ${reply.status}` } },
              reply.headers,
            );
          case 'hang':
            return;
          case 'reset':
            request.socket.destroy();
            return;
          case 'malformed': {
            const text = '{"token_ids": [[1, 2,';
            response.writeHead(200, {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(text),
            });
            response.end(text);
            return;
          }
          case 'empty_choices':
            return send(
              response,
              200,
              kind === 'sglang'
                ? []
                : kind === 'vllm'
                  ? { text: [], token_ids: [], logprobs: [], finish_reasons: [] }
                  : { choices: [] },
            );
        }
      }
      const outputs = Array.from({ length: scripted.n }, () => complete(reply, scripted));
      if (kind === 'vllm') {
        return send(response, 200, {
          text: outputs.map((output) => output.text),
          prompt: scripted.promptText,
          prompt_token_ids: promptIds,
          token_ids: outputs.map((output) => output.ids),
          logprobs: outputs.map((output) =>
            output.ids.map((id, position) => [{ [String(id)]: output.logprobs[position] }]),
          ),
          finish_reasons: outputs.map((output) => output.finishReason),
          ...(options.policyVersion ? { policy_version: options.policyVersion() } : {}),
        });
      }
      if (kind === 'sglang') {
        const items = outputs.map((output) => ({
          text: output.text,
          output_ids: output.ids,
          meta_info: {
            id: `scripted-${index}`,
            prompt_tokens: promptIds.length,
            completion_tokens: output.ids.length,
            finish_reason: { type: output.finishReason },
            output_token_logprobs: output.ids.map((id, position) => [output.logprobs[position], id, null]),
          },
        }));
        return send(response, 200, items.length === 1 ? items[0] : items);
      }
      return send(response, 200, {
        id: `cmpl-scripted-${index}`,
        object: 'text_completion',
        model: body.model ?? 'scripted-model',
        choices: outputs.map((output, choice) => ({
          index: choice,
          text: output.text,
          token_ids: body.return_token_ids === true ? output.ids : undefined,
          finish_reason: output.finishReason,
          logprobs: {
            tokens: output.ids.map((id) =>
              body.return_tokens_as_token_ids === true ? `token_id:${id}` : tokenizer.decode([id]),
            ),
            token_logprobs: output.logprobs,
          },
        })),
        usage: {
          prompt_tokens: promptIds.length,
          completion_tokens: outputs.reduce((sum, output) => sum + output.ids.length, 0),
          total_tokens: promptIds.length + outputs.reduce((sum, output) => sum + output.ids.length, 0),
        },
      });
    };

  return {
    routes: {
      '/generate': handle('generate'),
      '/v1/completions': handle('completions'),
      '/health': (_request, response) => {
        response.writeHead(200, { 'content-length': 0 });
        response.end();
      },
    },
    generated,
    requests,
    enqueue(...replies) {
      queue.push(...replies);
    },
  };
}
