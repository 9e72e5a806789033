// The harness env's stand-in for a model: which task it plays, the shell call it makes in each
// preset's argument shape, what it answers requests without the shell tool, and the refusals.
// (Run for real with Qwen Code through `shears process`: packages/cli/src/harness-guides.e2e.test.ts.)
import { describe, expect, it } from 'vitest';
import { createHarnessDemoPolicy } from './harness-demo-policy.js';
import { createHarnessEnv } from './harness-env.js';

const tasks = [
  { id: 'fix', prompt: 'Fix greet.sh', solution: "sed -i 's/a/b/' greet.sh" },
  { id: 'fix-more', prompt: 'Fix greet.sh and more.sh', solution: 'true' },
];

const tool = (name: string, properties: Record<string, { type: string }>, required: string[]) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties, required } },
});

describe('the harness demo policy', () => {
  it("calls the shell tool with the solution of the task whose prompt is in the conversation, in the tool's own fields", () => {
    const qwen = createHarnessDemoPolicy({ tasks, mainTool: 'run_shell_command' });
    const shell = tool(
      'run_shell_command',
      { command: { type: 'string' }, description: { type: 'string' } },
      ['command'],
    );
    // The longest matching prompt wins: "Fix greet.sh" is inside the other task's prompt.
    expect(
      qwen({
        messages: [{ role: 'user', content: [{ type: 'text', text: 'ctx\nFix greet.sh and more.sh' }] }],
        tools: [shell],
      }),
    ).toEqual({ toolCalls: [{ name: 'run_shell_command', arguments: { command: 'true' } }] });
    const codex = createHarnessDemoPolicy({ tasks, mainTool: 'exec_command' });
    expect(
      codex({
        messages: [{ role: 'user', content: 'Fix greet.sh' }],
        tools: [
          tool('exec_command', { cmd: { type: 'string' }, workdir: { type: 'string' } }, ['cmd', 'workdir']),
        ],
      }),
    ).toEqual({
      toolCalls: [
        {
          name: 'exec_command',
          arguments: { cmd: "sed -i 's/a/b/' greet.sh", workdir: 'Run the fix for the task' },
        },
      ],
    });
  });

  it('answers done after the call, and plainly where the shell tool is not offered or no task matches', () => {
    const policy = createHarnessDemoPolicy({ tasks, mainTool: 'Bash' });
    const shell = tool('Bash', { command: { type: 'string' } }, ['command']);
    expect(
      policy({
        messages: [
          { role: 'user', content: 'Fix greet.sh' },
          { role: 'assistant', content: null, tool_calls: [{ id: '1' }] },
          { role: 'tool', content: '' },
        ],
        tools: [shell],
      }),
    ).toEqual({ content: 'Done: ran the fix for fix.' });
    expect(policy({ messages: [{ role: 'user', content: 'Fix greet.sh' }] })).toEqual({ content: 'OK.' });
    expect(policy({ messages: [{ role: 'user', content: 'Something else' }], tools: [shell] })).toEqual({
      content: expect.stringContaining("no task's prompt is in this conversation; tasks: fix, fix-more"),
    });
  });

  it('refuses tasks without a solution, naming them, and a harness without a shell tool', () => {
    expect(() =>
      createHarnessDemoPolicy({ tasks: [{ id: 'bare', prompt: 'p' }, ...tasks], mainTool: 'Bash' }),
    ).toThrow(/task\(s\) "bare" have none: add one, or use a model server/);
    expect(() => createHarnessDemoPolicy({ tasks, mainTool: undefined })).toThrow(/set "mainTool"/);
  });

  it("is the harness env's demoPolicy: the bundled task carries its solution", async () => {
    const env = createHarnessEnv({ preset: 'qwen-code' });
    const policy = env.demoPolicy();
    const reply = policy({
      messages: [{ role: 'user', content: (await env.evalItems!())[0]!.prompt }],
      tools: [tool('run_shell_command', { command: { type: 'string' } }, ['command'])],
    });
    expect(reply).toEqual({
      toolCalls: [{ name: 'run_shell_command', arguments: { command: "sed -i 's/wrold/world/' greet.sh" } }],
    });
    await env.close?.();
  });
});
