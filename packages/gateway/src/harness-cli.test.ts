// Real agent CLIs, installed from npm as pinned devDependencies, run unmodified by the harness
// env in a real local sandbox: the phase-2 scripted policy (real Qwen3 tokenizer and template,
// hermes parser) calls each CLI's OWN tools in their own call formats — its shell tool twice in
// one reply to look, its edit tool (after its read tool where the CLI demands one) to fix the
// task, its shell tool to run the result; the CLI runs them. The test checks the file on
// disk, the verifier's reward, and that the GRPO row holds exactly the tokens and logprobs the
// server sampled for the main conversation. HOME, XDG folders and config are per rollout;
// telemetry and update checks are off by the presets.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  messageText,
  type RewardContext,
  runGroup,
  type ScoredGroupRecord,
  scoredGroupRecordSchema,
} from '@shears/core';
import type { ScriptedGeneratePolicy } from '@shears/core/test';
import { scoredDataFromRecord } from '@shears/grpo';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { describe, expect, it } from 'vitest';
import { type ManagedBackend, managedBackend, toolCallText } from '../test/backends.js';
import { entriesOf } from '../test/exactness.js';
import { createHarnessEnv, type HarnessEnv, type HarnessRunSummary } from './harness-env.js';
import { HARNESS_PRESETS } from './harness-presets.js';

const BIN = fileURLToPath(new URL('../node_modules/.bin', import.meta.url));
// Not the bundled task: one with non-ASCII text (two-byte, four-byte and three-byte UTF-8), so
// that every API's stream, each CLI's decoding and the edit tools carry it, and the tokens stay
// exact through it.
const WANTED = 'héllo, world 🌍 — ok';
const BROKEN = 'echo "héllo, wrold 🌍 — ok"';
const FIXED = `echo "${WANTED}"`;
const TASK = {
  id: 'fix-greeting-utf8',
  prompt: `greet.sh prints a typo. Fix greet.sh so that \`sh greet.sh\` prints exactly: ${WANTED}`,
  files: { 'greet.sh': `#!/bin/sh\n${BROKEN}\n` },
  verify: `test "$(sh greet.sh)" = "${WANTED}"`,
};
// The first turn's shell calls print the workspace's absolute path (the edit tools want one) and
// list it: two calls in one reply, which each CLI runs and answers in one turn.
const LOOK = 'echo "WORKDIR=$(pwd)"; cat greet.sh';
const LIST = 'ls -la';
const RUN = 'sh greet.sh';

interface ToolCall {
  tool: string;
  /** The call's arguments, given the workspace's absolute path (and a started sub-agent's id). */
  args: (workdir: string, agentId?: string) => Record<string, unknown>;
}

/** A shell call in the form of qwen-code's, opencode's and Claude Code's shell tools. */
const described = (tool: string) => (command: string) => ({
  tool,
  args: () => ({ command, description: `Run ${command.split(' ')[0]}` }),
});

/** The argument names of a CLI's read and edit tools. */
interface EditKeys {
  path: string;
  old: string;
  new: string;
}
const SNAKE_CASE: EditKeys = { path: 'file_path', old: 'old_string', new: 'new_string' };

/**
 * The turns of a CLI with separate read and edit tools: two shell calls at once look, the read
 * tool reads (each of these CLIs refuses to edit a file it has not read), the edit tool fixes the
 * file, the shell tool runs the result.
 */
function readEditRun(shellTool: string, readTool: string, editTool: string, keys: EditKeys): ToolCall[][] {
  const shell = described(shellTool);
  return [
    [shell(LOOK), shell(LIST)],
    [{ tool: readTool, args: (dir) => ({ [keys.path]: `${dir}/greet.sh` }) }],
    [
      {
        tool: editTool,
        args: (dir) => ({ [keys.path]: `${dir}/greet.sh`, [keys.old]: BROKEN, [keys.new]: FIXED }),
      },
    ],
    [shell(RUN)],
  ];
}

/**
 * What each CLI is driven through, one model turn per entry, in its own tools and call formats;
 * then the policy answers.
 */
const TURNS: Record<string, ToolCall[][]> = {
  'qwen-code': readEditRun('run_shell_command', 'read_file', 'edit', SNAKE_CASE),
  opencode: readEditRun('bash', 'read', 'edit', { path: 'filePath', old: 'oldString', new: 'newString' }),
  'claude-code': readEditRun('Bash', 'Read', 'Edit', SNAKE_CASE),
  // Codex offers no separate edit tool to a model it does not know; its edit tool is
  // `apply_patch` in its own patch format, called through its shell tool, which Codex itself
  // provides (there is no apply_patch program on this machine).
  codex: ((shell) => [
    [shell(LOOK), shell(LIST)],
    [
      shell(
        `apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: greet.sh\n@@\n-${BROKEN}\n+${FIXED}\n*** End Patch\nPATCH`,
      ),
    ],
    [shell(RUN)],
  ])((cmd: string): ToolCall => ({ tool: 'exec_command', args: () => ({ cmd }) })),
};

/**
 * Runs one rollout of `presetId` on TASK behind a phase-2 server scripted by `policy`; `observe`
 * sees the sandbox before the verifier runs. Returns the group record and what was sampled.
 */
async function runRollout(
  presetId: string,
  policy: ScriptedGeneratePolicy,
  observe?: (context: RewardContext) => Promise<void>,
) {
  const backend = await managedBackend({ policy });
  const env = createHarnessEnv({
    preset: presetId,
    bin: BIN,
    timeoutMs: 150_000,
    model: 'qwen3-policy',
    tasks: [TASK],
  });
  const observed: HarnessEnv = {
    ...env,
    async computeReward(item, rollout, context) {
      await observe?.(context);
      return env.computeReward(item, rollout, context);
    },
  };
  const sandboxes = createLocalSandboxProvider();
  try {
    const record = await runGroup({
      env: observed,
      item: (await env.nextItem())!,
      server: backend.server,
      sandboxes,
      groupSize: 1,
      allEqualScores: 'keep',
      retryBudget: 0,
    });
    return { record, generated: backend.generate.generated };
  } finally {
    await env.close?.();
    await sandboxes.close();
    await backend.close();
  }
}

/** The GRPO row: one sequence whose unmasked tokens and logprobs are exactly `completions` sampled completions. */
function expectExactRow(
  record: ScoredGroupRecord,
  generated: ManagedBackend['generate']['generated'],
  completions: number,
) {
  const data = scoredDataFromRecord(record);
  const tokens = data?.tokens[0] ?? [];
  const masks = data?.masks[0] ?? [];
  const logprobs = data?.inference_logprobs?.[0] ?? [];
  expect(record.rollouts[0]?.tokens?.splits).toBe(0);
  const sampled = entriesOf(tokens, generated);
  expect(sampled).toHaveLength(completions);
  expect(tokens.filter((_, index) => masks[index] !== -100)).toEqual(
    sampled.flatMap((entry) => entry.tokenIds),
  );
  expect(logprobs.filter((_, index) => masks[index] !== -100)).toEqual(
    sampled.flatMap((entry) => entry.logprobs),
  );
}

describe.each(Object.keys(TURNS))('the %s preset, run for real', (presetId) => {
  const preset = HARNESS_PRESETS[presetId]!;

  it('its own tools (two shell calls at once, read, edit, run) fix the task; reward 1; the GRPO row is exactly what was sampled', async () => {
    expect(existsSync(`${BIN}/${preset.command.split(' ')[0]}`), `${preset.package} is installed`).toBe(true);
    const turns = TURNS[presetId]!;
    const calls = turns.flat();
    let workdir = '';
    const policy: ScriptedGeneratePolicy = (request) => {
      // Side calls (titles, summaries, memory) do not offer the shell tool.
      if (!request.promptText.includes(`"name": "${preset.mainTool}"`)) return 'Fix greeting';
      workdir ||= /WORKDIR=(\/[^\s"'\\<]+)/.exec(request.promptText)?.[1] ?? '';
      // The tool results of one turn come back as one user turn in Qwen3's template.
      const turn = turns[request.promptText.split('<|im_start|>user\n<tool_response>').length - 1];
      if (!turn)
        return '<think>\nThe script prints the greeting now.\n</think>\n\ngreet.sh now prints the greeting.';
      const text = turn.map((call) => toolCallText(call.tool, call.args(workdir))).join('\n');
      return `<think>\nNext: ${turn.map((call) => call.tool).join(', ')}.\n</think>\n\n${text}`;
    };
    let onDisk = '';
    const { record, generated } = await runRollout(presetId, policy, async (context) => {
      onDisk = new TextDecoder().decode(await context.sandbox.readFile('greet.sh'));
    });
    expect(scoredGroupRecordSchema.parse(record)).toBeTruthy();
    const rollout = record.rollouts[0]!;
    const harness = (rollout.rewardDetails as { harness?: HarnessRunSummary } | undefined)?.harness;
    const context = `${rollout.outcome}: ${rollout.outcomeReason}\n${harness?.outputTail ?? ''}`;
    expect(rollout.outcome, context).toBe('scored');
    expect(onDisk, context).toBe(`#!/bin/sh\n${FIXED}\n`);
    expect(rollout.reward, context).toBe(1);
    expect(harness?.exitCode, context).toBe(0);

    // The trained thread is the main conversation, the one that offered the CLI's shell tool.
    const main = harness?.threads.find((thread) => thread.trained);
    expect(main?.toolNames).toContain(preset.mainTool);
    expect(main?.requests).toBe(turns.length + 1);
    expect(harness?.requests.every((request) => request.status === 'ok' || request.api === null)).toBe(true);
    // The trajectory is that thread: the CLI's own calls of its own tools, then the answer. Only
    // the edit tool can have fixed the file (the shell commands read and run it); the last
    // shell call's output, as the CLI reported it, is the fixed script's.
    expect(workdir).toMatch(/^\//);
    const made = rollout.messages.flatMap((message) => message.tool_calls ?? []);
    expect(made.map((call) => call.function.name)).toEqual(calls.map((call) => call.tool));
    expect(made.map((call) => JSON.parse(call.function.arguments))).toEqual(
      calls.map((call) => call.args(workdir)),
    );
    const outputs = rollout.messages.filter((message) => message.role === 'tool');
    expect(outputs).toHaveLength(calls.length);
    // The two calls of the first turn ran at once: a CLI may answer them in the order they ended.
    const firstTurn = outputs.slice(0, 2).map((output) => messageText(output));
    expect(firstTurn.some((text) => text.includes(BROKEN))).toBe(true);
    expect(firstTurn.some((text) => text.includes('greet.sh') && !text.includes('WORKDIR='))).toBe(true);
    expect(messageText(outputs.at(-1)!)).toContain(WANTED);
    expect(rollout.messages.at(-1)).toMatchObject({ role: 'assistant' });

    // The GRPO row: unmasked tokens and logprobs are exactly the sampled completions.
    expectExactRow(record, generated, turns.length + 1);
  }, 240_000);
});

/** How each CLI starts a sub-agent, and how the sub-agent's requests can be told apart. */
const SUB_TASK = 'Show greet.sh and the files next to it.';

/** How each CLI starts a sub-agent and waits for it, and how its requests can be told apart. */
const SUB_AGENTS: Record<
  string,
  {
    agentTurns: ToolCall[][];
    isSubAgent: (promptText: string) => boolean;
    shell: (command: string) => Record<string, unknown>;
  }
> = {
  // Claude Code marks its sub-agents' requests in the billing block of their system prompt.
  'claude-code': {
    agentTurns: [
      [
        {
          tool: 'Agent',
          args: () => ({ description: 'Inspect the script', prompt: SUB_TASK, subagent_type: 'claude' }),
        },
      ],
    ],
    isSubAgent: (promptText) => promptText.includes('cc_is_subagent=true'),
    shell: (command) => ({ command, description: 'Look' }),
  },
  // qwen-code's sub-agent has its own system prompt, and the task as its first user message.
  'qwen-code': {
    agentTurns: [
      [
        {
          tool: 'agent',
          args: () => ({
            description: 'Inspect the script',
            prompt: SUB_TASK,
            subagent_type: 'general-purpose',
          }),
        },
      ],
    ],
    isSubAgent: (promptText) => promptText.includes(`<|im_start|>user\n${SUB_TASK}<|im_end|>`),
    shell: (command) => ({ command, description: 'Look' }),
  },
  // opencode's task tool starts a sub-agent session with its own tools (no task tool).
  opencode: {
    agentTurns: [
      [
        {
          tool: 'task',
          args: () => ({ description: 'Inspect the script', prompt: SUB_TASK, subagent_type: 'general' }),
        },
      ],
    ],
    isSubAgent: (promptText) => promptText.includes(`<|im_start|>user\n${SUB_TASK}<|im_end|>`),
    shell: (command) => ({ command, description: 'Look' }),
  },
  // Codex spawns a sub-agent (a namespace tool: multi_agent_v1) and waits for it by its id; the
  // sub-agent's input ends with the task as a user message.
  codex: {
    agentTurns: [
      [{ tool: 'multi_agent_v1__spawn_agent', args: () => ({ message: SUB_TASK }) }],
      [
        {
          tool: 'multi_agent_v1__wait_agent',
          args: (_, agentId) => ({ targets: [agentId ?? ''], timeout_ms: 60_000 }),
        },
      ],
    ],
    isSubAgent: (promptText) => promptText.includes(`<|im_start|>user\n${SUB_TASK}<|im_end|>`),
    shell: (cmd) => ({ cmd }),
  },
};

describe.each(Object.keys(SUB_AGENTS))('the %s preset with a sub-agent, run for real', (presetId) => {
  it('the sub-agent (its own agent tool) is a thread of its own, not trained, even when it makes more requests than the main conversation; the main row is exact', async () => {
    const preset = HARNESS_PRESETS[presetId]!;
    const { agentTurns, isSubAgent, shell } = SUB_AGENTS[presetId]!;
    const subTurns = [LOOK, 'ls -la', 'wc -c greet.sh', 'head -1 greet.sh', 'tail -1 greet.sh'];
    const mainTurns: ToolCall[][] = [...agentTurns, ...TURNS[presetId]!.slice(1)];
    let workdir = '';
    let agentId = '';
    const policy: ScriptedGeneratePolicy = (request) => {
      if (!request.promptText.includes(`"name": "${preset.mainTool}"`)) return 'Fix greeting';
      const taken = request.promptText.split('<|im_start|>user\n<tool_response>').length - 1;
      // The sub-agent's first command prints the workspace's path for the main loop's edit.
      workdir ||= /WORKDIR=(\/[^\s"'\\<]+)/.exec(request.promptText)?.[1] ?? '';
      if (isSubAgent(request.promptText)) {
        const command = subTurns[taken];
        if (!command) return `<think>\nDone looking.\n</think>\n\ngreet.sh prints: ${BROKEN.slice(6, -1)}`;
        return toolCallText(preset.mainTool, shell(command));
      }
      agentId ||= /"agent_id": ?"([^"]+)"/.exec(request.promptText)?.[1] ?? '';
      const turn = mainTurns[taken];
      if (!turn) return '<think>\nFixed.\n</think>\n\ngreet.sh now prints the greeting.';
      return turn.map((call) => toolCallText(call.tool, call.args(workdir, agentId))).join('\n');
    };
    const { record, generated } = await runRollout(presetId, policy);
    const rollout = record.rollouts[0]!;
    const harness = (rollout.rewardDetails as { harness?: HarnessRunSummary } | undefined)?.harness;
    const context = `${rollout.outcome}: ${rollout.outcomeReason}\n${JSON.stringify(harness?.threads)}\n${harness?.outputTail ?? ''}`;
    expect(rollout.reward, context).toBe(1);
    const withShell = harness?.threads.filter((thread) => thread.toolNames.includes(preset.mainTool)) ?? [];
    expect(withShell.map((thread) => thread.requests).sort(), context).toEqual([
      mainTurns.length + 1,
      subTurns.length + 1,
    ]);
    const main = withShell.find((thread) => thread.trained);
    const sub = withShell.find((thread) => !thread.trained);
    expect(main?.requests, context).toBe(mainTurns.length + 1);
    expect(harness?.mainThread).toBe(main?.id);
    expect(sub?.requests, context).toBe(subTurns.length + 1);
    // The trajectory is the main conversation: the agent tool(s), then read, edit, shell; the
    // sub-agent's answer reaches it as a tool result.
    const made = rollout.messages.flatMap((message) => message.tool_calls ?? []);
    expect(made.map((call) => call.function.name)).toEqual(mainTurns.flat().map((call) => call.tool));
    const results = rollout.messages.filter((message) => message.role === 'tool').map(messageText);
    expect(results.some((text) => text.includes(BROKEN.slice(6, -1)))).toBe(true);
    expectExactRow(record, generated, mainTurns.length + 1);
  }, 240_000);
});
