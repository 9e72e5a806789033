// Conformance suite for the Budget contract: a budget (the defaults, an env's, a config's) is
// well-formed, and the kernel's agent loop honours every limit it sets when run against the
// scripted OpenAI-compatible server in a real temp-dir sandbox: turns, tokens, wall clock,
// per-result persistence with the exact preview size, and the per-turn total.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runAgent } from '../agent-loop.js';
import { type BudgetV1, createBudget } from '../contracts/budget.js';
import type { SandboxV1 } from '../contracts/sandbox.js';
import { defineTool } from '../contracts/tool.js';
import { PERSISTED_OUTPUT_TAG, resolveResultThreshold } from '../tool-result-budget.js';
import { createScriptedServer, type ScriptedServer } from './scripted-server.js';
import { createScriptedServerClient } from './scripted-server-client.js';
import { createTempSandboxProvider } from './temp-sandbox-provider.js';

export interface BudgetConformanceOptions {
  name: string;
  /** The budget under test: a whole BudgetV1 or overrides of the defaults. */
  budget: Partial<BudgetV1>;
}

/** Sizes above this are checked for well-formedness only (a test would allocate too much). */
const MAX_EXERCISED_CHARS = 4_000_000;
/** Turn limits above this are checked for well-formedness only. */
const MAX_EXERCISED_TURNS = 200;

const prompt = [
  { role: 'system' as const, content: 'You are a budget conformance agent.' },
  { role: 'user' as const, content: 'Keep calling tools.' },
];

/** Registers the test only where the budget sets the limit (no skipped tests for absent limits). */
function itWhen(condition: boolean): typeof it | ((...args: unknown[]) => void) {
  return condition ? it : () => undefined;
}

export function describeBudgetConformance(options: BudgetConformanceOptions): void {
  const budget = createBudget(options.budget);
  const provider = createTempSandboxProvider();
  let sandbox: SandboxV1;
  let server: ScriptedServer | undefined;

  describe(`budget conformance: ${options.name}`, () => {
    beforeAll(async () => {
      sandbox = await provider.acquire();
    });
    afterAll(async () => {
      await server?.close();
      await provider.close();
    });

    async function scripted(policy: Parameters<typeof createScriptedServer>[0]) {
      await server?.close();
      server = await createScriptedServer(policy);
      return createScriptedServerClient({
        baseUrl: server.url,
        model: 'budget-conformance',
        timeoutMs: 10_000,
      });
    }

    const emit = defineTool({
      name: 'emit',
      description: 'Returns text of the asked length',
      inputSchema: z.object({ length: z.number().int().nonnegative() }),
      execute: async (args) => 'x'.repeat(args.length),
    });

    it('is well-formed', () => {
      expect(Number.isInteger(budget.maxTurns) && budget.maxTurns > 0, 'maxTurns is a positive integer').toBe(
        true,
      );
      for (const key of ['defaultResultSize', 'turnBudget', 'previewSize'] as const)
        expect(budget[key] > 0, `${key} is positive`).toBe(true);
      expect(budget.previewSize < budget.defaultResultSize, 'previewSize is below defaultResultSize').toBe(
        true,
      );
      for (const [tool, size] of Object.entries(budget.toolOverrides))
        expect(size >= 0, `toolOverrides.${tool} is not negative`).toBe(true);
      for (const key of ['maxTokens', 'maxCostUsd', 'wallClockMs', 'toolTimeoutMs'] as const) {
        const value = budget[key];
        if (value !== undefined) expect(value > 0, `${key} is positive when set`).toBe(true);
      }
      // read_file stays pinned whatever the budget says, or persist -> read -> persist loops.
      expect(resolveResultThreshold('read_file', { budget })).toBe(Number.POSITIVE_INFINITY);
    });

    itWhen(budget.maxTurns <= MAX_EXERCISED_TURNS)(
      'stops a model that never answers after exactly maxTurns turns',
      async () => {
        const client = await scripted({
          policy: () => ({ toolCalls: [{ name: 'emit', arguments: { length: 1 } }] }),
        });
        const result = await runAgent({ server: client, messages: prompt, tools: [emit], sandbox, budget });
        expect(result).toMatchObject({
          stopReason: 'max_turns',
          turnsUsed: budget.maxTurns,
          finishedNaturally: false,
        });
      },
      60_000,
    );

    itWhen(budget.maxTokens !== undefined)('stops once the rollout has used maxTokens', async () => {
      const perTurn = Math.max(1, Math.ceil((budget.maxTokens ?? 0) / 3));
      const client = await scripted({
        policy: () => ({
          toolCalls: [{ name: 'emit', arguments: { length: 1 } }],
          usage: { prompt_tokens: perTurn, completion_tokens: 0 },
        }),
      });
      const result = await runAgent({
        server: client,
        messages: prompt,
        tools: [emit],
        sandbox,
        budget: { ...budget, maxTurns: 1_000 },
      });
      expect(result.stopReason).toBe('token_budget');
      expect(result.usage.totalTokens).toBeGreaterThanOrEqual(budget.maxTokens ?? 0);
      expect(result.usage.totalTokens - perTurn).toBeLessThan(budget.maxTokens ?? 0);
    });

    itWhen(budget.wallClockMs !== undefined && budget.wallClockMs <= 5_000)(
      'stops at the wall-clock limit when the server hangs',
      async () => {
        const client = await scripted({ policy: () => ({ fault: 'hang' }) });
        const result = await runAgent({ server: client, messages: prompt, tools: [emit], sandbox, budget });
        expect(result).toMatchObject({ stopReason: 'wall_clock', finishedNaturally: false });
      },
      30_000,
    );

    itWhen(budget.defaultResultSize <= MAX_EXERCISED_CHARS)(
      'persists a result over defaultResultSize into the sandbox with a preview of at most previewSize',
      async () => {
        const size = budget.defaultResultSize;
        const client = await scripted({
          replies: [
            {
              toolCalls: [
                { id: 'fits', name: 'emit', arguments: { length: size } },
                { id: 'over', name: 'emit', arguments: { length: size + 1 } },
              ],
            },
            { content: 'done' },
          ],
        });
        const result = await runAgent({
          server: client,
          messages: prompt,
          tools: [emit],
          sandbox,
          // The per-turn total is another test's business here.
          budget: { ...budget, turnBudget: Number.POSITIVE_INFINITY, maxTurns: 2 },
        });
        const [fits, over] = result.messages.filter((message) => message.role === 'tool');
        expect(fits?.content).toBe('x'.repeat(size));
        expect(over?.content).toContain(PERSISTED_OUTPUT_TAG);
        const preview = /Preview \(first (\d+) chars\):/.exec(String(over?.content));
        expect(Number(preview?.[1])).toBeLessThanOrEqual(budget.previewSize);
        const path = /Full output saved to: (.+)/.exec(String(over?.content))?.[1] ?? '';
        expect(await readFile(path, 'utf8')).toBe('x'.repeat(size + 1));
      },
      60_000,
    );

    itWhen(budget.turnBudget <= MAX_EXERCISED_CHARS)(
      "keeps one turn's tool results within turnBudget by persisting the largest",
      async () => {
        // Three results each under the per-result threshold whose sum exceeds the turn budget.
        const each = Math.min(Math.ceil(budget.turnBudget * 0.6), budget.defaultResultSize);
        const calls = Math.ceil(budget.turnBudget / each) + 1;
        const client = await scripted({
          replies: [
            {
              toolCalls: Array.from({ length: calls }, (_, index) => ({
                id: `part_${index}`,
                name: 'emit',
                arguments: { length: each },
              })),
            },
            { content: 'done' },
          ],
        });
        const result = await runAgent({
          server: client,
          messages: prompt,
          tools: [emit],
          sandbox,
          budget: { ...budget, maxTurns: 2 },
        });
        const contents = result.messages
          .filter((message) => message.role === 'tool')
          .map((m) => String(m.content));
        expect(contents).toHaveLength(calls);
        expect(contents.reduce((sum, content) => sum + content.length, 0)).toBeLessThanOrEqual(
          budget.turnBudget,
        );
        expect(contents.some((content) => content.includes(PERSISTED_OUTPUT_TAG))).toBe(true);
      },
      60_000,
    );
  });
}
