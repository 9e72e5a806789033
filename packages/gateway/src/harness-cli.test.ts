// Real agent CLIs, installed from npm as pinned devDependencies, run unmodified by the harness
// env in a real local sandbox: the phase-2 scripted policy (real Qwen3 tokenizer and template,
// hermes parser) calls each CLI's OWN tools in their own call formats — its shell tool to look,
// its edit tool (after its read tool where the CLI demands one) to fix the bundled task, its
// shell tool to run the result; the CLI runs them. The test checks the file on disk, the verifier's reward, and that the GRPO
// row holds exactly the tokens and logprobs the server sampled for the main conversation. HOME,
// XDG folders and config are per rollout; telemetry and update checks are off by the presets.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { messageText, type RewardContext, runGroup, scoredGroupRecordSchema } from '@shears/core';
import type { ScriptedGeneratePolicy } from '@shears/core/test';
import { scoredDataFromRecord } from '@shears/grpo';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { describe, expect, it } from 'vitest';
import { managedBackend, toolCallText } from '../test/backends.js';
import { entriesOf } from '../test/exactness.js';
import { createHarnessEnv, type HarnessEnv, type HarnessRunSummary } from './harness-env.js';
import { HARNESS_PRESETS } from './harness-presets.js';

const BIN = fileURLToPath(new URL('../node_modules/.bin', import.meta.url));
const BROKEN = 'echo "hello, wrold"';
const FIXED = 'echo "hello, world"';
// The first shell call prints the workspace's absolute path (the edit tools want one).
const LOOK = 'echo "WORKDIR=$(pwd)"; cat greet.sh';
const RUN = 'sh greet.sh';

interface ToolStep {
  tool: string;
  /** The call's arguments, given the workspace's absolute path. */
  args: (workdir: string) => Record<string, unknown>;
}

/**
 * What each CLI is driven through, in its own tools and call formats: its shell tool looks, its
 * edit tool fixes the file (after its read tool where the CLI refuses to edit an unread file),
 * its shell tool runs the result, then the policy answers.
 */
const STEPS: Record<string, ToolStep[]> = {
  'qwen-code': [
    { tool: 'run_shell_command', args: () => ({ command: LOOK, description: 'Look at the script' }) },
    { tool: 'read_file', args: (dir) => ({ file_path: `${dir}/greet.sh` }) },
    {
      tool: 'edit',
      args: (dir) => ({ file_path: `${dir}/greet.sh`, old_string: BROKEN, new_string: FIXED }),
    },
    { tool: 'run_shell_command', args: () => ({ command: RUN, description: 'Run the script' }) },
  ],
  opencode: [
    { tool: 'bash', args: () => ({ command: LOOK, description: 'Look at the script' }) },
    { tool: 'read', args: (dir) => ({ filePath: `${dir}/greet.sh` }) },
    {
      tool: 'edit',
      args: (dir) => ({ filePath: `${dir}/greet.sh`, oldString: BROKEN, newString: FIXED }),
    },
    { tool: 'bash', args: () => ({ command: RUN, description: 'Run the script' }) },
  ],
  'claude-code': [
    { tool: 'Bash', args: () => ({ command: LOOK, description: 'Look at the script' }) },
    { tool: 'Read', args: (dir) => ({ file_path: `${dir}/greet.sh` }) },
    {
      tool: 'Edit',
      args: (dir) => ({ file_path: `${dir}/greet.sh`, old_string: BROKEN, new_string: FIXED }),
    },
    { tool: 'Bash', args: () => ({ command: RUN, description: 'Run the script' }) },
  ],
  // Codex offers no separate edit tool to a model it does not know; its edit tool is
  // `apply_patch` in its own patch format, called through its shell tool, which Codex itself
  // provides (there is no apply_patch program on this machine).
  codex: [
    { tool: 'exec_command', args: () => ({ cmd: LOOK }) },
    {
      tool: 'exec_command',
      args: () => ({
        cmd: `apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: greet.sh\n@@\n-${BROKEN}\n+${FIXED}\n*** End Patch\nPATCH`,
      }),
    },
    { tool: 'exec_command', args: () => ({ cmd: RUN }) },
  ],
};

describe.each(Object.keys(STEPS))('the %s preset, run for real', (presetId) => {
  const preset = HARNESS_PRESETS[presetId]!;

  it('its own shell and edit tools fix the task in the sandbox; reward 1; the GRPO row is exactly what was sampled', async () => {
    expect(existsSync(`${BIN}/${preset.command.split(' ')[0]}`), `${preset.package} is installed`).toBe(true);
    const steps = STEPS[presetId]!;
    let workdir = '';
    const policy: ScriptedGeneratePolicy = (request) => {
      // Side calls (titles, summaries, memory) do not offer the shell tool.
      if (!request.promptText.includes(`"name": "${preset.mainTool}"`)) return 'Fix greeting';
      workdir ||= /WORKDIR=(\/[^\s"'\\<]+)/.exec(request.promptText)?.[1] ?? '';
      const step = steps[request.promptText.split('<tool_response>').length - 1];
      if (!step)
        return '<think>\nThe script prints the greeting now.\n</think>\n\ngreet.sh now prints hello, world.';
      return `<think>\nNext: ${step.tool}.\n</think>\n\n${toolCallText(step.tool, step.args(workdir))}`;
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
      expect(main?.requests).toBe(steps.length + 1);
      expect(harness?.requests.every((request) => request.status === 'ok' || request.api === null)).toBe(
        true,
      );
      // The trajectory is that thread: the CLI's own calls of its own tools, then the answer. Only
      // the edit tool can have fixed the file (the shell commands read and run it); the last
      // shell call's output, as the CLI reported it, is the fixed script's.
      expect(workdir).toMatch(/^\//);
      const calls = rollout.messages.flatMap((message) => message.tool_calls ?? []);
      expect(calls.map((call) => call.function.name)).toEqual(steps.map((step) => step.tool));
      expect(calls.map((call) => JSON.parse(call.function.arguments))).toEqual(
        steps.map((step) => step.args(workdir)),
      );
      const outputs = rollout.messages.filter((message) => message.role === 'tool');
      expect(outputs).toHaveLength(steps.length);
      expect(messageText(outputs[0]!)).toContain('wrold');
      expect(messageText(outputs.at(-1)!)).toContain('hello, world');
      expect(rollout.messages.at(-1)).toMatchObject({ role: 'assistant' });

      // The GRPO row: unmasked tokens and logprobs are exactly the sampled completions.
      const data = scoredDataFromRecord(record);
      const tokens = data?.tokens[0] ?? [];
      const masks = data?.masks[0] ?? [];
      const logprobs = data?.inference_logprobs?.[0] ?? [];
      expect(rollout.tokens?.splits).toBe(0);
      const sampled = entriesOf(tokens, backend.generate.generated);
      expect(sampled).toHaveLength(steps.length + 1);
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
