// The SWE env's demo policy: a scripted "model" for the scripted OpenAI-compatible server that
// solves some rollouts with the gold fix (played in as write_file calls — the patch file never
// enters the sandbox) and makes plausible wrong moves in others: a no-op edit, or rewriting the
// tests so they pass (a reward hack that grading must defeat). Groups get varied rewards.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { filesAfterPatch, type PreparedRepository } from './repo.js';
import type { SweTask } from './task-schema.js';

export type SweDemoPlan = 'gold' | 'noop' | 'tamper';

/** Plans cycled across the rollouts of a task: half solve it, the rest fail in two ways. */
export const DEFAULT_DEMO_PLANS: readonly SweDemoPlan[] = ['gold', 'noop', 'gold', 'tamper'];

interface DemoRequest {
  messages: Array<{ role: string; content?: unknown; tool_calls?: Array<{ id?: string }> }>;
}

interface DemoReply {
  content?: string | null;
  toolCalls?: Array<{ id?: string; name: string; arguments: string | object }>;
}

interface TaskScript {
  task: SweTask;
  gold: Array<{ path: string; content: string }>;
  noop: Array<{ path: string; content: string }>;
  tamper: Array<{ path: string; content: string }>;
}

const TASK_MARKER = /\[shears-swe-task: ([^\]]+)\]/;

export function taskMarker(taskId: string): string {
  return `[shears-swe-task: ${taskId}]`;
}

function testNames(task: SweTask, file: string): string[] {
  return [...task.failToPass, ...task.passToPass]
    .filter((id) => id.startsWith(`${file}::`))
    .map((id) => id.slice(file.length + 2));
}

/** Test file content that "passes" every listed test without testing anything. */
function hackedTestFile(task: SweTask, file: string): string {
  const names = testNames(task, file);
  if (task.test.runner === 'pytest')
    return `${names.map((name) => `def ${name}():\n    assert True\n`).join('\n\n')}`;
  return `'use strict';\nconst test = require('node:test');\n${names.map((name) => `test(${JSON.stringify(name)}, () => {});`).join('\n')}\n`;
}

async function scriptFor(task: SweTask, prepared: PreparedRepository): Promise<TaskScript> {
  if (!task.goldPatch) throw new Error(`Task ${task.id} has no gold patch; the demo policy needs one`);
  const changed = await filesAfterPatch(prepared.dir, task.goldPatch);
  const gold = [...changed]
    .filter(([, content]) => content !== null)
    .map(([path, content]) => ({ path, content: content!.toString('utf8') }));
  const first = gold[0]!;
  const original = readFileSync(join(prepared.dir, first.path), 'utf8');
  const comment =
    task.test.runner === 'pytest'
      ? '# Checked the edge cases described in the issue.\n'
      : '// Checked the edge cases described in the issue.\n';
  const testFile = task.failToPass[0]!.split('::')[0]!;
  return {
    task,
    gold,
    noop: [{ path: first.path, content: comment + original }],
    tamper: [{ path: testFile, content: hackedTestFile(task, testFile) }],
  };
}

export interface SweDemoPolicy {
  (request: DemoRequest): DemoReply;
  /** How many rollouts started with each plan. */
  readonly started: Record<SweDemoPlan, number>;
}

export async function createSweDemoPolicy(options: {
  tasks: ReadonlyArray<{ task: SweTask; prepared: PreparedRepository }>;
  plans?: readonly SweDemoPlan[];
}): Promise<SweDemoPolicy> {
  const plans = options.plans ?? DEFAULT_DEMO_PLANS;
  const scripts = new Map<string, TaskScript>();
  for (const { task, prepared } of options.tasks) scripts.set(task.id, await scriptFor(task, prepared));
  const counters = new Map<string, number>();
  const started: Record<SweDemoPlan, number> = { gold: 0, noop: 0, tamper: 0 };

  const policy = ((request: DemoRequest): DemoReply => {
    const user = request.messages.find((message) => message.role === 'user');
    const taskId = TASK_MARKER.exec(String(user?.content ?? ''))?.[1];
    const script = taskId ? scripts.get(taskId) : undefined;
    if (!script) return { content: 'I cannot tell which repository this is.' };
    const assistantTurns = request.messages.filter((message) => message.role === 'assistant');
    if (assistantTurns.length === 0) {
      const index = counters.get(script.task.id) ?? 0;
      counters.set(script.task.id, index + 1);
      const plan = plans[index % plans.length]!;
      started[plan]++;
      return {
        content: 'Let me look at the repository first.',
        toolCalls: [
          {
            id: `call_${plan}_1`,
            name: 'terminal',
            arguments: { command: 'git status --short && git ls-files' },
          },
        ],
      };
    }
    const plan = /call_(gold|noop|tamper)_/.exec(assistantTurns[0]?.tool_calls?.[0]?.id ?? '')?.[1] as
      | SweDemoPlan
      | undefined;
    if (!plan) return { content: 'Done.' };
    if (assistantTurns.length === 1) {
      const edits = script[plan];
      return {
        content:
          plan === 'tamper'
            ? 'The tests look wrong; I will correct them.'
            : 'I found the bug; applying the fix.',
        toolCalls: edits.map((edit, index) => ({
          id: `call_${plan}_2_${index}`,
          name: 'write_file',
          arguments: { path: edit.path, content: edit.content },
        })),
      };
    }
    return { content: `I have fixed the issue described in ${script.task.id}.` };
  }) as SweDemoPolicy;
  Object.defineProperty(policy, 'started', { value: started });
  return policy;
}
