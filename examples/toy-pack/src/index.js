// shears-pack-toy: the toy env of the reference trainer's learning test. Each task asks for one
// tool call whose argument comes from the prompt ("Save the word kemo." → save({word: "kemo"}));
// the `save` tool writes the word into the rollout's sandbox and the verifier reads it back from
// there; after the tool's answer the model ends with a short reply ("done"). Plain JavaScript, like shears-pack-hello.
import { definePlugin, definePluginEntry, defineTool, InvalidArgumentError } from '@shears/core';
import { z } from 'zod';

// Each word is one token of the toy model's vocabulary (trainers/shears_trainer/toy.py holds the
// same list): the task is to copy it from the prompt into the call.
export const TOY_WORDS = (
  'bamo bebu bisu buro dapo dedu desu dudi dure fifo fudu keve kota kuni kuze lapa ' +
  'lema lera liro masa mazu numi nuni rape rare roda sibo soko tedu toku vuri zeko'
).split(' ');

/** The scripted demonstrator's mistake (`demo_decoy_rate`): it saves this word instead. */
export const DECOY_WORD = 'zeko';

/** mulberry32: a small seeded generator, so a seed gives the same tasks everywhere. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function toyWord(next) {
  return TOY_WORDS[Math.floor(next() * TOY_WORDS.length)];
}

export function toyPrompt(word) {
  return `Save the word ${word}.`;
}

/** The `save` tool: writes the word to saved.txt in the rollout's sandbox. */
export function createSaveTool() {
  return defineTool({
    name: 'save',
    description: 'Save a word; it is written to saved.txt in the workspace.',
    inputSchema: z.object({ word: z.string().min(1).max(64).describe('The word to save') }),
    async execute(args, context) {
      await context.sandbox.writeFile('saved.txt', args.word);
      return `saved ${args.word}`;
    },
  });
}

/** The toy env's settings (the registry parses `env.settings` with this before `create`). */
export const toySettingsSchema = z.strictObject({
  seed: z.int().default(0),
  eval_items: z.int().min(1).max(10_000).default(64),
  // The share of first turns where demoPolicy (the scripted demonstrator) saves DECOY_WORD
  // instead of the prompt's word: the learning test's warm-up imitates such a demonstrator, and
  // GRPO then unlearns its mistake. 0: always right.
  demo_decoy_rate: z.number().min(0).max(1).default(0),
});

export function createToyEnv(raw = {}) {
  const parsed = toySettingsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = issue.code === 'unrecognized_keys' ? issue.keys[0] : issue.path.join('.');
    throw new InvalidArgumentError({
      argument: key,
      value: raw[key],
      message: `The toy env setting "${key}": ${issue.message} (settings: seed, eval_items, demo_decoy_rate)`,
    });
  }
  const settings = parsed.data;
  const tool = createSaveTool();
  const next = random(settings.seed);
  const demoNext = random(settings.seed + 7);
  let count = 0;
  return {
    specificationVersion: 'v1',
    id: 'toy-save',
    async nextItem() {
      count++;
      const word = toyWord(next);
      return { id: `toy-${settings.seed}-${count}`, prompt: toyPrompt(word), word };
    },
    buildMessages(item) {
      return [{ role: 'user', content: item.prompt }];
    },
    tools() {
      return [tool];
    },
    // Two turns: the call, then a short final answer once the tool has answered.
    budget() {
      return { maxTurns: 2 };
    },
    sandboxSpec(item) {
      return { labels: { 'shears.env': 'toy-save', 'shears.task': item.id } };
    },
    // For `shears process` with the scripted server: a policy that answers correctly (but for the
    // share `demo_decoy_rate` of first turns, where it saves DECOY_WORD), so its rollouts are the
    // SFT warm-up data (through shears' SFT export).
    demoPolicy() {
      return (request) => {
        const last = request.messages.at(-1);
        if (last?.role === 'tool') return { content: 'done' };
        const word = /^Save the word (\S+)\.$/.exec(String(last?.content ?? ''))?.[1] ?? '';
        const decoy = settings.demo_decoy_rate > 0 && demoNext() < settings.demo_decoy_rate;
        return { toolCalls: [{ name: 'save', arguments: { word: decoy ? DECOY_WORD : word } }] };
      };
    },
    async computeReward(item, _rollout, context) {
      // The verifier runs in the rollout's own sandbox: what the call actually saved.
      const result = await context.sandbox.exec('cat saved.txt 2>/dev/null', {
        timeoutMs: 10_000,
        signal: context.signal,
      });
      const saved = result.exitCode === 0 ? result.output : null;
      const correct = saved === item.word;
      return {
        score: correct ? 1 : saved === null ? 0 : 0.1,
        success: correct,
        components: { called: saved === null ? 0 : 1, correct: correct ? 1 : 0 },
      };
    },
    async evalItems() {
      const evalNext = random(1_000_003 + settings.seed);
      return Array.from({ length: settings.eval_items }, (_, index) => {
        const word = toyWord(evalNext);
        return { id: `toy-eval-${index}`, prompt: toyPrompt(word), word };
      });
    },
  };
}

export default definePlugin({
  id: 'shears-pack-toy',
  description: 'The toy env of the reference trainer: one save call with the word from the prompt',
  tools: {
    save: definePluginEntry({
      settings: z.strictObject({}),
      create: () => createSaveTool(),
      description: 'Writes a word to saved.txt',
    }),
  },
  envs: {
    'toy-save': definePluginEntry({
      settings: toySettingsSchema,
      create: (settings) => createToyEnv(settings),
      description: 'Call save with the word from the prompt (a tiny model learns it in minutes)',
    }),
  },
});
