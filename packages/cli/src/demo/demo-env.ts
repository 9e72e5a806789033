// The bundled demo environment: eight small shell/file tasks, each checked by its verifier in
// the rollout's own sandbox. Full marks for a passing verifier, a little for leaving the target
// file behind, nothing otherwise, so group advantages are informative.
import type { EnvItem, EnvV1, RewardResult, SandboxSpec, ToolV1 } from '@shears/core';
import { DEMO_TASKS, type DemoTask } from './demo-tasks.js';

export interface DemoItem extends EnvItem {
  setup: string[];
  verify: string;
  target: string;
}

export interface DemoEnvSettings {
  /** Where to start in the task list (the demo cycles through it). */
  seed?: number;
  /** The tools offered (normally the `terminal` tool from @shears/tools-terminal). */
  tools: ToolV1[];
  tasks?: readonly DemoTask[];
  /** Only these task ids. */
  only?: readonly string[];
}

export const DEMO_SYSTEM_PROMPT =
  'You are a careful shell assistant. Use the terminal tool to run commands in the current directory. When the task is done, reply with a short summary and no tool call.';

function toItem(task: DemoTask): DemoItem {
  return { id: task.id, prompt: task.prompt, setup: task.setup, verify: task.verify, target: task.target };
}

export function createDemoEnv(settings: DemoEnvSettings): EnvV1<DemoItem> {
  const tasks = (settings.tasks ?? DEMO_TASKS).filter(
    (task) => !settings.only || settings.only.includes(task.id),
  );
  const seed = settings.seed ?? 0;
  let cursor = ((seed % tasks.length) + tasks.length) % tasks.length;
  return {
    specificationVersion: 'v1',
    id: 'demo',
    async nextItem() {
      const task = tasks[cursor % tasks.length];
      cursor++;
      return task ? toItem(task) : null;
    },
    buildMessages(item) {
      return [
        { role: 'system', content: DEMO_SYSTEM_PROMPT },
        { role: 'user', content: item.prompt },
      ];
    },
    tools() {
      return settings.tools;
    },
    sandboxSpec(item): SandboxSpec {
      return { setup: item.setup, labels: { 'shears.env': 'demo', 'shears.task': item.id } };
    },
    async computeReward(item, _rollout, context): Promise<RewardResult> {
      const verified = await context.sandbox.exec(item.verify, { timeoutMs: 10_000, signal: context.signal });
      if (verified.exitCode === 0) {
        return {
          score: 1,
          // The verifier passed: solved, whatever a judge blended into the score makes of it.
          success: true,
          components: { verified: 1, target_exists: 1 },
          details: { verifier: item.verify },
        };
      }
      const exists = await context.sandbox.exec(`test -e '${item.target}'`, {
        timeoutMs: 10_000,
        signal: context.signal,
      });
      const partial = exists.exitCode === 0 ? 0.2 : 0;
      return {
        score: partial,
        success: false,
        components: { verified: 0, target_exists: exists.exitCode === 0 ? 1 : 0 },
        details: { verifier: item.verify, verifierOutput: verified.output.slice(0, 2000) },
      };
    },
    async evalItems() {
      return tasks.map(toItem);
    },
  };
}
