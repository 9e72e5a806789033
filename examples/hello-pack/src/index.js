// shears-pack-hello: an example third-party plugin pack in plain JavaScript. Its default export
// is the manifest, so a config can name the package ("shears-pack-hello") and the registry loads
// it at run time. It offers a `hello` tool that writes a greeting into the rollout's sandbox, and
// a `hello` env whose reward checks that file.
import { definePlugin, definePluginEntry, defineTool } from '@shears/core';
import { z } from 'zod';

/** Writes `Hello, <name>!` into greeting.txt in the sandbox and returns it. */
export function createHelloTool(settings = {}) {
  const punctuation = typeof settings.punctuation === 'string' ? settings.punctuation : '!';
  return defineTool({
    name: 'hello',
    description: 'Greet someone by name; the greeting is also written to greeting.txt in the workspace.',
    inputSchema: z.object({ name: z.string().min(1).describe('Who to greet') }),
    async execute(args, context) {
      const greeting = `Hello, ${args.name}${punctuation}`;
      await context.sandbox.writeFile('greeting.txt', `${greeting}\n`);
      return greeting;
    },
  });
}

const NAMES = ['Ada', 'Grace', 'Alan', 'Barbara'];

/** A tiny env: greet the named person; rewarded when greeting.txt holds the right greeting. */
export function createHelloEnv(settings = {}) {
  const names = Array.isArray(settings.names) && settings.names.length > 0 ? settings.names : NAMES;
  const tool = createHelloTool();
  let next = Number.isInteger(settings.seed) && settings.seed > 0 ? settings.seed : 0;
  return {
    specificationVersion: 'v1',
    id: 'hello',
    async nextItem() {
      const name = names[next % names.length];
      next++;
      return { id: `hello-${next}`, prompt: `Greet ${name} with the hello tool, then say done.`, name };
    },
    buildMessages(item) {
      return [{ role: 'user', content: item.prompt }];
    },
    tools() {
      return [tool];
    },
    budget() {
      return { maxTurns: 4 };
    },
    // Optional hook for `shears process` with `server.provider: scripted` (no model, no key): a
    // scripted policy that plays these tasks. It greets the right name at the first attempt at each
    // task and the wrong one at the second (counted per task, not per request, so concurrent
    // rollouts get the same answers whatever order their requests arrive in).
    demoPolicy() {
      const attempts = new Map();
      return (request) => {
        const last = request.messages.at(-1);
        if (last?.role === 'tool') return { content: 'done' };
        const prompt = String(last?.content ?? '');
        const name = /Greet (\S+) with/.exec(prompt)?.[1] ?? 'nobody';
        const attempt = (attempts.get(prompt) ?? 0) + 1;
        attempts.set(prompt, attempt);
        return { toolCalls: [{ name: 'hello', arguments: { name: attempt % 2 === 1 ? name : 'Nobody' } }] };
      };
    },
    async computeReward(item, _rollout, context) {
      const result = await context.sandbox.exec('cat greeting.txt 2>/dev/null || true');
      const ok = result.stdout.trim() === `Hello, ${item.name}!`;
      return { score: ok ? 1 : 0, components: { greeting: ok ? 1 : 0 } };
    },
  };
}

/** The settings of the hello tool and env; the registry parses a config's settings with them. */
export const helloToolSettingsSchema = z.strictObject({
  punctuation: z.string().max(3).default('!').describe('What ends the greeting'),
});
export const helloEnvSettingsSchema = z.strictObject({
  names: z.array(z.string().min(1)).min(1).optional().describe('Who to greet, in turn'),
  seed: z.int().min(0).default(0).describe('Which name the first task greets'),
});

export default definePlugin({
  id: 'shears-pack-hello',
  description: 'Example pack: a greeting tool and env',
  tools: {
    hello: definePluginEntry({
      settings: helloToolSettingsSchema,
      create: (settings) => createHelloTool(settings),
      description: 'Greets someone and writes greeting.txt',
    }),
  },
  envs: {
    hello: definePluginEntry({
      settings: helloEnvSettingsSchema,
      create: (settings) => createHelloEnv(settings),
      description: 'Greet the named person',
    }),
  },
  // A toolset a config can name: `env.tools: [greetings]` adds the hello tool to any env, and
  // `env.toolsets.enabled: [greetings]` offers only it.
  toolsets: {
    greetings: { description: 'Greeting tools', tools: ['hello'] },
  },
});
