// @shears/core/test: conformance suites for every contract, the scripted OpenAI-compatible
// HTTP server, and fixture helpers. Import only from tests.
// The scripted servers and client, also available without vitest as @shears/core/scripted.

export type { BudgetConformanceOptions } from './budget-conformance.js';
export { describeBudgetConformance } from './budget-conformance.js';
export type { EnvConformanceOptions } from './env-conformance.js';
export { describeEnvConformance } from './env-conformance.js';
export type { FileToolSuiteHooks, FileToolsFactory } from './file-tool-suite.js';
export { describeFileToolSuite, fileToolRunner } from './file-tool-suite.js';
export type { JudgeConformanceFixture } from './judge-conformance.js';
export {
  describeGroupJudgeConformance,
  describeJudgeConformance,
  expectWellFormedVerdict,
} from './judge-conformance.js';
export type { ParserConformanceCases } from './parser-conformance.js';
export {
  describeParserConformance,
  expectChunkingInvariant,
  junkInputs,
  streamInChunks,
} from './parser-conformance.js';
export type { SandboxConformanceCase, SandboxConformanceOptions } from './sandbox-conformance.js';
export { describeSandboxConformance, SANDBOX_CONFORMANCE_CASES } from './sandbox-conformance.js';
export type {
  ScriptedCompletion,
  ScriptedGenerate,
  ScriptedGeneratedRecord,
  ScriptedGenerateFlavor,
  ScriptedGenerateOptions,
  ScriptedGeneratePolicy,
  ScriptedGenerateReply,
  ScriptedGenerateRequest,
} from './scripted-generate.js';
export { createScriptedGenerate, scriptedLogprob } from './scripted-generate.js';
export type {
  ScriptedChatRequest,
  ScriptedFault,
  ScriptedMessageReply,
  ScriptedPolicy,
  ScriptedPolicyContext,
  ScriptedReply,
  ScriptedRequestRecord,
  ScriptedRoute,
  ScriptedServer,
  ScriptedServerOptions,
  ScriptedToolCall,
} from './scripted-server.js';
export { createScriptedServer } from './scripted-server.js';
export type { ScriptedServerClientSettings } from './scripted-server-client.js';
export { createScriptedServerClient } from './scripted-server-client.js';
export { createSeededRandom } from './seeded-random.js';
export type { ServerConformanceFixture } from './server-conformance.js';
export { describeServerConformance } from './server-conformance.js';
export type { SinkConformanceFixture, SinkConformanceOptions } from './sink-conformance.js';
export { describeSinkConformance, sampleScoredGroup } from './sink-conformance.js';
export type { TempSandboxProvider, TempSandboxProviderOptions } from './temp-sandbox-provider.js';
export { createTempSandboxProvider } from './temp-sandbox-provider.js';
export type { TokenizerConformanceFixture } from './tokenizer-conformance.js';
export { describeTokenizerConformance } from './tokenizer-conformance.js';
export type { ToolConformanceOptions } from './tool-conformance.js';
export { describeToolConformance } from './tool-conformance.js';
