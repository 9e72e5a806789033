// shears-pack-answers: a third-party env pack written in TypeScript in the low-level form
// (EnvV1, definePlugin; docs/write-an-env.md section 6). `scripts/registry-check.ts` installs the
// shears packages by name from a local registry into a project outside the workspace, compiles
// this pack there with strict type checking (skipLibCheck: false), runs the Env conformance suite
// on it and runs `shears process` and `shears evaluate` with it.
import {
  definePlugin,
  definePluginEntry,
  defineTool,
  type EnvItem,
  type EnvV1,
  type RewardResult,
  type ToolV1,
} from '@shears/core';
import type { ScriptedChatRequest, ScriptedReply } from '@shears/core/scripted';
import { z } from 'zod';

export interface AnswerItem extends EnvItem {
  /** The number the model must write into answer.txt. */
  expected: number;
}

/** `write_answer`: writes a number into answer.txt in the rollout's sandbox. */
export function createWriteAnswerTool(): ToolV1<{ value: number }> {
  return defineTool({
    name: 'write_answer',
    description: 'Write your final answer (a whole number) into answer.txt.',
    inputSchema: z.object({ value: z.number().int().describe('The answer') }),
    toolset: 'answers',
    async execute(args, context) {
      await context.sandbox.writeFile('answer.txt', `${args.value}\n`);
      return `wrote ${args.value} to answer.txt`;
    },
  });
}

/** The env's settings; the registry parses a config's `env.settings` with it before `create`. */
export const answersSettingsSchema = z.strictObject({
  seed: z.int().default(0),
  count: z.int().min(1).max(100).default(4),
});

/** Sums of two numbers; the reward reads answer.txt in the same sandbox the agent used. */
export function createAnswersEnv(raw: Record<string, unknown> = {}): EnvV1<AnswerItem> {
  const settings = answersSettingsSchema.parse(raw);
  const items: AnswerItem[] = Array.from({ length: settings.count }, (_, index) => {
    const a = index + 2 + settings.seed;
    const b = index * 3 + 1;
    return {
      id: `sum-${a}-${b}`,
      prompt: `What is ${a} + ${b}? Answer with the write_answer tool.`,
      expected: a + b,
    };
  });
  const tool = createWriteAnswerTool();
  let cursor = 0;
  return {
    specificationVersion: 'v1',
    id: 'answers',
    async nextItem() {
      return items[cursor++ % items.length] ?? null;
    },
    buildMessages(item) {
      return [{ role: 'user', content: item.prompt }];
    },
    tools() {
      return [tool];
    },
    budget() {
      return { maxTurns: 3 };
    },
    async computeReward(item, _rollout, context): Promise<RewardResult> {
      const result = await context.sandbox.exec('cat answer.txt 2>/dev/null || true', {
        signal: context.signal,
      });
      const correct = result.stdout.trim() === String(item.expected);
      return { score: correct ? 1 : 0, components: { correct: correct ? 1 : 0 } };
    },
    async evalItems() {
      return items;
    },
  };
}

/**
 * The demo-policy hook: with `server.provider: scripted`, this plays the env. It answers each
 * question right at its first attempt and wrong at its second (and so on), counted per question,
 * so every group of two holds one of each whatever order the rollouts' requests arrive in.
 */
export function answersDemoPolicy(): (request: ScriptedChatRequest) => ScriptedReply {
  const attempts = new Map<string, number>();
  return (request) => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') return { content: 'Done.' };
    const question = String(last?.content ?? '');
    const [a = 0, b = 0] = (/What is (\d+) \+ (\d+)/.exec(question) ?? []).slice(1).map(Number);
    const attempt = (attempts.get(question) ?? 0) + 1;
    attempts.set(question, attempt);
    return {
      toolCalls: [{ name: 'write_answer', arguments: { value: attempt % 2 === 1 ? a + b : a + b + 1 } }],
    };
  };
}

export default definePlugin({
  id: 'shears-pack-answers',
  description: 'Sums written into answer.txt (a TypeScript example pack)',
  envs: {
    answers: definePluginEntry({
      description: 'Add two numbers; the answer is checked in the sandbox',
      settings: answersSettingsSchema,
      create: (settings) => Object.assign(createAnswersEnv(settings), { demoPolicy: answersDemoPolicy }),
    }),
  },
  tools: { write_answer: { create: () => createWriteAnswerTool(), description: 'Write the answer' } },
  toolsets: { answers: { description: 'Answer tools', tools: ['write_answer'] } },
});
