// The kernel runs its own conformance suites on small real implementations.
import { z } from 'zod';
import { defineTool } from '../contracts/tool.js';
import { describeBudgetConformance } from './budget-conformance.js';
import { describeEnvConformance } from './env-conformance.js';
import { describeToolConformance } from './tool-conformance.js';

const shellEcho = defineTool({
  name: 'shell_echo',
  description: 'Echo text through bash in the sandbox',
  inputSchema: z.object({ text: z.string().min(1), times: z.number().int().positive().default(1) }),
  async execute(args, context) {
    const result = await context.sandbox.exec(
      `for i in $(seq ${args.times}); do printf '%s\\n' "$TEXT"; done`,
      {
        env: { TEXT: args.text },
        signal: context.signal,
      },
    );
    return { content: result.output, isError: result.exitCode !== 0 };
  },
});

describeToolConformance({
  tool: shellEcho,
  validArguments: [{ text: 'hello' }, { text: 'twice', times: 2 }],
  invalidArguments: [{}, { text: '' }, { text: 'x', times: 0 }],
});

describeEnvConformance({
  name: 'echo env',
  create: () => {
    let served = 0;
    return {
      specificationVersion: 'v1',
      id: 'echo-env',
      async nextItem() {
        served++;
        return { id: `echo-${served}`, prompt: 'Echo the word ready with shell_echo, then answer done.' };
      },
      buildMessages: (item) => [
        { role: 'system', content: 'You are a careful agent.' },
        { role: 'user', content: item.prompt },
      ],
      tools: () => [shellEcho],
      budget: () => ({ maxTurns: 4 }),
      async computeReward(_item, rollout, context) {
        const probe = await context.callTool('shell_echo', { text: 'probe' });
        return {
          score: rollout.finalResponse === 'done' ? 1 : 0,
          components: { probe: probe.trim() === 'probe' ? 1 : 0 },
        };
      },
    };
  },
  policy: (request) =>
    request.messages.at(-1)?.role === 'tool'
      ? { content: 'done' }
      : { toolCalls: [{ name: 'shell_echo', arguments: { text: 'ready' } }] },
});

describeBudgetConformance({ name: 'hermes defaults', budget: {} });
describeBudgetConformance({
  name: 'a small custom budget (read_file override ignored)',
  budget: {
    maxTurns: 4,
    maxTokens: 300,
    wallClockMs: 500,
    defaultResultSize: 2_000,
    turnBudget: 3_000,
    previewSize: 200,
    toolOverrides: { read_file: 10, emit: 2_000 },
  },
});
