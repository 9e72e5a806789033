// The env's tools over MCP, end to end with real agent CLIs (pinned devDependencies, unmodified):
// the harness env serves the env's tools (the real `terminal` tool and an env's own tool) at the
// rollout's MCP endpoint and writes each CLI's MCP config; the phase-2 scripted policy (real
// Qwen3 tokenizer and template) calls the env's tools by the names the CLI exposes them under;
// the CLI calls them over MCP, they run in the rollout's local sandbox and fix the task. The
// test checks the file on disk, the reward, the gateway's record of the MCP calls, the trajectory
// (the CLI's own calls of the MCP tools, their results as it reported them) and that the GRPO row
// holds exactly the sampled tokens and logprobs.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineTool, messageText, runGroup, type ToolV1 } from '@shears/core';
import type { ScriptedGeneratePolicy } from '@shears/core/test';
import { scoredDataFromRecord } from '@shears/grpo';
import { createLocalSandboxProvider, createTerminalTool } from '@shears/tools-terminal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { managedBackend, toolCallText } from '../test/backends.js';
import { entriesOf } from '../test/exactness.js';
import { createHarnessEnv, type HarnessRunSummary } from './harness-env.js';
import { HARNESS_PRESETS } from './harness-presets.js';

const BIN = fileURLToPath(new URL('../node_modules/.bin', import.meta.url));
const WANTED = 'héllo, world 🌍';
const TASK = {
  id: 'fix-greeting-mcp',
  prompt: `greet.sh prints a typo. Fix greet.sh so that \`sh greet.sh\` prints exactly: ${WANTED}`,
  files: { 'greet.sh': '#!/bin/sh\necho "héllo, wrold 🌍"\n' },
  verify: `test "$(sh greet.sh)" = "${WANTED}" && test "$(cat DONE.txt)" = "fixed over MCP"`,
};
/** An env's own tool, besides the terminal: it leaves a mark the verifier checks. */
const markTool: ToolV1<{ note: string }> = defineTool({
  name: 'mark_done',
  description: 'Record that the task is done.',
  inputSchema: z.object({ note: z.string().min(1) }),
  async execute(args, context) {
    await context.sandbox.writeFile('DONE.txt', args.note);
    return `marked: ${args.note}`;
  },
});
const FIX = "sed -i 's/wrold/world/' greet.sh && sh greet.sh";

describe.each(
  process.env.SHEARS_MCP_PRESETS
    ? process.env.SHEARS_MCP_PRESETS.split(',')
    : ['qwen-code', 'opencode', 'claude-code', 'codex'],
)('the %s preset with the env tools over MCP', (presetId) => {
  const preset = HARNESS_PRESETS[presetId]!;

  it("the model calls the env's terminal and own tool through the CLI's MCP client; they run in the rollout's sandbox; reward 1; the row is exact", async () => {
    expect(existsSync(`${BIN}/${preset.command.split(' ')[0]}`), `${preset.package} is installed`).toBe(true);
    const terminalName = preset.mcp!.toolName('terminal');
    const markName = preset.mcp!.toolName('mark_done');
    const turns = [
      [toolCallText(terminalName, { command: FIX })],
      [toolCallText(markName, { note: 'fixed over MCP' })],
    ];
    const policy: ScriptedGeneratePolicy = (request) => {
      if (!request.promptText.includes(`"name": "${preset.mainTool}"`)) return 'Fix greeting';
      const taken = request.promptText.split('<|im_start|>user\n<tool_response>').length - 1;
      const turn = turns[taken];
      if (!turn) return '<think>\nFixed.\n</think>\n\ngreet.sh now prints the greeting.';
      return `<think>\nUse the env's tools.\n</think>\n\n${turn.join('\n')}`;
    };
    const backend = await managedBackend({ policy });
    const env = createHarnessEnv({
      preset: presetId,
      bin: BIN,
      timeoutMs: Number(process.env.SHEARS_TEST_HARNESS_TIMEOUT_MS ?? 150_000),
      model: 'qwen3-policy',
      tasks: [TASK],
      tools: [createTerminalTool(), markTool],
    });
    const sandboxes = createLocalSandboxProvider();
    let record: Awaited<ReturnType<typeof runGroup>>;
    try {
      record = await runGroup({
        env,
        item: (await env.nextItem())!,
        server: backend.server,
        sandboxes,
        groupSize: 1,
        allEqualScores: 'keep',
        retryBudget: 0,
      });
    } finally {
      await env.close?.();
      await sandboxes.close();
      await backend.close();
    }
    const rollout = record.rollouts[0]!;
    // Kept in the reward's details; a run that did not reach its reward still has its summary.
    const harness =
      (rollout.rewardDetails as { harness?: HarnessRunSummary } | undefined)?.harness ??
      env.runSummary(rollout.rolloutId);
    const context = `${rollout.outcome}: ${rollout.outcomeReason}\n${JSON.stringify(harness?.requests)}\n${JSON.stringify(harness?.toolCalls)}\n${JSON.stringify(harness?.threads.map((thread) => thread.toolNames))}\n${harness?.outputTail ?? ''}`;
    expect(rollout.outcome, context).toBe('scored');
    expect(rollout.reward, context).toBe(1);

    // The calls reached the env's tools over MCP, once each, in order, without error.
    expect(
      harness?.toolCalls.map((call) => [call.name, JSON.parse(call.arguments), call.error]),
      context,
    ).toEqual([
      ['terminal', { command: FIX }, null],
      ['mark_done', { note: 'fixed over MCP' }, null],
    ]);
    expect(JSON.parse(harness!.toolCalls[0]!.result)).toMatchObject({ exit_code: 0, output: WANTED });

    // The trained thread offered the CLI's shell tool and the MCP tools under the CLI's names;
    // its trajectory holds the model's calls of them and the results as the CLI passed them on.
    const main = harness?.threads.find((thread) => thread.trained);
    expect(main?.toolNames).toEqual(expect.arrayContaining([preset.mainTool, terminalName, markName]));
    const made = rollout.messages.flatMap((message) => message.tool_calls ?? []);
    expect(made.map((call) => call.function.name)).toEqual([terminalName, markName]);
    const results = rollout.messages.filter((message) => message.role === 'tool').map(messageText);
    expect(results[0]).toContain(WANTED);
    expect(results[1]).toContain('marked: fixed over MCP');

    // The GRPO row: unmasked tokens and logprobs are exactly the sampled completions.
    const data = scoredDataFromRecord(record);
    const tokens = data?.tokens[0] ?? [];
    const masks = data?.masks[0] ?? [];
    const logprobs = data?.inference_logprobs?.[0] ?? [];
    expect(rollout.tokens?.splits).toBe(0);
    const sampled = entriesOf(tokens, backend.generate.generated);
    expect(sampled).toHaveLength(turns.length + 1);
    expect(tokens.filter((_, index) => masks[index] !== -100)).toEqual(
      sampled.flatMap((entry) => entry.tokenIds),
    );
    expect(logprobs.filter((_, index) => masks[index] !== -100)).toEqual(
      sampled.flatMap((entry) => entry.logprobs),
    );
  }, 240_000);
});

describe('the harness env with tools and the presets', () => {
  it('hands the tools to every preset through its MCP config (codex: required, so it waits for the tools)', () => {
    expect(Object.values(HARNESS_PRESETS).filter((preset) => !preset.mcp)).toEqual([]);
    const codexConfig = HARNESS_PRESETS.codex!.mcp!.files['~/.codex/config.toml'];
    expect(codexConfig).toContain(
      '[mcp_servers.shears]\nurl = "{{mcpUrl}}"\nbearer_token_env_var = "SHEARS_API_KEY"\nrequired = true\n',
    );
    expect(
      createHarnessEnv({ preset: 'codex', tools: [markTool] }).tools({
        id: 't',
        prompt: 'p',
        verify: 'true',
      }),
    ).toEqual([markTool]);
  });
});
