// Real agent CLIs, installed from npm as pinned devDependencies, run unmodified by the harness
// env in a real local sandbox: the phase-2 scripted policy (real Qwen3 tokenizer and template,
// hermes parser) calls each CLI's OWN shell tool in its own call format to fix the bundled task;
// the CLI runs it. The test checks the file on disk, the verifier's reward, and that the GRPO
// row holds exactly the tokens and logprobs the server sampled for the main conversation. HOME,
// XDG folders and config are per rollout; telemetry and update checks are off by the presets.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type RewardContext, runGroup, scoredGroupRecordSchema } from '@shears/core';
import type { ScriptedGeneratePolicy } from '@shears/core/test';
import { scoredDataFromRecord } from '@shears/grpo';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { describe, expect, it } from 'vitest';
import { managedBackend, toolCallText } from '../test/backends.js';
import { entriesOf } from '../test/exactness.js';
import { createHarnessEnv, type HarnessEnv, type HarnessRunSummary } from './harness-env.js';
import { HARNESS_PRESETS } from './harness-presets.js';

const BIN = fileURLToPath(new URL('../node_modules/.bin', import.meta.url));
const FIX = "sed -i 's/wrold/world/' greet.sh";

/** Each CLI's shell tool call, as the CLI itself defines the tool. */
const SHELL_CALLS: Record<string, Record<string, unknown>> = {
  'qwen-code': { command: FIX, description: 'Fix the typo' },
  opencode: { command: FIX, description: 'Fix the typo' },
  'claude-code': { command: FIX, description: 'Fix the typo' },
  codex: { cmd: FIX },
};

describe.each(Object.keys(SHELL_CALLS))('the %s preset, run for real', (presetId) => {
  const preset = HARNESS_PRESETS[presetId]!;

  it('its own shell tool fixes the task in the sandbox; reward 1; the GRPO row is exactly what was sampled', async () => {
    expect(existsSync(`${BIN}/${preset.command.split(' ')[0]}`), `${preset.package} is installed`).toBe(true);
    const policy: ScriptedGeneratePolicy = (request) => {
      // Side calls (titles, summaries, memory) do not offer the shell tool.
      if (!request.promptText.includes(`"name": "${preset.mainTool}"`)) return 'Fix greeting';
      if (!request.promptText.includes('<tool_response>'))
        return `<think>\nFix the typo with the shell.\n</think>\n\n${toolCallText(preset.mainTool, SHELL_CALLS[presetId]!)}`;
      return '<think>\nThe typo is fixed.\n</think>\n\ngreet.sh now prints hello, world.';
    };
    const backend = await managedBackend({ policy });
    const env = createHarnessEnv({ preset: presetId, bin: BIN, timeoutMs: 150_000, model: 'qwen3-policy' });
    const sandboxes = createLocalSandboxProvider();
    try {
      let onDisk = '';
      const observed: HarnessEnv = {
        ...env,
        async computeReward(item, rollout, context: RewardContext) {
          onDisk = new TextDecoder().decode(await context.sandbox.readFile('greet.sh'));
          return env.computeReward(item, rollout, context);
        },
      };
      const record = await runGroup({
        env: observed,
        item: (await env.nextItem())!,
        server: backend.server,
        sandboxes,
        groupSize: 1,
        allEqualScores: 'keep',
        retryBudget: 0,
      });
      expect(scoredGroupRecordSchema.parse(record)).toBeTruthy();
      const rollout = record.rollouts[0]!;
      const harness = (rollout.rewardDetails as { harness?: HarnessRunSummary } | undefined)?.harness;
      const context = `${rollout.outcome}: ${rollout.outcomeReason}\n${harness?.outputTail ?? ''}`;
      expect(rollout.outcome, context).toBe('scored');
      expect(onDisk, context).toBe('#!/bin/sh\necho "hello, world"\n');
      expect(rollout.reward, context).toBe(1);
      expect(harness?.exitCode, context).toBe(0);

      // The trained thread is the main conversation, the one that offered the CLI's shell tool.
      const main = harness?.threads.find((thread) => thread.trained);
      expect(main?.toolNames).toContain(preset.mainTool);
      expect(main?.requests).toBe(2);
      expect(harness?.requests.every((request) => request.status === 'ok' || request.api === null)).toBe(
        true,
      );
      // The trajectory is that thread: the CLI's own call of its own shell tool, then the answer.
      const calls = rollout.messages.flatMap((message) => message.tool_calls ?? []);
      expect(calls.map((call) => call.function.name)).toEqual([preset.mainTool]);
      expect(JSON.parse(calls[0]?.function.arguments ?? '{}')).toEqual(SHELL_CALLS[presetId]);
      expect(rollout.messages.at(-1)).toMatchObject({ role: 'assistant' });

      // The GRPO row: unmasked tokens and logprobs are exactly the two sampled completions.
      const data = scoredDataFromRecord(record);
      const tokens = data?.tokens[0] ?? [];
      const masks = data?.masks[0] ?? [];
      const logprobs = data?.inference_logprobs?.[0] ?? [];
      expect(rollout.tokens?.splits).toBe(0);
      const sampled = entriesOf(tokens, backend.generate.generated);
      expect(sampled).toHaveLength(2);
      expect(tokens.filter((_, index) => masks[index] !== -100)).toEqual(
        sampled.flatMap((entry) => entry.tokenIds),
      );
      expect(logprobs.filter((_, index) => masks[index] !== -100)).toEqual(
        sampled.flatMap((entry) => entry.logprobs),
      );
    } finally {
      await env.close?.();
      await sandboxes.close();
      await backend.close();
    }
  }, 240_000);
});
