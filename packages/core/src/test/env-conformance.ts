// Conformance suite for the Env contract: every env package runs it. Items are well-formed,
// messages and tools are valid, and one full group runs end to end against the scripted
// server (in temp-directory sandboxes unless the env needs another provider), every rollout
// ending with a typed outcome and the record validating.
import { describe, expect, it } from 'vitest';
import type { EnvItem, EnvV1 } from '../contracts/env.js';
import { silentLogger } from '../contracts/logger.js';
import type { SandboxProviderV1 } from '../contracts/sandbox.js';
import { runGroup } from '../group-runner.js';
import { scoredGroupRecordSchema } from '../schemas/group-record.js';
import { rolloutOutcomeSchema } from '../schemas/trajectory.js';
import { toolParametersSchema } from '../tool-schemas.js';
import { createScriptedServer, type ScriptedPolicy } from './scripted-server.js';
import { createScriptedServerClient } from './scripted-server-client.js';
import { createTempSandboxProvider } from './temp-sandbox-provider.js';

export interface EnvConformanceOptions<TItem extends EnvItem = EnvItem> {
  name?: string;
  /** A fresh env per test. */
  create: () => EnvV1<TItem> | Promise<EnvV1<TItem>>;
  /** Default: temp-directory sandboxes. */
  sandboxes?: SandboxProviderV1;
  /** The scripted model; default: answers "I don't know." at once. */
  policy?: ScriptedPolicy;
  groupSize?: number;
}

export function describeEnvConformance<TItem extends EnvItem>(options: EnvConformanceOptions<TItem>): void {
  const withEnv = async (body: (env: EnvV1<TItem>) => Promise<void>) => {
    const env = await options.create();
    try {
      await env.setup?.({ logger: silentLogger });
      await body(env);
    } finally {
      await env.close?.();
    }
  };

  describe(`EnvV1 conformance: ${options.name ?? 'env'}`, () => {
    it('declares specificationVersion v1 and an id', () =>
      withEnv(async (env) => {
        expect(env.specificationVersion).toBe('v1');
        expect(env.id.length).toBeGreaterThan(0);
      }));

    it('yields items with an id and a prompt, messages with a user turn, and valid tools', () =>
      withEnv(async (env) => {
        const item = await env.nextItem();
        expect(item).not.toBeNull();
        if (!item) return;
        expect(typeof item.id).toBe('string');
        expect(item.id.length).toBeGreaterThan(0);
        expect(typeof item.prompt).toBe('string');
        const messages = env.buildMessages(item);
        expect(messages.some((message) => message.role === 'user')).toBe(true);
        const tools = env.tools(item);
        const names = tools.map((tool) => tool.name);
        expect(new Set(names).size).toBe(names.length);
        for (const tool of tools) {
          expect(tool.specificationVersion).toBe('v1');
          expect(toolParametersSchema(tool).type).toBe('object');
        }
        const budget = env.budget?.(item);
        if (budget?.maxTurns !== undefined) expect(budget.maxTurns).toBeGreaterThan(0);
      }));

    it('runs a full group with a typed outcome per rollout and a valid record', () =>
      withEnv(async (env) => {
        const item = await env.nextItem();
        if (!item) throw new Error('the env yielded no item');
        const server = await createScriptedServer({
          policy: options.policy ?? (() => ({ content: "I don't know." })),
        });
        const provider = options.sandboxes ?? createTempSandboxProvider();
        try {
          const groupSize = options.groupSize ?? 2;
          const record = await runGroup({
            env,
            item,
            server: createScriptedServerClient({
              baseUrl: server.url,
              model: 'conformance',
              timeoutMs: 30_000,
            }),
            sandboxes: provider,
            groupSize,
            allEqualScores: 'keep',
          });
          expect(scoredGroupRecordSchema.safeParse(record).success).toBe(true);
          expect(record.rollouts).toHaveLength(groupSize);
          for (const rollout of record.rollouts) {
            expect(rolloutOutcomeSchema.options).toContain(rollout.outcome);
            expect(rollout.outcome, rollout.outcomeReason ?? '').not.toBe('infra_failure');
            // An env_error is the env's own reward throwing: a bug the suite must catch.
            expect(rollout.outcome, rollout.outcomeReason ?? '').not.toBe('env_error');
            if (rollout.reward !== null) expect(Number.isFinite(rollout.reward)).toBe(true);
          }
        } finally {
          await server.close();
          if (!options.sandboxes) await provider.close();
        }
      }));
  });
}
