// Tests of @shears/core/test's scripted token-in/token-out routes with a real tokenizer (core
// has none): the wire shapes our backends read, real ids, and deterministic logprobs.
import { createScriptedGenerate, createScriptedServer, scriptedLogprob } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import { qwen3Tokenizer } from '../test/tokenizers.js';

async function post(url: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return response.json();
}

describe('createScriptedGenerate', () => {
  const tokenizer = qwen3Tokenizer();
  const prompt = tokenizer.encode('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n', {
    addSpecialTokens: false,
  });
  const text = 'Hello, world!';
  const expectedIds = [...tokenizer.encode(text, { addSpecialTokens: false }), tokenizer.stopTokenIds[0]];

  it('answers the vLLM /generate shape with real ids, the stop token and logprobs', async () => {
    const generate = createScriptedGenerate({ tokenizer, replies: [text] });
    const server = await createScriptedServer({ routes: generate.routes });
    try {
      const body = (await post(`${server.origin}/generate`, {
        prompt: { prompt_token_ids: prompt },
        logprobs: 0,
        skip_special_tokens: false,
      })) as {
        token_ids: number[][];
        text: string[];
        logprobs: Array<Array<Array<Record<string, number>>>>;
        finish_reasons: string[];
      };
      expect(body.token_ids).toEqual([expectedIds]);
      expect(body.text).toEqual([`${text}<|im_end|>`]);
      expect(body.finish_reasons).toEqual(['stop']);
      expect(body.logprobs[0]?.[0]?.[0]).toEqual({
        [String(expectedIds[0])]: scriptedLogprob(expectedIds[0] as number, 0),
      });
      expect(generate.requests[0]?.promptText).toBe(
        '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
      );
    } finally {
      await server.close();
    }
  });

  it('answers the SGLang /generate shape and truncates at max_new_tokens', async () => {
    const generate = createScriptedGenerate({ tokenizer, replies: [text] });
    const server = await createScriptedServer({ routes: generate.routes });
    try {
      const body = (await post(`${server.origin}/generate`, {
        input_ids: prompt,
        sampling_params: { max_new_tokens: 2 },
        return_logprob: true,
      })) as {
        output_ids: number[];
        meta_info: { finish_reason: { type: string }; output_token_logprobs: Array<[number, number, null]> };
      };
      expect(body.output_ids).toEqual(expectedIds.slice(0, 2));
      expect(body.meta_info.finish_reason).toEqual({ type: 'length' });
      expect(body.meta_info.output_token_logprobs.map((entry) => entry[1])).toEqual(expectedIds.slice(0, 2));
    } finally {
      await server.close();
    }
  });

  it('answers vLLM /v1/completions with token_id:N tokens, and GET /health', async () => {
    const generate = createScriptedGenerate({ tokenizer, replies: [text] });
    const server = await createScriptedServer({ routes: generate.routes });
    try {
      const body = (await post(`${server.origin}/v1/completions`, {
        model: 'm',
        prompt,
        logprobs: 1,
        return_tokens_as_token_ids: true,
      })) as {
        choices: Array<{ logprobs: { tokens: string[]; token_logprobs: number[] } }>;
      };
      expect(body.choices[0]?.logprobs.tokens).toEqual(expectedIds.map((id) => `token_id:${id}`));
      expect((await fetch(`${server.origin}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('rejects a prompt that is not token ids, naming the expected field', async () => {
    const generate = createScriptedGenerate({ tokenizer, replies: [text] });
    const server = await createScriptedServer({ routes: generate.routes });
    try {
      const response = await fetch(`${server.origin}/generate`, {
        method: 'POST',
        body: JSON.stringify({ input_ids: 'nope' }),
      });
      expect(response.status).toBe(400);
      expect(await response.text()).toContain('input_ids');
    } finally {
      await server.close();
    }
  });
});
