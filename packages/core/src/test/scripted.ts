// @shears/core/scripted: the scripted OpenAI-compatible (and vLLM/SGLang /generate) test server
// and its fetch client, without the conformance suites — so a program can run a scripted policy
// (the CLI's demo) without vitest installed. @shears/core/test re-exports the same things.

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
