// @shears/gateway: the agent gateway. OpenAI Chat Completions, OpenAI Responses and Anthropic
// Messages served per rollout in front of any shears server, recording each rollout's requests,
// its separate conversations (threads) and, behind a phase-2 server, their exact tokens.

export type { ApiErrorKind, GatewayApi } from './api-error.js';
export { GatewayApiError } from './api-error.js';
export type { Gateway, GatewaySession } from './gateway.js';
export { createGateway } from './gateway.js';
export type { GatewaySettings, OpenSessionOptions } from './gateway-options.js';
export { gatewaySettingsSchema, openSessionOptionsSchema } from './gateway-options.js';
export type {
  GatewayRecord,
  GatewayRequestRecord,
  GatewayRequestStatus,
  GatewayThreadRecord,
} from './gateway-record.js';
export {
  gatewayRecordSchema,
  gatewayRequestRecordSchema,
  gatewayThreadRecordSchema,
} from './gateway-record.js';
export type {
  HarnessEnv,
  HarnessEnvSettings,
  HarnessGatewayProbe,
  HarnessReach,
  HarnessRunSummary,
  HarnessTask,
} from './harness-env.js';
export {
  bundledHarnessTasks,
  createHarnessEnv,
  HarnessNoModelRequestError,
  harnessEnvSettingsSchema,
  harnessTaskSchema,
  loadHarnessTasks,
  pickMainThread,
} from './harness-env.js';
export type { HarnessApi, HarnessPreset, HarnessPresetMcp } from './harness-presets.js';
export { HARNESS_PRESETS } from './harness-presets.js';
export type { GatewaySessionTools, GatewayToolCallRecord } from './mcp-endpoint.js';
export { default, default as plugin } from './plugin.js';
export type { SocketReach, SocketReachSettings } from './socket-reach.js';
export { createSocketReach } from './socket-reach.js';
export type { ThreadTags } from './threads.js';
