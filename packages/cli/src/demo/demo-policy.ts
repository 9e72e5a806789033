// The scripted demo policy: a stand-in for a model behind the scripted OpenAI-compatible server.
// It recognises a demo task from the user message, picks a plan (solve, explore then solve,
// mistype a tool name then solve, make a plausible mistake, give up) deterministically from the
// seed, and issues real `terminal` tool calls, so groups get different rewards. The plan is
// carried in the tool-call ids, which every OpenAI-compatible client echoes back.
import { safeParseJson } from '@shears/core';
import type { ScriptedChatRequest, ScriptedReply } from '@shears/core/scripted';
import { DEMO_TASKS, type DemoTask } from './demo-tasks.js';

export type DemoPlan = 'solve' | 'explore' | 'typo' | 'mistake' | 'give_up';

const PLAN_WEIGHTS: ReadonlyArray<readonly [DemoPlan, number]> = [
  ['solve', 0.35],
  ['explore', 0.15],
  ['typo', 0.1],
  ['mistake', 0.25],
  ['give_up', 0.15],
];

export interface DemoPolicyOptions {
  seed?: number;
  tasks?: readonly DemoTask[];
}

type DemoPolicy = (request: ScriptedChatRequest) => ScriptedReply;

/** A number in [0, 1) from a string, stable across runs (FNV-1a with a final mix). */
function hashUnit(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  // FNV alone barely moves the high bits when only the last character differs; mix them.
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) / 0x1_0000_0000;
}

export function pickPlan(seed: number, taskId: string, attempt: number): DemoPlan {
  const roll = hashUnit(`${seed}:${taskId}:${attempt}`);
  let total = 0;
  for (const [plan, weight] of PLAN_WEIGHTS) {
    total += weight;
    if (roll < total) return plan;
  }
  return 'solve';
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) => (part && typeof part === 'object' && 'text' in part ? String(part.text) : ''))
      .join('');
  return '';
}

/** The `output` of a terminal tool result (hermes-style JSON), or the raw text. */
function toolOutput(content: string): string {
  const parsed = safeParseJson(content, { source: 'terminal result' });
  if (parsed.success && parsed.value && typeof parsed.value === 'object' && 'output' in parsed.value) {
    return String((parsed.value as { output: unknown }).output ?? '').trim();
  }
  return content.trim();
}

function commandsFor(plan: DemoPlan, task: DemoTask): string[] {
  switch (plan) {
    case 'solve':
    case 'typo':
      return task.solution;
    case 'explore':
      return ['ls -la', ...task.solution];
    case 'mistake':
      return task.mistake;
    case 'give_up':
      return [];
  }
}

export function createDemoPolicy(options: DemoPolicyOptions = {}): DemoPolicy {
  const seed = options.seed ?? 0;
  const tasks = options.tasks ?? DEMO_TASKS;
  const attempts = new Map<string, number>();
  return (request) => {
    const messages = request.messages ?? [];
    const userText = messages
      .filter((message) => message.role === 'user')
      .map((message) => textOf(message.content))
      .join('\n');
    const task = tasks.find((candidate) => userText.includes(candidate.prompt));
    if (!task) return { content: 'I only know the shears demo tasks, and this is not one of them.' };

    const assistantMessages = messages.filter((message) => message.role === 'assistant');
    const firstCallId =
      (assistantMessages[0]?.tool_calls as Array<{ id?: string }> | undefined)?.[0]?.id ?? '';
    let plan = /^call_([a-z_]+?)_\d+_/.exec(firstCallId)?.[1] as DemoPlan | undefined;
    if (!plan) {
      if (assistantMessages.length > 0) return { content: 'Done.' };
      const attempt = attempts.get(task.id) ?? 0;
      attempts.set(task.id, attempt + 1);
      plan = pickPlan(seed, task.id, attempt);
    }
    const nonce = hashUnit(
      `${seed}:${task.id}:${assistantMessages.length}:${JSON.stringify(messages).length}`,
    )
      .toString(36)
      .slice(2, 8);
    const callId = (turn: number) => `call_${plan}_${turn}_${nonce}`;
    const turn = assistantMessages.length;

    if (plan === 'give_up') {
      return { reasoning: 'This looks hard; I will not try.', content: 'Sorry, I cannot do that task.' };
    }
    if (plan === 'typo' && turn === 0) {
      return {
        reasoning: `I need a shell for "${task.id}".`,
        toolCalls: [{ id: callId(0), name: 'terminl', arguments: { command: task.solution[0] } }],
      };
    }
    const commands = commandsFor(plan, task);
    const offset = plan === 'typo' ? 1 : 0;
    const index = turn - offset;
    if (index >= commands.length) {
      return { reasoning: 'The file is in place.', content: `Done: ${task.target} is ready.` };
    }
    const lastTool = [...messages].reverse().find((message) => message.role === 'tool');
    const last = lastTool ? (toolOutput(textOf(lastTool.content)).split('\n')[0] ?? '') : '';
    const command = commands[index]!.replaceAll('{{last}}', last.replace(/[^A-Za-z0-9._/-]/g, ''));
    return {
      reasoning: index === 0 ? `Plan: ${commands.length} command(s) for "${task.id}".` : `Next: ${command}`,
      toolCalls: [{ id: callId(turn), name: 'terminal', arguments: { command } }],
    };
  };
}
