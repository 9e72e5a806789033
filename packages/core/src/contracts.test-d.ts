// Type tests for the public contracts (checked by `tsc` in `pnpm typecheck`, not run): what a
// plugin author writes against must keep these shapes, and a change here is a breaking change.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { sleep } from './http/index.js';
import {
  type AdvantageEstimator,
  type AgentResult,
  definePlugin,
  defineTool,
  type EnvV1,
  type GroupJudgeV1,
  grpoAdvantages,
  type JudgeV1,
  type PluginManifest,
  type RewardResult,
  resolveAdvantageEstimator,
  runGroup,
  type SandboxProviderV1,
  type SandboxV1,
  type ScoredGroupRecord,
  type ServerV1,
  type ToolCallParserV1,
  type ToolContext,
  type ToolOutput,
  type ToolV1,
  type Verdict,
  type VerdictRecord,
  verdictRecord,
  type verdictRecordSchema,
} from './index.js';
import { runSandboxSetup } from './internal.js';

describe('contract versions', () => {
  it('every contract carries specificationVersion v1', () => {
    expectTypeOf<SandboxV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    expectTypeOf<SandboxProviderV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    expectTypeOf<ToolV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    expectTypeOf<EnvV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    expectTypeOf<JudgeV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    expectTypeOf<GroupJudgeV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    expectTypeOf<ServerV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    expectTypeOf<ToolCallParserV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    expectTypeOf<PluginManifest['specificationVersion']>().toEqualTypeOf<'v1'>();
  });
});

describe('tools', () => {
  it('defineTool infers the argument type from the zod schema', () => {
    const tool = defineTool({
      name: 'echo',
      description: 'Echo',
      inputSchema: z.object({ text: z.string(), times: z.number().optional() }),
      async execute(args) {
        expectTypeOf(args).toEqualTypeOf<{ text: string; times?: number | undefined }>();
        return args.text;
      },
    });
    expectTypeOf(tool).toExtend<ToolV1<{ text: string; times?: number | undefined }>>();
    expectTypeOf(tool.execute).parameter(1).toEqualTypeOf<ToolContext>();
    expectTypeOf(tool.execute).returns.toEqualTypeOf<Promise<ToolOutput | string>>();
  });
});

describe('judges and verdicts', () => {
  it('a verdict is scored or failed, never a bare number', () => {
    expectTypeOf<Verdict['status']>().toEqualTypeOf<'scored' | 'failed'>();
    expectTypeOf<Extract<Verdict, { status: 'failed' }>>().toHaveProperty('reason').toEqualTypeOf<string>();
    expectTypeOf<JudgeV1['judge']>().returns.toEqualTypeOf<Promise<Verdict>>();
    expectTypeOf<GroupJudgeV1['judgeGroup']>().returns.toEqualTypeOf<Promise<Verdict[]>>();
  });

  it('the verdict record is the schema type and what verdictRecord builds', () => {
    expectTypeOf<VerdictRecord>().toEqualTypeOf<z.infer<typeof verdictRecordSchema>>();
    expectTypeOf(verdictRecord).returns.toEqualTypeOf<VerdictRecord>();
    expectTypeOf<Extract<VerdictRecord, { status: 'scored' }>['score']>().toEqualTypeOf<number>();
  });
});

describe('envs, groups and advantages', () => {
  it('an env rewards a rollout with a RewardResult; runGroup returns a ScoredGroupRecord', () => {
    expectTypeOf<ReturnType<EnvV1['computeReward']>>().toEqualTypeOf<Promise<RewardResult>>();
    expectTypeOf(runGroup).returns.toEqualTypeOf<Promise<ScoredGroupRecord>>();
    expectTypeOf<ScoredGroupRecord['advantages']>().toEqualTypeOf<(number | null)[]>();
    expectTypeOf<AgentResult['finishedNaturally']>().toEqualTypeOf<boolean>();
  });

  it('an advantage estimator maps scores to advantages', () => {
    expectTypeOf<AdvantageEstimator['compute']>().toEqualTypeOf<(scores: readonly number[]) => number[]>();
    expectTypeOf(resolveAdvantageEstimator).returns.toEqualTypeOf<AdvantageEstimator>();
    expectTypeOf(grpoAdvantages).parameter(0).toEqualTypeOf<readonly number[]>();
  });
});

describe('helpers plugins use', () => {
  it('sleep, runSandboxSetup and definePlugin', () => {
    expectTypeOf(sleep).toEqualTypeOf<(ms: number, signal?: AbortSignal) => Promise<void>>();
    expectTypeOf(runSandboxSetup).parameter(0).toEqualTypeOf<SandboxV1>();
    expectTypeOf(definePlugin).returns.toEqualTypeOf<PluginManifest>();
  });
});
