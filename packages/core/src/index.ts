// @shears/core: the kernel. Contracts, registry, agent loop, budgets, toolsets, group runner,
// schemas and typed errors. Named exports only; no runtime dependency but zod (peer). Helpers
// the shears packages share but users do not need are in ./internal.ts (`@shears/core/internal`).

export type { AdvantageEstimator, GrpoOptions } from './advantages.js';
export {
  ADVANTAGE_ESTIMATORS,
  drGrpoAdvantages,
  grpoAdvantages,
  grpoEstimator,
  resolveAdvantageEstimator,
  rlooAdvantages,
} from './advantages.js';
export type { RunAgentOptions } from './agent-loop.js';
export { runAgent } from './agent-loop.js';
export type { ConcurrencyLimiter } from './concurrency-limiter.js';
export { createConcurrencyLimiter } from './concurrency-limiter.js';
export type { AgentResult, AgentStopReason, AgentTimings } from './contracts/agent-result.js';
export type { BudgetV1 } from './contracts/budget.js';
export type {
  AssistantMessage,
  ChatMessage,
  ChatRole,
  ContentPart,
  ImageUrlContentPart,
  TextContentPart,
  ToolCall,
  ToolSchema,
} from './contracts/chat.js';
export { messageText } from './contracts/chat.js';
export type {
  EnvItem,
  EnvV1,
  RewardContext,
  RewardResult,
  RolloutRunContext,
  RolloutView,
} from './contracts/env.js';
export type { GroupJudgeV1, JudgeSubject, JudgeV1, Verdict } from './contracts/judge.js';
export { verdictRecord } from './contracts/judge.js';
export type { Logger } from './contracts/logger.js';
export { silentLogger } from './contracts/logger.js';
export type {
  ParsedToolCall,
  ParseIssue,
  ParseOptions,
  ParseResult,
  RenderInput,
  ToolCallParserV1,
  ToolCallStreamV1,
} from './contracts/parser.js';
export type {
  ExecOptions,
  ExecResult,
  SandboxLimits,
  SandboxProviderV1,
  SandboxSpec,
  SandboxV1,
  SpawnedExit,
  SpawnedProcess,
  SpawnOptions,
} from './contracts/sandbox.js';
export type {
  ChatChoice,
  ChatClient,
  ChatRequest,
  ChatResponse,
  ServerSessionV1,
  ServerV1,
  TokenRecord,
  TokenSequence,
  ToolChoice,
  Usage,
} from './contracts/server.js';
export { isManagedServer } from './contracts/server.js';
export type {
  SinkCloseOptions,
  SinkOpenOptions,
  SinkWriteReceipt,
  TrajectorySinkV1,
} from './contracts/sink.js';
export type { ChatTemplateOptions, TokenizerV1 } from './contracts/tokenizer.js';
export type { ToolCallDecision, ToolCallRequest, ToolContext, ToolOutput, ToolV1 } from './contracts/tool.js';
export { defineTool } from './contracts/tool.js';
export type {
  EnvDefinition,
  EnvPack,
  EnvRewardContext,
  EnvRow,
  TaskSource,
  ToolDefinition,
} from './define-env.js';
export { defineEnv, tool } from './define-env.js';
export {
  AbortedError,
  ConfigError,
  describeError,
  EnvError,
  InvalidArgumentError,
  JsonParseError,
  JudgeError,
  NoSuchEntryError,
  SandboxError,
  ServerError,
  ShearsError,
  TimeoutError,
  throwIfAborted,
} from './errors.js';
export type { GroupEvent, RunGroupOptions } from './group-runner.js';
export { runGroup } from './group-runner.js';
export type { ParseJsonOptions } from './json.js';
export { parseJson, safeParseJson } from './json.js';
export type { JsonlSink, JsonlSinkSettings } from './jsonl-sink.js';
export { createJsonlSink, parseScoredGroups, readScoredGroups, safeParseScoredGroups } from './jsonl-sink.js';
export type { SettingsIssue } from './plugin-settings.js';
export { InvalidSettingsError, parsePluginSettings } from './plugin-settings.js';
export type {
  LoadPluginOptions,
  PluginCheckContext,
  PluginCheckResult,
  PluginContext,
  PluginEntry,
  PluginKind,
  PluginKinds,
  PluginManifest,
  Registry,
} from './registry.js';
export {
  createRegistry,
  definePlugin,
  definePluginEntry,
  isPlugin,
  PLUGIN_KINDS,
  resolvePluginUrl,
} from './registry.js';
export type { SafeResult } from './result.js';
export { err, ok } from './result.js';
export type { ProbeSandboxOptions } from './sandbox-probe.js';
export { probeSandboxProvider } from './sandbox-probe.js';
export {
  agentResultSchema,
  agentStopReasonSchema,
  agentTimingsSchema,
  tokenRecordSchema,
} from './schemas/agent-result.js';
export { chatMessageSchema, toolCallSchema } from './schemas/chat-message.js';
export type { GroupStats, ScoredGroupRecord } from './schemas/group-record.js';
export { groupStatsSchema, scoredGroupRecordSchema } from './schemas/group-record.js';
export type { ScoredData } from './schemas/scored-data.js';
export { SCORED_DATA_KEYS, scoredDataSchema } from './schemas/scored-data.js';
export type {
  RolloutOutcome,
  ToolErrorRecord,
  Trajectory,
  TrajectoryStep,
  TrajectoryToolCall,
} from './schemas/trajectory.js';
export {
  rolloutOutcomeSchema,
  tokenSequenceSchema,
  toolErrorRecordSchema,
  trajectorySchema,
  trajectoryStepSchema,
  trajectoryToolCallSchema,
  usageSchema,
} from './schemas/trajectory.js';
export type { VerdictRecord } from './schemas/verdict-record.js';
export { verdictRecordSchema } from './schemas/verdict-record.js';
export type { SelectToolsOptions, ToolsetDefinition, ToolsetDistribution } from './toolsets.js';
export {
  BUILTIN_DISTRIBUTIONS,
  mergeToolToolsets,
  resolveToolset,
  sampleToolsets,
  selectToolNames,
  selectTools,
} from './toolsets.js';
