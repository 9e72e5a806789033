// @shears/servers: inference servers for shears. Phase 1: OpenAI-compatible chat through the
// official SDK. Phase 2: managed token-in/token-out vLLM and SGLang servers that render chat
// templates with a real tokenizer and record exact tokens, masks and logprobs per rollout.
// A server manager routes over several endpoints.

export type {
  BackendSettings,
  GenerateBackend,
  GeneratedSequence,
  GenerateRequest,
  VllmApi,
} from './generate-backends.js';
export { createSglangBackend, createVllmBackend } from './generate-backends.js';
export type { HfTokenizer, HfTokenizerSettings, ToolArgumentsMode } from './hf-tokenizer.js';
export { createHfTokenizer } from './hf-tokenizer.js';
export type { IncrementalEncodeResult, IncrementalEncoder } from './incremental-encoder.js';
export { createIncrementalEncoder } from './incremental-encoder.js';
export type {
  ManagedServer,
  ManagedServerSettings,
  ManagedSession,
  SglangServerSettings,
  VllmServerSettings,
} from './managed-server.js';
export { createManagedServer, createSglangServer, createVllmServer } from './managed-server.js';
export type { OpenAICompatibleServerSettings } from './openai-compatible-server.js';
export { createOpenAICompatibleServer } from './openai-compatible-server.js';
export { default, default as plugin } from './plugin.js';
export type {
  EndpointLimits,
  EndpointStatus,
  ManagerEndpoint,
  ServerManager,
  ServerManagerSettings,
} from './server-manager.js';
export { createServerManager } from './server-manager.js';
