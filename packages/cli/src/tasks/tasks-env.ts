// The generic `tasks` env: tasks from a JSON/JSONL file (see tasks-file.ts), so a user trains
// and evaluates on their own tasks without writing code. Each rollout gets a fresh sandbox with
// the task's set-up commands run; the verifier runs in that same sandbox after the agent stops.
// A task's `rubric` goes to the configured judge as its reference (the CLI refuses a file with
// rubrics when no judge is configured, rather than dropping them).
import type { EnvItem, EnvV1, RewardResult, SandboxSpec, ToolV1 } from '@shears/core';
import { EnvError } from '@shears/core';
import type { FileTask } from './tasks-file.js';

export interface TaskItem extends EnvItem {
  system?: string;
  setup: string[];
  verify: FileTask['verify'];
  /** The rubric, as the judge's reference. */
  reference?: string;
  difficulty?: number | string;
  tools?: string[];
}

export const TASKS_SYSTEM_PROMPT =
  'You are a careful assistant working in a sandbox. Use the tools to do the task. When it is done, reply with a short summary and no tool call.';

export interface TasksEnvSettings {
  tasks: readonly FileTask[];
  /** Tools by registry name: every name a task or the default list uses. */
  tools: ReadonlyMap<string, ToolV1[]>;
  /** Tool names offered to a task that names none. */
  defaultTools: readonly string[];
  system?: string;
  seed?: number;
  /** Draw tasks in a seeded random order instead of file order. */
  shuffle?: boolean;
}

function toItem(task: FileTask): TaskItem {
  return {
    id: task.id,
    prompt: task.prompt,
    setup: task.setup,
    ...(task.system ? { system: task.system } : {}),
    verify: task.verify,
    ...(task.rubric ? { reference: task.rubric } : {}),
    ...(task.difficulty !== undefined ? { difficulty: task.difficulty } : {}),
    ...(task.tools ? { tools: task.tools } : {}),
  };
}

/** The last non-empty line of a verifier's output as a reward in [0, 1], or why it is not one. */
export function rewardFromOutput(output: string): number | string {
  const last = output
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .at(-1);
  if (last === undefined) return 'it printed nothing';
  const value = Number(last);
  if (!Number.isFinite(value) || !/^[-+.\d eE]+$/.test(last))
    return `its last line is not a number: ${JSON.stringify(last.slice(0, 200))}`;
  if (value < 0 || value > 1) return `its last line ${last} is outside [0, 1]`;
  return value;
}

function mulberry(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

export function createTasksEnv(
  settings: TasksEnvSettings,
): EnvV1<TaskItem> & { rubricTasks(): string[] } {
  const order = settings.tasks.map((_, index) => index);
  const seed = settings.seed ?? 0;
  if (settings.shuffle) {
    const random = mulberry(seed);
    for (let index = order.length - 1; index > 0; index--) {
      const other = Math.floor(random() * (index + 1));
      [order[index], order[other]] = [order[other]!, order[index]!];
    }
  }
  let cursor = settings.shuffle ? 0 : ((seed % order.length) + order.length) % order.length;
  const toolsFor = (names: readonly string[]) => names.flatMap((name) => settings.tools.get(name) ?? []);
  return {
    specificationVersion: 'v1',
    id: 'tasks',
    async nextItem() {
      const task = settings.tasks[order[cursor % order.length]!];
      cursor++;
      return task ? toItem(task) : null;
    },
    buildMessages(item) {
      return [
        { role: 'system', content: item.system ?? settings.system ?? TASKS_SYSTEM_PROMPT },
        { role: 'user', content: item.prompt },
      ];
    },
    tools(item) {
      return toolsFor(item.tools ?? settings.defaultTools);
    },
    sandboxSpec(item): SandboxSpec {
      return { setup: item.setup, labels: { 'shears.env': 'tasks', 'shears.task': item.id } };
    },
    async computeReward(item, _rollout, context): Promise<RewardResult> {
      const verified = await context.sandbox.exec(item.verify.command, {
        timeoutMs: item.verify.timeout_ms,
        signal: context.signal,
      });
      const output = verified.output.slice(-2000);
      if (verified.timedOut)
        throw new EnvError({
          envId: 'tasks',
          message: `task "${item.id}": the verifier ran past its ${item.verify.timeout_ms} ms (verify.timeout_ms)`,
        });
      if (item.verify.reward === 'exit_code') {
        const passed = verified.exitCode === 0;
        return {
          score: passed ? 1 : 0,
          success: passed,
          components: { verified: passed ? 1 : 0 },
          details: { verifier: item.verify.command, exitCode: verified.exitCode, verifierOutput: output },
        };
      }
      const reward = rewardFromOutput(verified.output);
      if (typeof reward === 'string')
        throw new EnvError({
          envId: 'tasks',
          message: `task "${item.id}": the verifier's output is not a reward (verify.reward "output" wants a number in [0, 1] on its last line): ${reward}`,
        });
      return {
        score: reward,
        success: reward >= 1,
        components: { verified: reward },
        details: { verifier: item.verify.command, exitCode: verified.exitCode, verifierOutput: output },
      };
    },
    async evalItems() {
      return settings.tasks.map(toItem);
    },
    /** Where the tasks with a judge rubric are (the CLI refuses them without a judge). */
    rubricTasks() {
      return settings.tasks.filter((task) => task.rubric).map((task) => task.where);
    },
  };
}
